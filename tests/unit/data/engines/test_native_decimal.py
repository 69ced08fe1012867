"""Native fixed-point decimals (Parquet/Arrow DECIMAL) are cast by the contract in every engine:
integral values within int64 for an integer column, the nearest double for a decimal column."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.data_oracle import OracleEngine

from snapdp.data.engines.base import AggregatePlan, ValueColumn
from snapdp.data.engines.duckdb.engine import DuckDBEngine
from snapdp.data.model.schema import Column

_K = [Decimal("1.000"), Decimal("2.000"), Decimal("2.500"), None, Decimal("1.000"), Decimal("-0")]
_M = [Decimal("1.250"), Decimal("-7.125"), Decimal("0.100"), Decimal("123456789.001"), None,
      Decimal("2.500")]  # fmt: skip


def _table() -> pa.Table:
    return pa.table(
        {"k": pa.array(_K, pa.decimal128(12, 3)), "m": pa.array(_M, pa.decimal128(12, 3))}
    )


def _plans() -> list[AggregatePlan]:
    key = Column("k", "integer", keys=(0, 1, 2))
    dec = ValueColumn(Column("m", "decimal", lower=-10, upper=10), 3, -10_000, 10_000, squares=True)
    whole = ValueColumn(Column("k", "integer", lower=0, upper=5), 0, 0, 5)
    return [
        AggregatePlan(groupings=(key,), values=(dec,)),
        AggregatePlan(values=(whole, dec)),
    ]


def test_oracle_casts_native_decimals() -> None:
    agg = OracleEngine(_table()).aggregate(_plans()[0])
    # k: 1, 2, (2.5: not an integer → null, dropped), null, 1, -0 → 0
    assert agg.rows == [1, 2, 1]
    # cells are keys 0, 1, 2; m in quanta of 0.001: key 0 ← 2.5; key 1 ← 1.25 and a null; key 2
    # ← -7.125 (the row of 123456789.001 has k = 2.5: dropped)
    assert agg.sums == [[2500, 1250, -7125]] and agg.counts == [[1, 1, 1]]


def test_duckdb_matches_the_oracle_on_decimal_columns(tmp_path: Path) -> None:
    table = _table()
    pq.write_table(table, tmp_path / "d.parquet")
    for plan in _plans():
        expected = OracleEngine(table).aggregate(plan)
        assert DuckDBEngine(table).aggregate(plan) == expected
        assert DuckDBEngine(tmp_path / "d.parquet").aggregate(plan) == expected


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_spark_matches_the_oracle_on_decimal_columns(spark_session: Any, tmp_path: Path) -> None:
    from snapdp.data.engines.spark.engine import SparkEngine

    table = _table()
    pq.write_table(table, tmp_path / "d.parquet")
    for plan in _plans():
        expected = OracleEngine(table).aggregate(plan)
        engine = SparkEngine(str(tmp_path / "d.parquet"), spark=spark_session)
        assert engine.aggregate(plan) == expected


def test_a_large_integer_reads_the_same_as_int64_or_float64() -> None:
    """pandas makes an int64 column float64 when one cell is missing; an integral double below
    2^63 is the same integer, so one added null row cannot null the others' large values."""
    import pandas as pd

    plan = AggregatePlan(values=(ValueColumn(Column("v", "integer", 0, 10), 0, 0, 10),))
    ints = pd.DataFrame({"v": [1, 2, 2**60]})
    floats = pd.DataFrame({"v": [1.0, 2.0, float(2**60), None]})
    for engine in (DuckDBEngine, OracleEngine):
        a, b = engine(ints).aggregate(plan), engine(floats).aggregate(plan)
        assert a.sums == b.sums == [[13]] and a.counts == b.counts == [[3]]
