"""One person's awkward cell in a pandas frame never fails the conversion (DESIGN §8.1;
docs/data.md, "What does not fit"): an ``object`` cell holding an integer of more than 4,300
digits (which ``str`` refuses) or a Fraction past the largest double (which ``float`` refuses),
and a categorical column whose object categories hold a lone surrogate (which pandas 3's
``Index.to_series`` refuses when it infers "str" again). Each once raised from the release where
its neighbour without that row released: the refusal showed the person's value."""

from __future__ import annotations

import decimal
from fractions import Fraction
from typing import Any

import pandas as pd
import pytest

from snapdp.data.engines import _cells
from snapdp.data.engines.base import AggregatePlan, ValueColumn
from snapdp.data.engines.duckdb.engine import DuckDBEngine
from snapdp.data.model.schema import Column

G = Column("g", "integer", keys=(0, 1))
ROWS = 60
HUGE = 10**5000 + 7  # 5,001 digits


def _plan(column: Column) -> AggregatePlan:
    if column.type == "text":
        return AggregatePlan(groupings=(G, column), values=())
    return AggregatePlan(groupings=(G,), values=(ValueColumn(column, 0, -100, 100, None, True),))


def _frame(values: list[Any]) -> pd.DataFrame:
    cells = [i % 7 for i in range(ROWS)] + values
    return pd.DataFrame(
        {"g": [i % 2 for i in range(len(cells))], "v": pd.Series(cells, dtype=object)}
    )


@pytest.mark.parametrize("kind", ["integer", "decimal", "text"])
@pytest.mark.parametrize("sign", [1, -1])
def test_an_integer_of_any_length_is_its_digits(kind: str, sign: int) -> None:
    """An integer cell is the text of its digits however many there are: the same aggregates as
    the frame holding those digits as a string (for a number column, a null: beyond the type)."""
    column = Column("v", kind, keys=("0", "1")) if kind == "text" else Column("v", kind)
    digits = f"{decimal.Decimal(sign * HUGE):f}"
    assert _cells.object_cell(sign * HUGE, kind) == digits
    got = DuckDBEngine(_frame([sign * HUGE])).aggregate(_plan(column))
    assert got == DuckDBEngine(_frame([digits])).aggregate(_plan(column))


@pytest.mark.parametrize("kind", ["integer", "decimal"])
def test_a_fraction_past_the_largest_double_is_null(kind: str) -> None:
    """A Fraction whose nearest double is infinite is null, as an infinite float is."""
    column = Column("v", kind)
    for x in (Fraction(10**400, 3), Fraction(-(10**400), 7)):
        assert _cells.object_cell(x, kind) is None
        got = DuckDBEngine(_frame([x])).aggregate(_plan(column))
        assert got == DuckDBEngine(_frame([float("inf")])).aggregate(_plan(column))
        assert got == DuckDBEngine(_frame([None])).aggregate(_plan(column))


@pytest.mark.parametrize(
    "extra",
    [[], ["a\udcffb"], ["\ud800", "b", None], [3, "a"]],
    ids=["none", "one", "more", "mixed"],
)
def test_categories_with_a_lone_surrogate(extra: list[Any]) -> None:
    """A categorical column whose object categories hold a lone surrogate (or an integer among
    texts): the aggregates of its cells taken as an object column (such a cell is null)."""
    cells = [("a", "b")[i % 2] for i in range(ROWS)] + extra
    plain = pd.Series(cells, dtype=object)
    categories = pd.Index(list(dict.fromkeys(c for c in cells if c is not None)), dtype=object)
    frame = pd.DataFrame({"g": [i % 2 for i in range(len(cells))]})
    frame["t"] = pd.Categorical(plain, categories=categories)
    column = Column("t", "text", keys=("a", "b", "3"))
    plan = AggregatePlan(groupings=(G, column), values=())
    want = DuckDBEngine(frame.assign(t=plain)).aggregate(plan)
    assert DuckDBEngine(frame).aggregate(plan) == want


def test_a_long_integer_is_converted_without_a_quadratic_step(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The digits of a long integer cell, at the edges of ``str``'s limit and far past it, by a
    conversion whose time is near linear in the digits (traced, not timed: ``decimal``, which
    the conversion used past 4,300 digits, takes time quadratic in them, ~15 s of CPU for one
    cell of a million digits, so the release's run time showed that person's value)."""
    import sys

    def quadratic(*args: object) -> None:
        raise AssertionError("converted by decimal")

    limit = sys.get_int_max_str_digits()
    cells = [10**3913, 2**13000 - 1, 2**13000, 10**4299 + 1, 10**4300, HUGE, 7 * 10**200_000]
    sys.set_int_max_str_digits(0)
    try:
        want = [str(s * n) for n in cells for s in (1, -1)]
    finally:
        sys.set_int_max_str_digits(limit)
    monkeypatch.setattr(decimal, "Decimal", quadratic)
    assert [_cells.object_cell(s * n, "text") for n in cells for s in (1, -1)] == want
