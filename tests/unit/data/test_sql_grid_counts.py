"""`OPTIONS(grid_counts = true)` keeps every COUNT's grid value (issue 34; docs/sql.md, "OPTIONS
and per-aggregate bounds"), as `--grid-counts` and a plan's `grid_counts = true`; refused, with a
caret under it, for a query without a COUNT or a value other than true or false."""

from __future__ import annotations

from fractions import Fraction

import pytest

from snapdp.data import Column, Schema
from snapdp.data.frontends.sql import SqlError, parse_sql
from snapdp.data.model.workload import Declaration

pytest.importorskip("sqlglot")

DECL = Declaration(
    Schema(
        (
            Column("age", "integer", Fraction(0), Fraction(100)),
            Column("sex", "integer", keys=(0, 1)),
        )
    ),
    "people.csv",
)
PREFIX = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(grid_counts = "


def test_grid_counts_reaches_every_count() -> None:
    sql = parse_sql(
        PREFIX + "true) sex, COUNT(*), AVG(age) FROM people GROUP BY sex", DECL, epsilon=1
    )
    assert [pq.query.grid_counts for pq in sql.workload.queries] == [True, False]
    sql = parse_sql(PREFIX + "false) COUNT(*) FROM people", DECL, epsilon=1)
    assert [pq.query.grid_counts for pq in sql.workload.queries] == [False]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (PREFIX + "true) AVG(age) FROM people", "grid_counts is for counts"),
        (PREFIX + "2) COUNT(*) FROM people", "grid_counts must be true or false, not 2"),
    ],
)
def test_grid_counts_refusals_have_a_caret(text: str, message: str) -> None:
    with pytest.raises(SqlError) as info:
        parse_sql(text, DECL, epsilon=1)
    first, shown, caret = str(info.value).split("\n")
    assert message in first
    start = caret.index("^")
    assert shown[start:].startswith("grid_counts")
