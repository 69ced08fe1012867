"""A binned integer column whose null rule imputes a value past int64 (reviewed 2026-11-27): the
query cast ``COALESCE(v, <128-bit literal>)`` back to a long, which failed exactly when the data
held a null — an error that showed one person's empty cell, and no release. Now a null takes the
imputed value's bin (public, computed exactly) and the long is compared as it is: the same
counts as the reference engine on every engine, with and without a null."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from tests.data_oracle import OracleEngine

from snapdp.data.engines.base import AggregatePlan
from snapdp.data.engines.duckdb.engine import DuckDBEngine
from snapdp.data.model.schema import Column, NullRule

EDGES = (Fraction(0), Fraction(10), Fraction(1 << 70))
CASES = {
    "inside a bin": (1 << 64, [1, 2]),  # 2^64 lies in [10, 2^70): the null counts there
    "in no bin": (-(1 << 64), [1, 1]),  # below every edge: the null row is dropped
}
TABLES = {"no null": "h,x\n5,a\n20,a\n", "a null": "h,x\n5,a\n20,a\n,a\n"}


def _plan(imputed: int) -> AggregatePlan:
    return AggregatePlan(
        groupings=(Column("h", "integer", bins=EDGES, nulls=NullRule("impute", imputed)),)
    )


def _expected(table: str, rows_with_null: list[int]) -> list[int]:
    return rows_with_null if "\n,a" in table else [1, 1]


@pytest.mark.parametrize("table", sorted(TABLES))
@pytest.mark.parametrize("case", sorted(CASES))
def test_duckdb_and_the_reference_agree(tmp_path: Path, case: str, table: str) -> None:
    imputed, rows = CASES[case]
    path = tmp_path / "t.csv"
    path.write_text(TABLES[table])
    plan = _plan(imputed)
    expected = _expected(TABLES[table], rows)
    assert OracleEngine(path).aggregate(plan).rows == expected
    assert DuckDBEngine(path).aggregate(plan).rows == expected


@pytest.mark.spark
def test_spark_agrees(spark_session: Any, tmp_path: Path) -> None:
    from snapdp.data.engines.spark.engine import SparkEngine

    for table, text in TABLES.items():
        path = tmp_path / f"{table.replace(' ', '_')}.csv"
        path.write_text(text)
        for imputed, rows in CASES.values():
            plan = _plan(imputed)
            got = SparkEngine(str(path), spark=spark_session).aggregate(plan).rows
            assert got == _expected(text, rows), (table, imputed)
