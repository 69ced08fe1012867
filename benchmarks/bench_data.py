"""Benchmark: private count/sum/mean by 50 groups over a 10^7-row Parquet table vs plain DuckDB.

Usage: PYTHONPATH=src python benchmarks/bench_data.py [--rows N] [--repeats R] [--spark]

Generates a synthetic table in a temporary directory (not kept), then times, each in a fresh
subprocess (so that peak RSS is per task): the plain DuckDB aggregate, the same with the values
clamped, and the snapdp release (aggregate + noise + ledger commit), without and with a
privacy-unit column (contribution bounding by a window function); with --spark also plain Spark
SQL and the snapdp release on Spark local[2] (session start-up not timed). Prints Markdown.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GROUPS = 50

TASKS = {
    "plain DuckDB: count, sum, avg by g": """
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")
rows = con.execute("SELECT g, COUNT(*), SUM(x), AVG(x) "
                   "FROM read_parquet('{path}') GROUP BY g").fetchall()
assert len(rows) == {groups}
""",
    "plain DuckDB, values clamped": """
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")
rows = con.execute("SELECT g, COUNT(*), SUM(LEAST(GREATEST(x, 0), 1000)), "
                   "AVG(LEAST(GREATEST(x, 0), 1000)) "
                   "FROM read_parquet('{path}') GROUP BY g").fetchall()
assert len(rows) == {groups}
""",
    "plain DuckDB, clamped, 1 random row per pid": """
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")
rows = con.execute("SELECT g, COUNT(*), SUM(LEAST(GREATEST(x, 0), 1000)), "
                   "AVG(LEAST(GREATEST(x, 0), 1000)) FROM (SELECT * FROM (SELECT *, random() AS r "
                   "FROM read_parquet('{path}')) QUALIFY ROW_NUMBER() OVER "
                   "(PARTITION BY pid ORDER BY r) <= 1) "
                   "GROUP BY g").fetchall()
""",
    "snapdp release: count, sum, mean by g": """
t = PrivateTable('{path}', max_rows={rows}, total_epsilon=1.0)
res = t.release([Count(), Sum('x', 0, 1000), Mean('x', 0, 1000)], 1.0, by='g',
                keys=[str(i) for i in range({groups})])
assert len(res[0].values) == {groups}
""",
    "snapdp release, privacy unit pid (k = 1)": """
t = PrivateTable('{path}', max_rows={rows}, total_epsilon=1.0, privacy_unit='pid')
res = t.release([Count(), Sum('x', 0, 1000), Mean('x', 0, 1000)], 1.0, by='g',
                keys=[str(i) for i in range({groups})])
assert len(res[0].values) == {groups}
""",
}

SPARK_SETUP = """
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "8").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
spark.range(1000).count()  # warm-up, not timed
"""

SPARK_TASKS = {
    "plain Spark SQL (local[2]), clamped": """
from pyspark.sql import functions as sf
x = sf.least(sf.greatest(sf.col("x"), sf.lit(0.0)), sf.lit(1000.0))
rows = (spark.read.parquet('{path}').groupBy("g")
        .agg(sf.count(sf.lit(1)), sf.sum(x), sf.avg(x)).collect())
assert len(rows) == {groups}
""",
    "snapdp release on Spark (local[2])": """
from snapdp.data.spark_engine import SparkEngine
t = PrivateTable(engine=SparkEngine('{path}', spark=spark), max_rows={rows}, total_epsilon=1.0)
res = t.release([Count(), Sum('x', 0, 1000), Mean('x', 0, 1000)], 1.0, by='g',
                keys=[str(i) for i in range({groups})])
assert len(res[0].values) == {groups}
""",
}

_RUNNER = """
import resource, time
import duckdb
from snapdp.data import Count, Mean, PrivateTable, Sum
{setup}
t0 = time.perf_counter()
{body}
wall = time.perf_counter() - t0
print("RESULT", wall, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def make_table(path: Path, rows: int) -> None:
    """A synthetic table: g (50 groups), x (lognormal, some beyond the bounds), pid."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    chunk = 1_000_000
    schema = pa.schema([("pid", pa.int64()), ("g", pa.int64()), ("x", pa.float64())])
    with pq.ParquetWriter(path, schema) as writer:
        for start in range(0, rows, chunk):
            n = min(chunk, rows - start)
            writer.write_table(
                pa.table(
                    {
                        "pid": np.arange(start, start + n, dtype=np.int64) // 2,
                        "g": rng.integers(0, GROUPS, n),
                        "x": rng.lognormal(5, 1.2, n),
                    },
                    schema=schema,
                )
            )


def run(body: str, setup: str = "") -> tuple[float, float]:
    """(wall seconds, peak RSS in MiB) of ``body`` in a fresh interpreter, imports excluded."""
    out = (
        subprocess.run(
            [sys.executable, "-c", _RUNNER.format(body=body, setup=setup)],
            check=True,
            capture_output=True,
            text=True,
        )
        .stdout.split("RESULT")[-1]
        .split()
    )
    return float(out[0]), int(out[1]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--spark", action="store_true", help="also time Spark local[2]")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.parquet"
        t0 = time.perf_counter()
        make_table(path, args.rows)
        print(f"generated {args.rows:,} rows in {time.perf_counter() - t0:.1f} s "
              f"({path.stat().st_size / 2**20:.0f} MiB Parquet)")  # fmt: skip
        results = {}
        tasks = [(name, body, "") for name, body in TASKS.items()]
        if args.spark:
            tasks += [(name, body, SPARK_SETUP) for name, body in SPARK_TASKS.items()]
        for name, template, setup in tasks:
            body = template.format(path=path, rows=args.rows, groups=GROUPS)
            runs = [run(body, setup) for _ in range(args.repeats)]
            walls = sorted(w for w, _ in runs)
            results[name] = (walls[len(walls) // 2], max(m for _, m in runs))
        base = results["plain DuckDB, values clamped"][0]
        print("| task | wall time (median) | × clamped plain | peak RSS |")
        print("| --- | ---: | ---: | ---: |")
        for name, (wall, mem) in results.items():
            print(f"| {name} | {wall:.2f} s | {wall / base:.2f} | {mem:.0f} MiB |")
        print(json.dumps({k: {"wall_s": w, "peak_mib": m} for k, (w, m) in results.items()}))


if __name__ == "__main__":
    main()
