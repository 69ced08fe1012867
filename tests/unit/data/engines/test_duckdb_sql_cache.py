"""The DuckDB engine renders a unit-less plan's query once per process (issue 32: rendering
through sqlglot was most of an in-process release's Python time once the bins were cheap): the
cached text is the text rendered afresh, whatever the release's hash key (which only keys the
bounding); a plan with a privacy unit is rendered every time and never kept."""

from __future__ import annotations

from fractions import Fraction

from msgspec.structs import force_setattr

from snapdp.data.engines.base import AggregatePlan, ValueColumn
from snapdp.data.engines.duckdb import query
from snapdp.data.engines.duckdb.families import cast_family
from snapdp.data.model.schema import Column, ContributionBounds

G = Column("g", "integer", keys=(0, 1, 2))
B = Column("b", "integer", bins=tuple(Fraction(e) for e in range(0, 101, 5)))
X = ValueColumn(Column("x", "decimal", lower=Fraction(0), upper=Fraction(10)), 2, 0, 1000)
U = Column("u", "integer")
TYPES = {"g": "BIGINT", "b": "VARCHAR", "x": "DOUBLE", "u": "BIGINT"}
KEY_A, KEY_B = "0123456789abcdef" * 2, "fedcba9876543210" * 2


def _fresh(plan: AggregatePlan) -> tuple[str, list[str]]:
    families = tuple(
        (name, cast_family(TYPES.get(name, "VARCHAR"))) for name in plan.used_columns()
    )
    return query._render(plan, "t", families)


def test_a_unit_less_plan_is_rendered_once_and_alike() -> None:
    query._cached_render.cache_clear()
    plan = AggregatePlan(groupings=(G, B), values=(X,), hash_key=KEY_A)
    first = query.plan_sql(plan, "t", TYPES)
    assert first == _fresh(plan)
    again = query.plan_sql(AggregatePlan(groupings=(G, B), values=(X,), hash_key=KEY_B), "t", TYPES)
    assert again == first
    info = query._cached_render.cache_info()
    assert (info.hits, info.misses) == (1, 1)
    other = query.plan_sql(plan, "t", {**TYPES, "x": "VARCHAR"})  # other source types
    assert other != first and other == _fresh_with(plan, {**TYPES, "x": "VARCHAR"})


def _fresh_with(plan: AggregatePlan, types: dict[str, str]) -> tuple[str, list[str]]:
    families = tuple((n, cast_family(types.get(n, "VARCHAR"))) for n in plan.used_columns())
    return query._render(plan, "t", families)


def test_a_plan_with_a_unit_is_never_kept() -> None:
    query._cached_render.cache_clear()
    bounds = ContributionBounds(2)
    a = AggregatePlan(groupings=(G,), values=(X,), unit=U, bounds=bounds, hash_key=KEY_A)
    b = AggregatePlan(groupings=(G,), values=(X,), unit=U, bounds=bounds, hash_key=KEY_B)
    sql_a, sql_b = query.plan_sql(a, "t", TYPES), query.plan_sql(b, "t", TYPES)
    assert sql_a == _fresh(a) and sql_b == _fresh(b)
    assert sql_a != sql_b  # the key is in the bounding
    assert query._cached_render.cache_info().currsize == 0


def test_an_unhashable_plan_is_rendered_without_the_cache() -> None:
    from snapdp.data.model.predicate import InList

    query._cached_render.cache_clear()
    where = InList("g", (0, 1))
    force_setattr(where, "values", [0, 1])  # a list where a tuple belongs: unhashable
    plan = AggregatePlan(groupings=(G,), where=where, where_columns=(G,))
    assert query.plan_sql(plan, "t", TYPES) == _fresh(plan)
    assert query._cached_render.cache_info().currsize == 0


def test_a_plan_with_keys_from_the_data_is_never_kept() -> None:
    """Keys read from the data are not public: the process keeps no query that spells them."""
    query._cached_render.cache_clear()
    observed = Column("city", "text", keys=("Lyon", "Oslo"))
    by_value = AggregatePlan(groupings=(observed,), values=(X,), by_value=("city",))
    joint = AggregatePlan(groupings=(observed, G), joint=(("Lyon", 0), ("Oslo", 2)))
    for plan in (by_value, joint):
        assert query.plan_sql(plan, "t", TYPES) == _fresh(plan)
    assert query._cached_render.cache_info().currsize == 0
