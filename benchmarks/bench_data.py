"""Benchmark: snapdp's DuckDB and Spark engines vs the plain engines, with and without a unit.

Usage: PYTHONPATH=src python benchmarks/bench_data.py [--rows N] [--units U] [--repeats R]
       [--memory-limit 700MB] [--spark-memory 4g] [--tasks a,b,...]

Writes a synthetic Parquet table (N rows; g: 50 groups; x: values in [0, 1000) with 2 decimals;
pid: U units, rows spread evenly) to a temporary directory (deleted afterwards), then runs each
task in a fresh subprocess, which reports its own wall time (the query only: imports, the
connection and the Spark session's start excluded). Peak RSS: for DuckDB tasks the process's
``getrusage(RUSAGE_SELF).ru_maxrss``; for Spark tasks the largest sum of the resident sets of the
whole process tree (Python driver, JVM, Python workers), sampled every 50 ms by this script.
Prints a Markdown table (docs/performance.md, "Data releases").

Tasks:
- ``plain``: plain DuckDB, values clamped, count and sum by g.
- ``engine``: snapdp's DuckDBEngine, count and sum of quanta by 50 declared keys, no unit.
- ``plain-unit``: plain DuckDB doing the same bounding as the engine (k = 1: per pid the row of
  lowest keyed-MD5 rank by ``arg_min``, then the group aggregate) - the physical floor of the job.
- ``plain-unit-hash``: the same with DuckDB's own 64-bit ``hash()`` as the rank (cheaper than MD5,
  not the contract's rank; for reference).
- ``engine-unit``: DuckDBEngine with privacy unit pid, k = 1, ``memory_limit`` and a temporary
  directory (spilling allowed).
- ``engine-unit-nolimit``: the same with DuckDB's default memory limit (80% of RAM).
- ``spark-plain``: plain Spark local[2], values clamped, count and sum by g.
- ``spark-engine``: snapdp's SparkEngine, the same plan as ``engine``.
- ``spark-plain-unit``: plain Spark doing the same bounding (per pid the row of lowest keyed-MD5
  rank by ``min_by`` of the row packed into a long, then the group aggregate).
- ``spark-plain-unit-window``: plain Spark keeping one random row per pid by a ``row_number``
  window (the textbook way; not the contract's rank; for reference).
- ``spark-engine-unit``: SparkEngine with privacy unit pid, k = 1.
Spark tasks run in one local[2] session per task with ``spark.driver.memory`` = --spark-memory
(Spark's other settings at their defaults: 200 shuffle partitions, adaptive execution); each query
is run --spark-runs times in that session and the fastest is reported (the first run warms the
JVM). Their peak RSS includes the JVM's heap, which grows towards ``spark.driver.memory`` as the
collector sees fit: it is what the job was given, not what it needed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GROUPS = 50
HASH_KEY = "0123456789abcdef0123456789abcdef"

_PRELUDE = """
import json, resource, sys, time
import duckdb
path, mem, tmp = sys.argv[1], sys.argv[2], sys.argv[3]
"""

_PLAIN = """
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")
t = time.perf_counter()
rows = con.execute(QUERY.format(path=path)).fetchall()
seconds = time.perf_counter() - t
assert len(rows) == 50, len(rows)
"""

_ENGINE = """
from fractions import Fraction
from snapdp.data.engines.base import AggregatePlan, ValueColumn
from snapdp.data.engines.duckdb import DuckDBEngine
from snapdp.data.schema import Column, ContributionBounds
g = Column("g", "integer", keys=tuple(range(50)))
x = Column("x", "decimal", lower=Fraction(0), upper=Fraction(1000))
unit = Column("pid", "integer") if UNIT else None
bounds = ContributionBounds(max_rows_per_unit=1) if UNIT else ContributionBounds()
plan = AggregatePlan((g,), (ValueColumn(x, 2, 0, 100000),), unit, "drop", bounds, HASH_KEY)
engine = DuckDBEngine(path, memory_limit=None if mem == "-" else mem,
                      temp_directory=None if mem == "-" else tmp)
t = time.perf_counter()
agg = engine.aggregate(plan)
seconds = time.perf_counter() - t
assert len(agg.rows) == 50
"""

_RANK = (
    "CAST('0x' || left(md5(concat('{hk}|r|', pid, '|', g, '|', "
    "CAST(round_even(least(greatest(x, 0), 1000) * 100, 0) AS BIGINT))), 15) AS BIGINT)"
).replace("{hk}", HASH_KEY)

_SPARK = """
from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as sf
spark = (
    SparkSession.builder.master("local[2]")
    .config("spark.ui.enabled", "false")
    .config("spark.driver.memory", SPARK_MEMORY)
    .config("spark.local.dir", tmp)
    .getOrCreate()
)
spark.sparkContext.setLogLevel("ERROR")
df = spark.read.parquet(path)
clamped = sf.least(sf.greatest(sf.col("x"), sf.lit(0.0)), sf.lit(1000.0))
quanta = sf.rint(clamped * sf.lit(100.0)).cast("bigint")
rank = sf.conv(sf.substring(sf.md5(sf.concat_ws("|", sf.lit(HASH_KEY), sf.lit("r"),
    sf.col("pid").cast("string"), sf.col("g").cast("string"), quanta.cast("string"))), 1, 15),
    16, 10).cast("bigint")
