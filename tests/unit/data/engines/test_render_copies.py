"""Building and rendering a plan with a privacy unit copies each node of its query about once
(issue 32: the keyed-hash ranks were built as a chain of subqueries, each copying the whole
chain below it, so most of a release with a unit went to copying sqlglot trees; the text is
the same, pinned by the engines' differential tests)."""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import pytest
from sqlglot import exp

from snapdp.data.engines.base import AggregatePlan, ValueColumn
from snapdp.data.engines.relational.dialects import duckdb_sql, spark_sql
from snapdp.data.engines.relational.plan import aggregate_query
from snapdp.data.model.schema import Column, ContributionBounds

KEY = "0123456789abcdef" * 2
CITY = Column("city", "text", keys=("a", "b", "c"))
INCOME = ValueColumn(Column("income", "integer", 0, 100), 0, 0, 100)
X = ValueColumn(Column("x", "decimal", lower=Fraction(0), upper=Fraction(10)), 2, 0, 1000)
FAMILIES = {"city": "text", "income": "int", "x": "float", "u": "text"}
BOUNDS = ContributionBounds(max_rows_per_unit=5, max_groups_per_unit=2, max_rows_per_group=3)


@pytest.fixture
def copied() -> Iterator[list[int]]:
    """The number of nodes each deep copy of a sqlglot tree copies, while the test runs."""
    owner = next(c for c in exp.Expression.__mro__ if "__deepcopy__" in vars(c))
    real = owner.__deepcopy__
    sizes: list[int] = []

    def counting(self: Any, memo: Any) -> Any:
        sizes.append(sum(1 for _ in self.walk()))
        return real(self, memo)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(owner, "__deepcopy__", counting)
        yield sizes


@pytest.mark.parametrize("values", [(INCOME,), (X, INCOME)], ids=["one value", "two values"])
@pytest.mark.parametrize("unit_type", ["text", "integer"])
def test_a_unit_plan_copies_each_node_about_once(
    copied: list[int], values: tuple[ValueColumn, ...], unit_type: str
) -> None:
    plan = AggregatePlan(
        groupings=(CITY,),
        values=values,
        unit=Column("u", unit_type),  # type: ignore[arg-type]
        bounds=BOUNDS,
        hash_key=KEY,
    )
    for render in (duckdb_sql, spark_sql):
        copied.clear()
        query = aggregate_query(plan, exp.Var(this="t"), FAMILIES, wide=True)
        size = sum(1 for _ in query.tree.walk())
        render(query.tree)
        # was 6 to 7 times the tree's nodes (each rank step copied the steps below it)
        assert sum(copied) <= 3 * size
