"""`snapdp sql` suggests a declared name for a misspelt column, function or table (issue 34 item
7; docs/sql.md, "Refusals"): the close match comes from the declaration and the grammar's words
only, never from the data, and the refusal stays one line with its caret."""

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
            Column("income", "decimal", Fraction(0), Fraction(1000)),
            Column("region", "text", keys=("north", "south")),
        )
    ),
    "people.csv",
)


def _refusal(text: str) -> tuple[str, str]:
    with pytest.raises(SqlError) as info:
        parse_sql(text, DECL, epsilon=1)
    first, shown, caret = str(info.value).split("\n")
    start = caret.index("^")
    return first, shown[start : start + caret.count("^")]


@pytest.mark.parametrize(
    ("query", "suggested", "under"),
    [
        ("SELECT AVG(incom) FROM people", "did you mean 'income'?", "incom"),
        ("SELECT COUNT(*) FROM people WHERE agee > 3", "did you mean 'age'?", "agee"),
        ("SELECT regio, COUNT(*) FROM people GROUP BY regio", "did you mean 'region'?", "regio"),
        ("SELECT AVGG(income) FROM people", "did you mean 'AVG'?", "AVGG"),
        ("SELECT MEDIANN(age) FROM people", "did you mean 'MEDIAN'?", "MEDIANN"),
        ("SELECT COUNT(*) FROM peopel", "did you mean 'people'?", "peopel"),
    ],
)
def test_misspelt_name_gets_a_suggestion_under_its_caret(
    query: str, suggested: str, under: str
) -> None:
    first, marked = _refusal(query)
    assert suggested in first
    assert marked == under


def test_no_suggestion_when_nothing_is_close() -> None:
    first, _ = _refusal("SELECT AVG(zzz) FROM people")
    assert "did you mean" not in first and "(declared: 'age', 'income', 'region')" in first
    first, _ = _refusal("SELECT COUNT(*) FROM zzz")
    assert "did you mean" not in first and "the declared table is 'people'" in first


def test_suggestions_never_come_from_data_values() -> None:
    """A text column's declared keys are values, not names: never suggested."""
    first, _ = _refusal("SELECT COUNT(*) FROM people WHERE nort = 1")
    assert "north" not in first and "did you mean" not in first