seconds = float("inf")
for _ in range(SPARK_RUNS):
    t = time.perf_counter()
    rows = job()
    seconds = min(seconds, time.perf_counter() - t)
    assert len(rows) == 50, len(rows)
spark.stop()
"""

_SPARK_ENGINE = """
from fractions import Fraction
from snapdp.data.engines.base import AggregatePlan, ValueColumn
from snapdp.data.engines.spark import SparkEngine
from snapdp.data.schema import Column, ContributionBounds
def job():
    g = Column("g", "integer", keys=tuple(range(50)))
    x = Column("x", "decimal", lower=Fraction(0), upper=Fraction(1000))
    unit = Column("pid", "integer") if UNIT else None
    bounds = ContributionBounds(max_rows_per_unit=1) if UNIT else ContributionBounds()
    plan = AggregatePlan((g,), (ValueColumn(x, 2, 0, 100000),), unit, "drop", bounds, HASH_KEY)
    agg = SparkEngine(df, spark=spark).aggregate(plan)
    return [r for r in agg.rows if r]
"""

TASKS: dict[str, tuple[str, str]] = {
    "plain": (
        "plain DuckDB, clamped: count, sum by g",
        'QUERY = "SELECT g, COUNT(*), SUM(LEAST(GREATEST(x, 0), 1000)) '
        "FROM read_parquet('{path}') GROUP BY g\"" + _PLAIN,
    ),
    "engine": ("**snapdp DuckDBEngine, no unit**", "UNIT = False" + _ENGINE),
    "plain-unit": (
        "plain DuckDB, same bounding (k = 1, MD5 rank by arg_min), clamped",
        'QUERY = "SELECT p // 100001, COUNT(*), SUM(p % 100001) FROM (SELECT pid, '
        "arg_min(g * 100001 + CAST(round_even(LEAST(GREATEST(x, 0), 1000) * 100, 0) AS BIGINT), "
        + _RANK
        + ") AS p FROM read_parquet('{path}') GROUP BY pid) GROUP BY 1\""
        + _PLAIN,
    ),
    "plain-unit-hash": (
        "plain DuckDB, k = 1 by arg_min of DuckDB's hash() (not the contract's rank)",
        'QUERY = "SELECT p // 100001, COUNT(*), SUM(p % 100001) FROM (SELECT pid, '
        "arg_min(g * 100001 + CAST(round_even(LEAST(GREATEST(x, 0), 1000) * 100, 0) AS BIGINT), "
        "hash(pid, g, x, 12345)) AS p FROM read_parquet('{path}') GROUP BY pid) GROUP BY 1\""
        + _PLAIN,
    ),
    "engine-unit": (
        "**snapdp DuckDBEngine, unit pid, k = 1, memory limit**",
        "UNIT = True" + _ENGINE,
    ),
    "engine-unit-nolimit": (
        "snapdp DuckDBEngine, unit pid, k = 1, DuckDB's default memory limit",
        "UNIT = True" + _ENGINE,
    ),
    "spark-plain": (
        "plain Spark local[2], clamped: count, sum by g",
        "def job():\n    return df.groupBy('g').agg(sf.count(sf.lit(1)), sf.sum(clamped)).collect()"
        + _SPARK,
    ),
    "spark-engine": ("**snapdp SparkEngine, no unit**", "UNIT = False" + _SPARK_ENGINE + _SPARK),
    "spark-plain-unit": (
        "plain Spark, same bounding (k = 1, MD5 rank by min_by), clamped",
        "def job():\n"
        "    d = df.withColumn('q', quanta).withColumn('r', rank)\n"
        "    kept = d.groupBy('pid').agg(sf.min_by(sf.col('g') * 100001 + sf.col('q'), 'r')"
        ".alias('t'))\n"
        "    cell = sf.expr('t div 100001')\n"
        "    return kept.groupBy(cell).agg(sf.count(sf.lit(1)), sf.sum(sf.col('t') % 100001))"
        ".collect()" + _SPARK,
    ),
    "spark-plain-unit-window": (
        "plain Spark, 1 random row per pid by a window (not the contract's rank), clamped",
        "def job():\n"
        "    w = Window.partitionBy('pid').orderBy(sf.rand())\n"
        "    kept = df.withColumn('_n', sf.row_number().over(w)).where('_n <= 1')\n"
        "    return kept.groupBy('g').agg(sf.count(sf.lit(1)), sf.sum(clamped)).collect()" + _SPARK,
    ),
    "spark-engine-unit": (
        "**snapdp SparkEngine, unit pid, k = 1**",
        "UNIT = True" + _SPARK_ENGINE + _SPARK,
    ),
}

_EPILOGUE = """
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": seconds, "rss_mib": rss}))
"""


def generate(path: Path, rows: int, units: int) -> None:
    """A synthetic table: row i has g = i mod 50, x = a hash of i in [0, 1000) with 2 decimals,
    pid = (i · 7919) mod units (each unit gets rows/units rows, scattered)."""
    code = (
        "import duckdb, sys\n"
        "con = duckdb.connect()\n"
        'con.execute("SET preserve_insertion_order = false")\n'
        'con.execute(f"COPY (SELECT (i % 50)::BIGINT AS g, (hash(i) % 100000)::DOUBLE / 100 AS x, '
        "((i * 7919) % {sys.argv[3]})::BIGINT AS pid FROM range({sys.argv[2]}) t(i)) "
        "TO '{sys.argv[1]}' (FORMAT parquet)\")\n"
    )
    subprocess.run([sys.executable, "-c", code, str(path), str(rows), str(units)], check=True)


def _tree_rss_mib(root: int) -> float:
    """The summed resident set of ``root`` and all its descendants (from /proc), in MiB."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        parents.setdefault(ppid, []).append(int(entry))
    total, todo = 0, [root]
    page = os.sysconf("SC_PAGE_SIZE")
    while todo:
        pid = todo.pop()
        todo.extend(parents.get(pid, []))
        try:
            with open(f"/proc/{pid}/statm") as fh:
                total += int(fh.read().split()[1]) * page
        except (OSError, IndexError, ValueError):
            continue
    return total / 2**20


