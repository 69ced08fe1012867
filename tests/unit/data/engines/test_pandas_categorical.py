"""A pandas categorical column (DESIGN §8.1; docs/data.md, "Run time"): its categories are
converted once each and its rows taken by their codes, so the work per row does not depend on
the categories. Before, one category Arrow could not convert (a text among integer categories)
sent every cell of the column through the per-cell rule, ~20 times the CPU of the vectorised
path: the run time showed whether one person's value was present."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

from snapdp.data.engines import _cells
from snapdp.data.engines.base import AggregatePlan, ValueColumn
from snapdp.data.engines.duckdb.engine import DuckDBEngine
from snapdp.data.model.schema import Column

G = Column("g", "integer", keys=(0, 1, 2))
V = Column("v", "decimal", lower=Fraction(0), upper=Fraction(10))
PLAN = AggregatePlan(groupings=(G,), values=(ValueColumn(V, 1, 0, 100, None, True),))
ROWS = 300


def _frame(extra: list[Any]) -> pd.DataFrame:
    g = [i % 3 for i in range(ROWS)] + extra
    v = [float(i % 11) for i in range(ROWS)] + [4.5] * len(extra)
    return pd.DataFrame({"g": pd.Categorical(g), "v": pd.Categorical(v)})


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    calls: list[object] = []
    real = _cells.object_cell

    def counting(x: object, kind: str) -> str | None:
        calls.append(x)
        return real(x, kind)

    monkeypatch.setattr(_cells, "object_cell", counting)
    return calls


@pytest.mark.parametrize("extra", [[], ["x"], [None], ["x", 1, None]])
def test_cells_are_converted_once_per_category_not_per_row(
    monkeypatch: pytest.MonkeyPatch, extra: list[Any]
) -> None:
    """D and D' = D plus a row holding a text (or a null) in an integer categorical column: the
    per-cell rule runs at most once per category, never once per row."""
    calls = _counted(monkeypatch)
    frame = _frame(extra)
    table = _cells.frame_to_arrow(frame, {"g": G, "v": V})
    assert len(calls) <= len(frame["g"].cat.categories) + len(frame["v"].cat.categories)
    assert table.num_rows == ROWS + len(extra)


@pytest.mark.parametrize(
    ("extra", "rows"),
    [([], [100, 100, 100]), (["x"], [100, 100, 100]), ([None], [100, 100, 100]),
     ([7], [100, 100, 100]), (["1"], [100, 101, 100]), ([2, "2"], [100, 100, 102])],
)  # fmt: skip
def test_a_categorical_column_gives_the_values_of_its_cells(
    extra: list[Any], rows: list[int]
) -> None:
    """The aggregates of a categorical frame equal those of the same cells in object columns
    (each cell by the contract's rule), in every cell; the text "1" is the integer 1."""
    frame = _frame(extra)
    plain = pd.DataFrame({c: pd.Series(list(frame[c]), dtype=object) for c in frame})
    got = DuckDBEngine(frame).aggregate(PLAN)
    assert got == DuckDBEngine(plain).aggregate(PLAN)
    assert got.rows == rows


def test_an_all_missing_categorical_column_is_all_null() -> None:
    frame = pd.DataFrame({"g": pd.Categorical([np.nan] * 4), "v": pd.Categorical([1.0] * 4)})
    assert DuckDBEngine(frame).aggregate(PLAN).rows == [0, 0, 0]
