"""The two Arrow number types DuckDB cannot scan (half floats, 256-bit decimals) no longer fail
the whole table with DuckDB's own error: a half float is read as the single float holding the
same value, a 256-bit decimal of at most 38 digits as the 128-bit one, and a wider decimal is
refused with a one-line error naming its column (the schema decides, never a cell). The Spark
engine reads a pandas DataFrame's columns of these types the same way (it refused a half float
column with a message naming no column, and a wide decimal with one naming neither)."""

from __future__ import annotations

import decimal
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from snapdp.data.engines.base import AggregatePlan, ValueColumn
from snapdp.data.engines.duckdb.engine import DuckDBEngine
from snapdp.data.model.schema import Column
from snapdp.errors import ParameterError

X = Column("x", "decimal", lower=-100, upper=100)
PLANS = [
    AggregatePlan(values=(ValueColumn(X, 2, -10_000, 10_000, squares=True),)),
    AggregatePlan(groupings=(Column("g", "integer", keys=(0, 1)),), values=()),
    AggregatePlan(),  # no column read: DuckDB scans the first one
]
HALVES = np.array([0.5, -1.25, 65504.0, np.nan, 3.0, -0.0], dtype=np.float16)
DECIMALS = [decimal.Decimal("1.25"), None, decimal.Decimal("-99.99"), decimal.Decimal("12")]


def _table(x: Any) -> pa.Table:
    return pa.table({"x": x, "g": pa.array([i % 2 for i in range(len(x))], pa.int64())})


@pytest.mark.parametrize("plan", PLANS, ids=["values", "grouped", "no column"])
def test_half_floats_read_as_the_same_single_floats(plan: AggregatePlan) -> None:
    half = DuckDBEngine(_table(pa.array(HALVES))).aggregate(plan)
    single = DuckDBEngine(_table(pa.array(HALVES.astype(np.float32)))).aggregate(plan)
    assert half == single
    if plan.values:  # the values were read: 5 of the 6 are numbers, 65504 clamped to 100
        assert single.counts[0][0] == 5 and single.sums[0][0] != 0
    frame = pd.DataFrame({"x": HALVES, "g": [i % 2 for i in range(len(HALVES))]})
    assert DuckDBEngine(frame).aggregate(plan) == single


@pytest.mark.parametrize("plan", PLANS, ids=["values", "grouped", "no column"])
def test_narrow_256_bit_decimals_read_as_128_bit_ones(plan: AggregatePlan) -> None:
    wide = DuckDBEngine(_table(pa.array(DECIMALS, pa.decimal256(38, 2)))).aggregate(plan)
    assert wide == DuckDBEngine(_table(pa.array(DECIMALS, pa.decimal128(38, 2)))).aggregate(plan)


def test_a_decimal_of_more_than_38_digits_is_refused_naming_its_column() -> None:
    with pytest.raises(ParameterError, match=r"column 'x' is decimal256\(40, 2\)") as caught:
        DuckDBEngine(_table(pa.array(DECIMALS, pa.decimal256(40, 2))))
    assert "\n" not in str(caught.value)


def _frame(x: Any) -> pd.DataFrame:
    return pd.DataFrame({"x": x, "g": [i % 2 for i in range(len(x))]})


@pytest.mark.spark
def test_spark_reads_a_frames_half_floats_and_256_bit_decimals_as_duckdb(
    spark_session: Any,
) -> None:
    """One test (one Spark job per plan): every plan on each frame, against the DuckDB engine."""
    from snapdp.data.engines.spark.engine import SparkEngine

    narrow = pd.array(DECIMALS, dtype=pd.ArrowDtype(pa.decimal256(38, 2)))
    for x in (HALVES, narrow):
        frame = _frame(x)
        for plan in PLANS:
            expected = DuckDBEngine(frame).aggregate(plan)
            assert SparkEngine(frame, spark=spark_session).aggregate(plan) == expected
    half = SparkEngine(_frame(HALVES), spark=spark_session).aggregate(PLANS[0])
    assert half.counts[0][0] == 5  # the values were read, not nulled
    wide = _frame(pd.array(DECIMALS, dtype=pd.ArrowDtype(pa.decimal256(40, 2))))
    with pytest.raises(ParameterError, match=r"column 'x' is decimal256\(40, 2\)") as caught:
        SparkEngine(wide, spark=spark_session).aggregate(PLANS[0])
    assert "the Spark engine cannot read (at most 38 digits)" in str(caught.value)
    assert "\n" not in str(caught.value)
    # a plan not reading the wide column is not refused (the used columns alone are converted)
    grouped = SparkEngine(wide, spark=spark_session).aggregate(PLANS[1])
    assert grouped == DuckDBEngine(wide).aggregate(PLANS[1])


def test_a_parquet_files_wide_numbers_read_alike_on_both_paths(tmp_path: Any) -> None:
    """A Parquet file with 256-bit decimals (and half floats) gives the same exact aggregates on
    DuckDB's reader and on the Arrow path a plan reading a text column takes; the Arrow path
    failed with DuckDB's "Not implemented" for any such column of the file, read or not."""
    import pyarrow.parquet as pq

    values = [decimal.Decimal("1.25"), decimal.Decimal("2.50"), None]
    columns: dict[str, Any] = {
        "wide": pa.array(values, type=pa.decimal256(40, 2)),
        "narrow": pa.array(values, type=pa.decimal256(30, 2)),
        "half": pa.array([1.25, 2.5, None], type=pa.float16()),
        "u": ["a", "b", "c"],
    }
    path = tmp_path / "f.parquet"
    pq.write_table(pa.table(columns), path)
    for name in ("wide", "narrow", "half"):
        value = ValueColumn(Column(name, "decimal", 0, 10), 2, 0, 1000)
        got, want = _on_both_paths(path, value)
        assert (got.sums, got.counts) == (want.sums, want.counts) == ([[375]], [[2]]), name


def test_a_parquet_files_durations_read_alike_on_both_paths(tmp_path: Any) -> None:
    """A Parquet duration is a 64-bit integer in the file, which DuckDB's reader reads as such;
    the Arrow path read Arrow's duration type, which the casts make null: the same file gave
    another count whether or not a plan read one of its text columns."""
    import pyarrow.parquet as pq

    for unit in ("s", "ms", "us", "ns"):
        path = tmp_path / f"{unit}.parquet"
        durations = pa.array([5, 7, None], type=pa.duration(unit))
        pq.write_table(pa.table({"d": durations, "u": ["a", "b", "c"]}), path)
        value = ValueColumn(Column("d", "integer", 0, 100), 0, 0, 100)
        got, want = _on_both_paths(path, value)
        assert (got.sums, got.counts) == (want.sums, want.counts) == ([[12]], [[2]]), unit


def _on_both_paths(path: Any, value: ValueColumn) -> tuple[Any, Any]:
    """The exact aggregates of ``value`` in the Parquet file ``path``: on the Arrow path (a plan
    that also reads the text column ``u``) and on DuckDB's Parquet reader (one that does not)."""
    from snapdp.data.model.schema import ContributionBounds

    units = AggregatePlan(
        values=(value,),
        unit=Column("u", "text"),
        bounds=ContributionBounds(1),
        hash_key="00112233445566778899aabbccddeeff",
    )
    arrow = DuckDBEngine(str(path)).aggregate(units)
    return arrow, DuckDBEngine(str(path)).aggregate(AggregatePlan(values=(value,)))