def run_task(
    name: str, path: Path, memory_limit: str, tmp: Path, spark_memory: str, spark_runs: int
) -> dict[str, float]:
    _, body = TASKS[name]
    header = (
        f"HASH_KEY = {HASH_KEY!r}\nSPARK_MEMORY = {spark_memory!r}\nSPARK_RUNS = {spark_runs}\n"
    )
    code = _PRELUDE + header + body + _EPILOGUE
    mem = "-" if name == "engine-unit-nolimit" or not name.startswith("engine") else memory_limit
    if name == "engine":
        mem = "-"
    spark = name.startswith("spark")
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", code, str(path), mem, str(tmp)],
            stdout=out,
            stderr=err,
            text=True,
        )
        peak = 0.0
        while proc.poll() is None:
            if spark:  # DuckDB tasks report their own exact peak
                peak = max(peak, _tree_rss_mib(proc.pid))
            time.sleep(0.05)
        if proc.returncode != 0:
            err.seek(0)
            tail = "".join(err.read().splitlines(keepends=True)[-20:])
            raise SystemExit(f"task {name} failed with exit code {proc.returncode}:\n{tail}")
        out.seek(0)
        result: dict[str, float] = json.loads(out.read().strip().splitlines()[-1])
    if spark:
        result["rss_mib"] = peak
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--units", type=int, default=5_000_000)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--memory-limit", default="700MB")
    parser.add_argument("--spark-memory", default="4g")
    parser.add_argument("--spark-runs", type=int, default=2)
    parser.add_argument("--tasks", default=",".join(TASKS))
    args = parser.parse_args()
    names = [t for t in args.tasks.split(",") if t]
    with tempfile.TemporaryDirectory(prefix="snapdp-bench-") as d:
        path = Path(d) / "data.parquet"
        generate(path, args.rows, args.units)
        spill = Path(d) / "spill"
        spill.mkdir()
        results: dict[str, tuple[float, float]] = {}
        for name in names:
            runs = [
                run_task(name, path, args.memory_limit, spill, args.spark_memory, args.spark_runs)
                for _ in range(args.repeats)
            ]
            results[name] = (
                statistics.median(r["seconds"] for r in runs),
                max(r["rss_mib"] for r in runs),
            )
            print(
                f"# {name}: {results[name][0]:.2f} s, {results[name][1]:.0f} MiB", file=sys.stderr
            )
    print(
        f"{args.rows:,} rows, {args.units:,} units, DuckDB memory limit {args.memory_limit}, "
        f"spark.driver.memory {args.spark_memory}\n"
    )
    print("| task | wall time | × its plain baseline | peak RSS |")
    print("| --- | ---: | ---: | ---: |")
    for name in names:
        seconds, rss = results[name]
        base = "plain-unit" if "unit" in name else "plain"
        if name.startswith("spark"):
            base = "spark-" + base
        ratio = f"{seconds / results[base][0]:.2f}" if base in results else "-"
        print(f"| {TASKS[name][0]} | {seconds:.2f} s | {ratio} | {rss:.0f} MiB |")


if __name__ == "__main__":
    main()
