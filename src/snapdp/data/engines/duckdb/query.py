"""The DuckDB engine's query: an :class:`~snapdp.data.engines.base.AggregatePlan` as one SQL
query, the shared tree of :mod:`snapdp.data.engines.relational.plan` rendered for DuckDB; the
plan checks and the casts ``snapdp check`` reads.

Internal names: the source's columns are read once, under aliases ``_snapdp_…`` chosen here; no
user column name appears anywhere else in the query, so no user column can collide with them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from msgspec.structs import replace
from sqlglot import exp

from snapdp.data.engines.base import AggregatePlan
from snapdp.data.engines.duckdb.families import cast_family
from snapdp.data.engines.relational import exprs
from snapdp.data.engines.relational.dialects import duckdb_sql
from snapdp.data.engines.relational.plan import aggregate_query
from snapdp.data.model.schema import Column
from snapdp.errors import ParameterError, not_in_source

__all__ = [
    "cast_sql",
    "check_columns",
    "check_plan",
    "null_sql",
    "plan_sql",
    "unread_type",
]

_HEX32 = re.compile(r"[0-9a-fA-F]{32}")


def plan_sql(plan: AggregatePlan, relation: str, types: dict[str, str]) -> tuple[str, list[str]]:
    """The query for ``plan`` over ``relation`` (the source's column ``types``) and, per value
    column, how its squares come back (the shared tree of :mod:`.relational.plan`).

    A plan without a privacy unit is rendered once per process for its relation and types (a
    pure function of public parameters: the page and notebooks re-run the same releases); its
    ``hash_key`` keys only the bounding, so it is left out of the cache key. A plan with a unit
    is rendered every time (its key is fresh per release and is not kept), and so is a plan
    whose keys were read from the data (they are not public: nothing keeps them past the
    release)."""
    families = tuple(
        (name, cast_family(types.get(name, "VARCHAR"))) for name in plan.used_columns()
    )
    if plan.unit is not None or plan.by_value or plan.joint is not None:
        return _render(plan, relation, families)
    keyless = replace(plan, hash_key=_NO_KEY)
    try:
        hash(keyless)
    except TypeError:  # a field built from a list, not a tuple: render without the cache
        return _render(plan, relation, families)
    sql, layout = _cached_render(keyless, relation, families)
    return sql, list(layout)


_NO_KEY = "0" * 32


@functools.lru_cache(maxsize=64)
def _cached_render(
    plan: AggregatePlan, relation: str, families: tuple[tuple[str, str], ...]
) -> tuple[str, tuple[str, ...]]:
    sql, layout = _render(plan, relation, families)
    return sql, tuple(layout)


def _render(
    plan: AggregatePlan, relation: str, families: tuple[tuple[str, str], ...]
) -> tuple[str, list[str]]:
    query = aggregate_query(plan, exp.Var(this=relation), dict(families), wide=True)
    return duckdb_sql(query.tree), query.layout


def unread_type(name: str, column: Column, types: dict[str, str]) -> str | None:
    """The type of the source column ``name`` when the contract never reads it as
    ``column.type`` (:func:`~snapdp.data.engines.relational.exprs.reads`: every cell is null),
    else None. From the source's schema alone."""
    source = types.get(name, "VARCHAR")
    return None if exprs.reads(cast_family(source), column.type) else source


def cast_sql(name: str, column: Column, types: dict[str, str]) -> str:
    """SQL: the source column ``name`` cast to ``column.type`` by the contract's rules."""
    family = cast_family(types.get(name, "VARCHAR"))
    return duckdb_sql(exprs.cast_native(exprs.column(name), family, column.type))


def null_sql(column: Column) -> str:
    """SQL: a null of ``column.type``'s SQL type (a cell of a file that lacks the column)."""
    return duckdb_sql(exprs.null(column.type))


def check_plan(plan: AggregatePlan, names: Sequence[str]) -> None:
    check_columns(plan.used_columns(), names)
    if not _HEX32.fullmatch(plan.hash_key):
        raise ParameterError("`hash_key` must be 32 hex digits", parameter="hash_key")
    if plan.unit is not None and plan.unit.type not in ("integer", "text"):
        raise ParameterError(
            f"the privacy unit {plan.unit.name!r} must be declared integer or text, not "
            f"{plan.unit.type!r}",
            parameter="privacy_unit",
        )
    if plan.null_units not in ("drop", "own"):
        raise ParameterError(
            f"`null_units` must be 'drop' or 'own', not {plan.null_units!r}",
            parameter="null_units",
        )


def check_columns(used: Sequence[str], names: Sequence[str]) -> None:
    """Every used column must be in the source (its names are public: header or schema)."""
    missing = [c for c in used if c not in names]
    if missing:
        raise ParameterError(not_in_source(missing[0]), parameter="columns")
