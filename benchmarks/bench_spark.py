"""Benchmark: the Spark engine (local[2]) vs the plain Spark aggregate, 10^7 rows by 50 groups.

Usage: PYTHONPATH=src python benchmarks/bench_spark.py [--rows N] [--units U] [--repeats R]

Generates a synthetic Parquet table (group g in 0..49, value x, privacy unit pid with U units) in
a temporary directory (not kept), starts one local[2] session (start-up not timed), then times
the best of R runs of: the plain Spark aggregate (count and clamped sum by g), the same after
keeping one random row per pid (a window), and the snapdp Spark engine's exact aggregates
(``SparkEngine.aggregate``: gated casts, key matching, quanta, exact DECIMAL sums) without a unit
and with a unit (k = 1, keyed-hash ranks). Prints Markdown for docs/performance.md ("## Spark").
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

GROUPS = 50


def _table(path: Path, rows: int, units: int) -> None:
    rng = np.random.default_rng(1)  # synthetic data only: not a privacy-relevant draw
    table = pa.table(
        {
            "g": rng.integers(0, GROUPS, rows),
            "x": rng.uniform(-100, 1100, rows),
            "pid": rng.integers(0, units, rows),
        }
    )
    pq.write_table(table, path, row_group_size=1 << 20)


def _best(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10**7)
    parser.add_argument("--units", type=int, default=None, help="default: rows / 4")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    units = args.units or max(1, args.rows // 4)

    from pyspark.sql import SparkSession, Window
    from pyspark.sql import functions as sf

    from snapdp.data.engines.base import AggregatePlan, ValueColumn
    from snapdp.data.engines.spark import SparkEngine
    from snapdp.data.schema import Column, ContributionBounds

    session = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "4g")
        .config("spark.sql.shuffle.partitions", "8")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.parquet"
        _table(path, args.rows, units)
        df = session.read.parquet(str(path))
        clamped = sf.least(sf.greatest(sf.col("x"), sf.lit(0.0)), sf.lit(1000.0))
        plain_exprs = [sf.count(sf.lit(1)), sf.sum(clamped)]

        def plain() -> Any:
            return df.groupBy("g").agg(*plain_exprs).collect()

        def plain_unit() -> Any:
            w = Window.partitionBy("pid").orderBy(sf.rand())
            kept = df.withColumn("_n", sf.row_number().over(w)).where("_n <= 1")
            return kept.groupBy("g").agg(*plain_exprs).collect()

        g = Column("g", "integer", keys=tuple(range(GROUPS)))
        x = ValueColumn(Column("x", "decimal", lower=0, upper=1000), 2, 0, 100_000)
        engine = SparkEngine(str(path), spark=session)
        no_unit = AggregatePlan((g,), (x,))
        unit = AggregatePlan(
            (g,), (x,), Column("pid", "integer"), bounds=ContributionBounds(1), hash_key="ab" * 16
        )
        rows: list[tuple[str, float]] = [
            ("plain Spark: count, clamped sum by g", _best(plain, args.repeats)),
            (
                "snapdp Spark engine, no unit",
                _best(lambda: engine.aggregate(no_unit), args.repeats),
            ),
            ("plain Spark, clamped, 1 random row per pid", _best(plain_unit, args.repeats)),
            (
                "snapdp Spark engine, unit (k = 1)",
                _best(lambda: engine.aggregate(unit), args.repeats),
            ),
        ]
    session.stop()
    print(f"{args.rows:,} rows, {units:,} units, {GROUPS} groups, Spark local[2]\n")
    print("| task | wall time (s) | × plain |")
    print("|---|---:|---:|")
    base = {0: rows[0][1], 1: rows[0][1], 2: rows[2][1], 3: rows[2][1]}
    for i, (name, t) in enumerate(rows):
        print(f"| {name} | {t:.1f} | {t / base[i]:.2f} |")


if __name__ == "__main__":
    main()
