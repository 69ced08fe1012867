"""Bins compare exactly (docs/data.md, "The engine contract", step 3; issue 21 item 6).

An integer column's value is compared with the rational edges as an integer, never as a double:
near 2^63 a double cannot tell 2^63 − 512 from 2^63, so a quantile leaf whose top edge is 2^63
used to drop the values >= 2^63 − 512 instead of counting them in the last leaf (the clamp). A
decimal column's largest value (the largest double) is counted in the last quantile leaf too.
Each engine is compared with the reference engine (tests/data_oracle.py) and with counts written
out by hand.
"""

from __future__ import annotations

import sys
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pytest
from tests.data_oracle import OracleEngine

from snapdp.data import Column, Ledger, PrivateTable, Query, Schema
from snapdp.data.engines.base import AggregatePlan
from snapdp.data.engines.duckdb.engine import DuckDBEngine

TOP = (1 << 63) - 1
BOTTOM = -(1 << 63)
#: the edges a quantile tree over [0, 2^63 − 1] gets: the outer ones pushed to ±2^63
INT_BINS = Column(
    "x", "integer", bins=(Fraction(-(1 << 63)), Fraction(0), Fraction(1 << 62), Fraction(1 << 63))
)
INT_VALUES = [TOP, TOP - 511, TOP - 512, TOP - 1023, BOTTOM, -1, 0, (1 << 62) - 1, 1 << 62]
INT_EXPECTED = [2, 2, 5]  # [-2^63, 0): BOTTOM, -1; [0, 2^62): 0, 2^62-1; the rest
#: rational edges between integers: v >= 5/2 ⟺ v >= 3
HALF_BINS = Column("x", "integer", bins=(Fraction(1, 2), Fraction(5, 2), Fraction(9, 2)))
HALF_VALUES = [0, 1, 2, 3, 4, 5]
HALF_EXPECTED = [2, 2]
BIG = sys.float_info.max
DEC_BINS = Column("x", "decimal", bins=(Fraction(-(1 << 1024)), Fraction(0), Fraction(1 << 1024)))
DEC_VALUES = [BIG, -BIG, 0.0, -1.0, 1e308]
DEC_EXPECTED = [2, 3]


def _engines(table: pa.Table) -> list[object]:
    return [DuckDBEngine(table), OracleEngine(table)]


@pytest.mark.parametrize(
    ("column", "values", "arrow_type", "expected"),
    [
        (INT_BINS, INT_VALUES, pa.int64(), INT_EXPECTED),
        (HALF_BINS, HALF_VALUES, pa.int64(), HALF_EXPECTED),
        (DEC_BINS, DEC_VALUES, pa.float64(), DEC_EXPECTED),
    ],
    ids=["int64-extremes", "rational-edges", "largest-double"],
)
def test_bins_count_every_value_exactly(
    column: Column, values: list[object], arrow_type: pa.DataType, expected: list[int]
) -> None:
    table = pa.table({"x": pa.array(values, type=arrow_type)})
    plan = AggregatePlan(groupings=(column,))
    for engine in _engines(table):
        assert engine.aggregate(plan).rows == expected, type(engine).__name__  # type: ignore[attr-defined]


def test_bins_count_every_value_exactly_from_csv_text(tmp_path: object) -> None:
    path = tmp_path / "x.csv"  # type: ignore[operator]
    path.write_text("x\n" + "".join(f"{v}\n" for v in INT_VALUES))
    plan = AggregatePlan(groupings=(INT_BINS,))
    assert DuckDBEngine(path).aggregate(plan).rows == INT_EXPECTED
    assert OracleEngine(path).aggregate(plan).rows == INT_EXPECTED


def test_quantiles_near_two_to_the_63_clamp_into_the_last_leaf() -> None:
    """Every value is at the top of int64: the median must be in the last leaf. Before the fix
    every row was dropped, so the released counts were noise around 0 and the median was not."""
    n = 2000
    table = pa.table({"x": pa.array([TOP - 100 + i % 50 for i in range(n)], type=pa.int64())})
    schema = Schema((Column("x", "integer", 0, TOP),), max_rows=4096)
    q = Query("quantiles", "x", quantiles=(Fraction(1, 2),))
    for engine in _engines(table):
        result = PrivateTable(
            schema=schema,
            engine=engine,  # type: ignore[arg-type]
            ledger=Ledger(None, 5),
            rng=np.random.default_rng(7),
        ).release([q], 5)[0]
        (row,) = result.rows
        median = row.value
        assert median >= TOP * (1 - 1 / 512), type(engine).__name__
