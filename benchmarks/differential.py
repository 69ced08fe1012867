"""Differential testing, long version: N random cases of D against D' = D plus one awkward row.

Each case draws a seed (D: 60 to 160 random rows), cycles through the awkward kinds of
``tests/differential.py`` and draws a source (CSV with or without header, Parquet, pandas,
Arrow), a front end (API; CLI and plan run for files) and an engine; it compares everything the
two releases show but their noisy numbers (docs/data.md, "What is public, what is protected").
Prints each case that differs, with what differs, and a summary; exits 1 if any differs.

    PYTHONPATH=src python3 benchmarks/differential.py --examples 200 [--seed 1] [--spark]
        [--quantiles] [--kind "invalid utf-8 key"] [--sql]

``--spark`` adds the Spark engine (local[2]); ``--quantiles`` adds the CLI's quantiles over
1024 leaves per group (slow to plan: seconds per new declaration). ``--sql`` runs the SQL cases
of ``tests/differential_sql.py`` instead (``snapdp sql`` and ``PrivateTable.sql`` with WHERE,
HAVING, ORDER BY, OPTIONS and CLAMP; DuckDB).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.differential import AWKWARD, Case, Outcome, cases, differences, run_case
from tests.differential_sql import SqlCase, run_sql_case, sql_cases


def _spark() -> Any:
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("snapdp-differential")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--spark", action="store_true", help="also the Spark engine")
    parser.add_argument("--quantiles", action="store_true", help="also the CLI's quantiles")
    parser.add_argument("--kind", action="append", help="only these awkward kinds")
    parser.add_argument("--sql", action="store_true", help="the SQL cases instead")
    args = parser.parse_args(argv)
    if args.kind:
        unknown = set(args.kind) - set(AWKWARD)
        if unknown:
            parser.error(f"unknown kinds {sorted(unknown)}; known: {sorted(AWKWARD)}")
    if args.sql:
        return _main_sql(args.examples, args.seed, args.kind)
    engines = ("duckdb", "spark") if args.spark else ("duckdb",)
    spark = _spark() if args.spark else None
    chosen = list(cases(args.examples, args.seed, engines, args.quantiles))
    if args.kind:
        chosen = [
            Case(c.seed, args.kind[i % len(args.kind)], c.source, c.front, c.engine, c.quantiles)
            for i, c in enumerate(chosen)
        ]
    failures: list[tuple[Case, list[str]]] = []
    cache: dict[object, Outcome] = {}
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="snapdp-differential-") as tmp:
        for i, case in enumerate(chosen):
            d, d2 = run_case(case, Path(tmp), spark, cache)
            found = differences(d, d2)
            if found:
                failures.append((case, found))
                print(f"DIFFERS [{i}] {case}", flush=True)
                for line in found:
                    print(f"    {line[:600]}", flush=True)
    elapsed = time.perf_counter() - start
    print(
        f"{len(chosen)} cases ({', '.join(engines)}), {len(failures)} differing, "
        f"{elapsed:.1f} s ({elapsed / max(1, len(chosen)):.2f} s per case)"
    )
    return 1 if failures else 0


def _main_sql(examples: int, seed: int, kinds: list[str] | None) -> int:
    """The SQL cases: each differing case printed, a summary; 1 if any differs."""
    chosen = list(sql_cases(examples, seed))
    if kinds:
        chosen = [
            SqlCase(c.seed, kinds[i % len(kinds)], c.source, c.front, c.query)
            for i, c in enumerate(chosen)
        ]
    failures = 0
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="snapdp-differential-sql-") as tmp:
        for i, case in enumerate(chosen):
            found = differences(*run_sql_case(case, Path(tmp)))
            if found:
                failures += 1
                print(f"DIFFERS [{i}] {case}", flush=True)
                for line in found:
                    print(f"    {line[:600]}", flush=True)
    elapsed = time.perf_counter() - start
    print(
        f"{len(chosen)} SQL cases (duckdb), {failures} differing, {elapsed:.1f} s "
        f"({elapsed / max(1, len(chosen)):.2f} s per case)"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
