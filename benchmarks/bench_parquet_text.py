"""DuckDB over Parquet with a text column: native reader (before) against the Arrow-bytes read
that makes a cell that is not UTF-8 null (after; docs/data.md, "Reading the data").

Writes a Parquet file of N rows (g: text, 50 values; x: a double in [0, 1000); pid: an integer
unit, N/4 values) and times ``DuckDBEngine.aggregate`` for a count and Σ x grouped by g (reads the
text column: the Arrow path) and for Σ x alone (no text column: the native reader either way),
each in a fresh process, alternating the two code bases, median of the repeats.

    PYTHONPATH=src python3 benchmarks/bench_parquet_text.py --base OLD/src [--rows 5000000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

_CHILD = r"""
import json, resource, sys, time
from fractions import Fraction
from snapdp.data.engines.base import AggregatePlan, ValueColumn
from snapdp.data.engines.duckdb.engine import DuckDBEngine
from snapdp.data.model.schema import Column
keys = tuple(f"group{i:02d}" for i in range(50))
x = ValueColumn(Column("x", "decimal", lower=Fraction(0), upper=Fraction(1000)), 2, 0, 100000)
plans = {
    "count and sum x by text g": AggregatePlan(
        groupings=(Column("g", "text", keys=keys),), values=(x,)
    ),
    "sum x (no text column)": AggregatePlan(values=(x,)),
}
engine = DuckDBEngine(sys.argv[1])
plan = plans[sys.argv[2]]
engine.aggregate(plan)
t = time.perf_counter()
engine.aggregate(plan)
seconds = time.perf_counter() - t
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps([seconds, rss]))
"""

PLANS = ("count and sum x by text g", "sum x (no text column)")


def _write(path: Path, rows: int) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(1)
    g = np.array([f"group{i:02d}" for i in range(50)])[rng.integers(0, 50, rows)]
    table = pa.table(
        {
            "g": pa.array(g, pa.string()),
            "x": np.round(rng.uniform(0, 1000, rows), 2),
            "pid": rng.integers(0, max(1, rows // 4), rows),
        }
    )
    pq.write_table(table, path, row_group_size=1 << 20)


def _run(src: str, path: Path, plan: str) -> tuple[float, float]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), plan],
        env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    seconds, rss = json.loads(out.stdout.strip().splitlines()[-1])
    return float(seconds), float(rss)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", required=True, help="the src folder of the code to compare")
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    here = str(Path(__file__).resolve().parents[1] / "src")
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "data.parquet"
        _write(path, args.rows)
        size = path.stat().st_size / 2**20
        print(f"| plan ({args.rows:,} rows, {size:.0f} MiB) | before | after | × before | "
              "peak RSS before / after |")  # fmt: skip
        print("| --- | ---: | ---: | ---: | ---: |")
        for plan in PLANS:
            runs: dict[str, list[tuple[float, float]]] = {"before": [], "after": []}
            for _ in range(args.repeats):
                runs["before"].append(_run(args.base, path, plan))
                runs["after"].append(_run(here, path, plan))
            b = statistics.median(s for s, _ in runs["before"])
            a = statistics.median(s for s, _ in runs["after"])
            rb = max(r for _, r in runs["before"])
            ra = max(r for _, r in runs["after"])
            print(f"| {plan} | {b:.2f} s | {a:.2f} s | {a / b:.2f} | {rb:.0f} / {ra:.0f} MiB |")


if __name__ == "__main__":
    main()
