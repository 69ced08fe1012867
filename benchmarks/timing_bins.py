"""Timing differential for the bin search (issue 30 item 3; docs/data.md, "Run time").

Two neighbouring-in-spirit datasets differ only in where one privacy unit's many rows lie in the
declared range: all at the top (D_top) or all at the bottom (D_bottom). Releases of a tree
quantile and an exponential quantile (their leaf / grid-cell index is a bin search over ~1,000
edges) and a count grouped by bins are timed on both, the two classes interleaved in random
order, ``--reps`` times each. Verdict: the medians agree within 10% (``same``) or not
(``DIFFER``). Before the fix DuckDB found a bin with a linear CASE chain, so rows at the top
took ~n comparisons and rows at the bottom one.

Usage: PYTHONPATH=src python benchmarks/timing_bins.py [--rows 20000] [--unit-rows 5000]
       [--reps 15] [--spark]
Not a CI test: timings are machine-dependent and never asserted (the tests compare the
generated expressions instead: tests/unit/data/engines/test_bins_timing*.py).
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import time
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from snapdp.data import Column, ContributionBounds, Ledger, PrivateTable, Query, Schema

LOWER, UPPER = 0, 1000
QUERIES = {
    "tree quantile": Query("quantiles", "v", quantiles=(Fraction(1, 2),)),
    "exponential quantile": Query(
        "quantiles", "v", quantiles=(Fraction(1, 2),), method="exponential"
    ),
    "count by bins": Query("count", by=("b",)),
}


def _frame(rows: int, unit_rows: int, at: int, seed: int) -> pd.DataFrame:
    """``rows`` rows of distinct people, values uniform in the range, plus one person with
    ``unit_rows`` rows all at value ``at`` (in both the quantile column and the binned one)."""
    rng = np.random.default_rng(seed)
    values = rng.integers(LOWER, UPPER + 1, rows)
    pid = [f"p{i}" for i in range(rows)] + ["target"] * unit_rows
    v = np.concatenate([values, np.full(unit_rows, at)]).astype(np.int64)
    return pd.DataFrame({"pid": pid, "v": v, "b": v})


def _schema() -> Schema:
    edges = tuple(Fraction(e) for e in range(LOWER, UPPER + 2))  # 1,001 bins of width 1
    return Schema(
        (
            Column("v", "integer", Fraction(LOWER), Fraction(UPPER)),
            Column("b", "integer", bins=edges),
        ),
        privacy_unit="pid",
        bounds=ContributionBounds(max_rows_per_unit=1),
    )


def _engine(frame: pd.DataFrame, spark: Any) -> Any:
    if spark is not None:
        from snapdp.data.engines.spark.engine import SparkEngine

        return SparkEngine(frame, spark=spark)
    from snapdp.data.engines.duckdb.engine import DuckDBEngine

    return DuckDBEngine(frame, threads=1)


def _time(frame: pd.DataFrame, query: Query, spark: Any) -> float:
    table = PrivateTable(
        schema=_schema(),
        engine=_engine(frame, spark),
        ledger=Ledger(None, 10**6),
        rng=np.random.default_rng(0),
    )
    t0 = time.perf_counter()
    table.release([query], Fraction(1))
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--unit-rows", type=int, default=5_000)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--spark", action="store_true", help="the Spark engine (local[2])")
    args = ap.parse_args()
    spark = None
    if args.spark:
        from pyspark.sql import SparkSession

        spark = (
            SparkSession.builder.master("local[2]")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
    frames = {
        "top": _frame(args.rows, args.unit_rows, UPPER, 1),
        "bottom": _frame(args.rows, args.unit_rows, LOWER, 1),
    }
    print(
        f"engine={'spark' if spark else 'duckdb'} rows={args.rows} unit_rows={args.unit_rows} "
        f"reps={args.reps} machine={platform.node()} {platform.machine()} "
        f"cpus={os.cpu_count()} load={os.getloadavg()[0]:.2f}"
    )
    order = random.Random(7)
    verdicts = []
    for name, query in QUERIES.items():
        _time(frames["top"], query, spark)  # warm-up
        times: dict[str, list[float]] = {"top": [], "bottom": []}
        for _ in range(args.reps):
            classes = ["top", "bottom"]
            order.shuffle(classes)
            for c in classes:
                times[c].append(_time(frames[c], query, spark))
        top, bottom = statistics.median(times["top"]), statistics.median(times["bottom"])
        ratio = top / bottom
        same = abs(ratio - 1) <= 0.10
        verdicts.append(same)
        print(
            f"{name:>22}: median top {top:.3f} s, bottom {bottom:.3f} s, "
            f"top/bottom {ratio:.3f} -> {'same (within 10%)' if same else 'DIFFER'}"
        )
    print(f"load at end={os.getloadavg()[0]:.2f}")
    print("verdict:", "no timing difference beyond 10%" if all(verdicts) else "TIMING DIFFERS")


if __name__ == "__main__":
    main()
