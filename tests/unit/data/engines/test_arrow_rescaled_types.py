"""An Arrow or pandas column that an engine rescales when it reads it (a timestamp or a duration
in seconds or milliseconds) never fails a release on one value (DESIGN §8.1): DuckDB converts
time-zoned timestamps and durations to microseconds and fails the whole query on one value past
its range, and it scans a table's first column to count the rows of a release that reads no
column (Spark converts every such column of a pandas frame: tests/unit/data/engines/
test_spark_edges.py). The contract
casts such a column to null, so the engine hands DuckDB nulls of its type. Before, one person's
timestamp of year 300,000 made the release refuse where its neighbour released."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

from snapdp.data.engines._cells import rescaled
from snapdp.data.engines.base import AggregatePlan
from snapdp.data.engines.duckdb.engine import DuckDBEngine
from snapdp.data.model.schema import Column

ROWS = 40
ORDINARY = 1_577_836_800  # 2020-01-01 in seconds
PAST = 2**62  # past DuckDB's range in seconds and in milliseconds
TYPES = [
    pa.timestamp("ms"),
    pa.timestamp("s", tz="UTC"),
    pa.timestamp("ms", tz="America/New_York"),
    pa.duration("s"),
    pa.duration("ms"),
]
DAY = Column("t", "date", keys=(dt.date(2020, 1, 1),))
PLANS = [
    AggregatePlan(groupings=(), values=()),  # reads no column: DuckDB scans the first one
    AggregatePlan(groupings=(DAY,), values=()),
    AggregatePlan(groupings=(Column("g", "integer", keys=(0, 1)),), values=()),
]


def _table(arrow_type: Any, last: int) -> pa.Table:
    return pa.table(
        {
            "t": pa.array([ORDINARY] * ROWS + [last], arrow_type),
            "g": pa.array([i % 2 for i in range(ROWS + 1)], pa.int64()),
        }
    )


@pytest.mark.parametrize("arrow_type", TYPES, ids=str)
@pytest.mark.parametrize("plan", PLANS, ids=["no column", "by the column", "by another"])
def test_one_value_past_the_range_changes_nothing(arrow_type: Any, plan: AggregatePlan) -> None:
    """D holds one value past DuckDB's range, D' an ordinary one: the same aggregates."""
    assert rescaled(arrow_type)
    past, ordinary = _table(arrow_type, PAST), _table(arrow_type, ORDINARY)
    got = DuckDBEngine(past).aggregate(plan)
    assert got == DuckDBEngine(ordinary).aggregate(plan)
    assert got.rows[0] == (
        ROWS + 1 if plan.groupings == () else 0 if plan.groupings[0] == DAY else 21
    )


@pytest.mark.parametrize("plan", PLANS, ids=["no column", "by the column", "by another"])
def test_a_pandas_frame_with_a_zoned_timestamp(plan: AggregatePlan) -> None:
    """The same for a pandas frame whose column is ``datetime64[ms, UTC]``."""

    def frame(last: int) -> pd.DataFrame:
        millis = pd.Series([ORDINARY * 1000] * ROWS + [last], dtype="int64")
        t = millis.astype("datetime64[ms]").dt.tz_localize("UTC")
        return pd.DataFrame({"t": t, "g": [i % 2 for i in range(ROWS + 1)]})

    got = DuckDBEngine(frame(PAST)).aggregate(plan)
    assert got == DuckDBEngine(frame(ORDINARY * 1000)).aggregate(plan)


def test_only_the_rescaled_types() -> None:
    """Microseconds and nanoseconds, dates and times are read as they are."""
    kept = [
        pa.timestamp("us", tz="UTC"),
        pa.timestamp("ns", tz="UTC"),
        pa.duration("us"),
        pa.date64(),
        pa.time32("s"),
        pa.int64(),
        pa.string(),
    ]
    assert not any(rescaled(t) for t in kept)
