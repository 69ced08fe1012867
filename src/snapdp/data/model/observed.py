"""Grouping columns whose keys come from the data (docs/sql.md, "Groups from the data").

A query may group by a declared text, integer or date column without declared keys when it has a
δ: its keys are the values the data hold, shown only when a private selection lets them through
(:mod:`snapdp.data.statistics.selection`). Until the data are read such a column has a
*placeholder* domain of public size, so everything compiled before the release — the parts, the
noise, the ± — depends on the declaration alone.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

from msgspec.structs import replace

from snapdp.data.model.keys import Key
from snapdp.data.model.query import Query
from snapdp.data.model.schema import Column, Schema, keys_product
from snapdp.errors import ParameterError

if TYPE_CHECKING:
    from snapdp.data.model.workload import PlannedQuery

__all__ = [
    "DATA_KEY_TYPES",
    "data_delta",
    "joint_cells",
    "joint_labels",
    "placeholder_size",
    "refuse_with_data_keys",
    "undeclared",
    "with_keys",
    "with_placeholders",
]

#: The types whose keys may come from the data.
DATA_KEY_TYPES = ("text", "integer", "date")


def undeclared(query: Query, schema: Schema) -> tuple[str, ...]:
    """The grouping columns of ``query`` that are declared, without keys or bins (and not
    binned by the query): their keys come from the data."""
    binned = {c for c, _ in query.bins}
    names = {c.name for c in schema.columns}
    return tuple(
        n for n in query.by if n in names and n not in binned and not schema.column(n).is_grouping
    )


def placeholder_size(schema: Schema) -> int:
    """The public size of a placeholder domain: at least the cells one unit can reach (1
    without a privacy unit; min(k, L0) with one; 0 when no bound limits the groups a unit
    reaches, which a release refuses)."""
    if schema.privacy_unit is None:
        return 1
    b = schema.bounds
    bounds = [v for v in (b.max_rows_per_unit, b.max_groups_per_unit) if v is not None]
    return min(bounds) if bounds else 0


def with_placeholders(query: Query, schema: Schema) -> Schema:
    """``schema`` with each data-keyed column of ``query`` given a placeholder domain (as
    it is when there is none)."""
    names = undeclared(query, schema)
    size = max(1, placeholder_size(schema))
    if not names or any(schema.column(n).type not in DATA_KEY_TYPES for n in names):
        return schema
    cols = [schema.column(n) for n in names]
    return schema.with_columns(
        _keyed(c, [_placeholder(c.type, i) for i in range(size if j == 0 else 1)])
        for j, c in enumerate(cols)
    )


def with_keys(schema: Schema, columns: Sequence[str], keys: Sequence[Sequence[Key]]) -> Schema:
    """``schema`` with ``columns`` given ``keys`` (each column's, in order)."""
    return schema.with_columns(
        _keyed(schema.column(n), ks) for n, ks in zip(columns, keys, strict=True)
    )


def _keyed(column: Column, keys: Sequence[Key]) -> Column:
    """``column`` with ``keys`` (its imputed value added if missing, so the column is valid:
    such a key is a cell of the grouping, never a candidate for showing)."""
    ks = list(dict.fromkeys(keys))
    if column.nulls.action == "impute" and column.nulls.value not in ks:
        ks.append(column.nulls.value)  # type: ignore[arg-type]
    return replace(column, keys=tuple(ks))


def _placeholder(kind: str, i: int) -> Key:
    if kind == "integer":
        return i
    if kind == "date":
        return _dt.date.fromordinal(1 + i)
    return f"\x00{i}"


def refuse_with_data_keys(targeted: Sequence[str], consistent: bool | str) -> None:
    """The refusals of a release with groups from the data (docs/sql.md, "Groups from the
    data"): its queries are released at a fixed ε (or a weight's share), so ``targeted`` (the
    labels of queries with a two-phase target ±) must be empty, and without a consistent fit.
    Stated by the planner (a draft, ``snapdp plan``) and checked again by the release."""
    if targeted:
        raise ParameterError(
            "a release with groups from the data needs a fixed epsilon or a weight for every "
            f"query, not a target ±: {targeted[0]!r} has one "
            "(docs/sql.md, 'Groups from the data')",
            parameter="accuracy",
        )
    if consistent:
        raise ParameterError(
            "groups from the data cannot be made consistent: leave `consistent` off "
            "(docs/sql.md, 'Groups from the data')",
            parameter="consistent",
        )


def data_delta(schema: Schema, queries: Sequence[PlannedQuery]) -> Fraction | None:
    """The δ asked for the key selections of ``queries`` (one per grouping and row filter with
    keys from the data, at its first query's δ); None when no query takes keys from the data.
    A release records the δ the selections reach, never more than this."""
    seen: dict[tuple[object, ...], Fraction] = {}
    for pq in queries:
        q = pq.query
        if pq.delta is not None and undeclared(q, schema):
            seen.setdefault((q.by, q.where), pq.delta)
    return sum(seen.values(), Fraction(0)) if seen else None


def joint_cells(groupings: Sequence[Column], joint: Sequence[tuple[Key, ...]] | None) -> int:
    """The number of cells of ``groupings`` (1 when ungrouped). With ``joint`` (groups from the
    data) the first ``len(t)`` groupings have the cells ``joint``, not the product of their keys:
    the product of distinct values is never formed."""
    n = 1
    skip = 0
    if joint is not None:
        n = len(joint)
        skip = len(joint[0]) if joint else 0
    for g in groupings[skip:]:
        n *= g.n_cells
    return n


def joint_labels(
    groupings: Sequence[Column], joint: Sequence[tuple[Key, ...]] | None
) -> list[tuple[Key | str, ...]]:
    """The keys of each cell, row-major (:func:`~snapdp.data.model.schema.keys_product`); with
    ``joint``, its tuples in its order for the first groupings, then the product of the rest."""
    if joint is None:
        return keys_product(groupings)
    if not joint:
        return []
    rest = keys_product(groupings[len(joint[0]) :])
    return [(*t, *r) for t in joint for r in rest]
