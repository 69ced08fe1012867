"""The Spark engine on issue 21's edges, against the reference engine: a text cell that is not
valid Unicode is null (Parquet bytes that are not UTF-8, a pandas lone surrogate), and integer
bins compare exactly near 2^63 (docs/data.md, "What does not fit")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.data_oracle import OracleEngine
from tests.unit.data.engines.conftest import default_planning
from tests.unit.data.engines.test_bins_exact import INT_BINS, INT_EXPECTED, INT_VALUES
from tests.unit.data.engines.test_invalid_text import BAD_BYTES, PLANS, _frame, _neighbour

from snapdp.data.engines.base import AggregatePlan

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


def _engine(source: object, spark: Any) -> Any:
    from snapdp.data.engines.spark.engine import SparkEngine

    return SparkEngine(source, spark=spark)


def _parquet_cells_equal_the_reference(spark: Any, tmp_path: Path, bad: bytes, i: int) -> None:
    d, d2 = _neighbour(bad)
    for name, table in (("d", d), ("d2", d2)):
        path = tmp_path / f"{name}{i}.parquet"
        pq.write_table(table, path)
        engine = _engine(str(path), spark)
        for plan_name, plan in PLANS.items():
            assert engine.aggregate(plan) == OracleEngine(table).aggregate(plan), plan_name


def test_invalid_utf8_in_parquet_is_null(spark_session: Any, tmp_path: Path) -> None:
    """The second bad byte on Spark's default planning and code generation, the path users run
    (the session's cheaper planning interprets expressions: tests/unit/data/engines/conftest.py)."""
    _parquet_cells_equal_the_reference(spark_session, tmp_path, BAD_BYTES[0], 0)
    with default_planning(spark_session):
        _parquet_cells_equal_the_reference(spark_session, tmp_path, BAD_BYTES[1], 1)


def test_a_lone_surrogate_in_pandas_is_null(spark_session: Any) -> None:
    for with_surrogate in (False, True):
        frame = _frame(with_surrogate)
        engine = _engine(frame, spark_session)
        for plan_name, plan in PLANS.items():
            assert engine.aggregate(plan) == OracleEngine(frame).aggregate(plan), plan_name
        assert isinstance(frame, pd.DataFrame)  # the caller's frame is not changed
    assert "\ud800" in list(_frame(True)["t"])


def test_integer_bins_near_two_to_the_63(spark_session: Any) -> None:
    frame = pd.DataFrame({"x": pd.Series(INT_VALUES, dtype="int64")})
    plan = AggregatePlan(groupings=(INT_BINS,))
    assert _engine(frame, spark_session).aggregate(plan).rows == INT_EXPECTED
    assert (
        OracleEngine(pa.table({"x": pa.array(INT_VALUES, pa.int64())})).aggregate(plan).rows
        == INT_EXPECTED
    )


def test_a_pandas_cell_of_another_type_is_null_not_an_error(spark_session: Any) -> None:
    """An object column mixing types (bytes, a float among integers, a bool, a date) is read
    cell by cell by the contract, as DuckDB reads it; before, Spark's own conversion of the
    whole frame failed on D' (found by the differential generator)."""
    import datetime as dt

    from snapdp.data.engines.duckdb.engine import DuckDBEngine

    frame = _frame(False)
    mixed = pd.DataFrame(
        {
            "t": pd.Series([*frame["t"][:5], b"a", 1, True, dt.date(2024, 1, 1)], dtype=object),
            "n": pd.Series([*frame["n"][:5], 2.0, -0.0, "7", b"3"], dtype=object),
            "x": pd.Series([*frame["x"][:5], 1.5, float("nan"), None, "9.5"], dtype=object),
        }
    )
    engine = _engine(mixed, spark_session)
    with default_planning(spark_session):  # the casts as generated code, as users run them
        for plan_name, plan in PLANS.items():
            want = OracleEngine(mixed).aggregate(plan)
            assert engine.aggregate(plan) == want == DuckDBEngine(mixed).aggregate(plan), plan_name


def test_a_zoned_timestamp_past_the_range_changes_nothing(spark_session: Any) -> None:
    """A pandas ``datetime64[ms]`` column, with or without a time zone (null by the contract),
    holding one value past the range of Spark's microseconds: the same aggregates as with an
    ordinary value. Before, Spark's conversion of the frame refused the release on that value."""
    import datetime as dt

    from snapdp.data.engines.duckdb.engine import DuckDBEngine
    from snapdp.data.model.schema import Column

    def frame(last: int, zone: str | None) -> pd.DataFrame:
        millis = pd.Series([1_577_836_800_000] * 20 + [last], dtype="int64")
        t = millis.astype("datetime64[ms]")
        t = t if zone is None else t.dt.tz_localize(zone)
        return pd.DataFrame({"t": t, "g": [i % 2 for i in range(21)]})

    day = Column("t", "date", keys=(dt.date(2020, 1, 1),))
    plan = AggregatePlan(groupings=(Column("g", "integer", keys=(0, 1)), day))
    for zone in (None, "UTC"):
        got = _engine(frame(2**62, zone), spark_session).aggregate(plan)
        assert got == _engine(frame(1_577_836_800_000, zone), spark_session).aggregate(plan)
        assert got == DuckDBEngine(frame(2**62, zone)).aggregate(plan)
        assert got.rows == [0, 0]
