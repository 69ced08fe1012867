"""A pandas ``string[python]`` column (DESIGN §8.1; docs/data.md, "Run time"): converted
vectorised whatever its cells hold. Before, one cell holding a lone surrogate (not valid
Unicode, which Arrow refuses) sent every cell of the column through the per-cell rule, ~5 times
the CPU: the run time showed whether one person's value was present."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from tests.unit.data.engines.test_pandas_categorical import _counted

from snapdp.data.engines import _cells
from snapdp.data.engines.base import AggregatePlan
from snapdp.data.engines.duckdb.engine import DuckDBEngine
from snapdp.data.model.schema import Column

CITY = Column("city", "text", keys=("a", "b", "x"))
NUMBER = Column("n", "integer", keys=(1, 2))
ROWS = 300
EXTRAS: list[list[Any]] = [[], ["\ud800"], ["x\ud800y", None], ["a", "\udfff", "1"], ["2"]]


def _frame(extra: list[Any]) -> pd.DataFrame:
    cells = [("a", "b", "1")[i % 3] for i in range(ROWS)] + extra
    series = pd.Series(cells, dtype="string[python]")
    return pd.DataFrame({"city": series, "n": series})


@pytest.mark.parametrize("extra", EXTRAS)
def test_no_cell_goes_through_the_per_cell_rule(
    monkeypatch: pytest.MonkeyPatch, extra: list[Any]
) -> None:
    """D and D' = D plus rows holding a lone surrogate (or a null): the per-cell rule never runs
    for a ``string[python]`` column, so the work per row is the same for both."""
    calls = _counted(monkeypatch)
    table = _cells.frame_to_arrow(_frame(extra), {"city": CITY, "n": NUMBER})
    assert calls == []
    assert table.num_rows == ROWS + len(extra)


@pytest.mark.parametrize("extra", EXTRAS)
def test_the_cells_are_those_of_the_per_cell_rule(extra: list[Any]) -> None:
    """Each cell is the text the contract's rule gives (a lone surrogate's cell is null), and the
    aggregates equal those of the same cells in object columns."""
    frame = _frame(extra)
    for name, column in (("city", CITY), ("n", NUMBER)):
        got = _cells.frame_to_arrow(frame, {name: column}).column(0).combine_chunks()
        want = pa.array([_cells.object_cell(x, column.type) for x in frame[name]], pa.string())
        assert got.equals(want)
        plan = AggregatePlan(groupings=(column,), values=())
        plain = pd.DataFrame({name: pd.Series(list(frame[name]), dtype=object)})
        assert DuckDBEngine(frame).aggregate(plan) == DuckDBEngine(plain).aggregate(plan)
