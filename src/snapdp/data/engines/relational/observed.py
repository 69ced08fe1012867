"""The observed-keys query of groups from the data as ONE sqlglot tree for both engines
(docs/sql.md, "Groups from the data"; :mod:`snapdp.data.engines.observed` calls it).

The query is three steps, each as the aggregate query of :mod:`.plan` does it:

* ``s0``: the used source columns (the grouping columns and those the row filter reads), cast by
  the contract's rules under internal aliases (no user column name appears anywhere else; a
  text cell read more than once by its cast is computed once below it,
  :func:`~snapdp.data.engines.relational.exprs.cast_select`);
* ``s1``: the row filter on the cast values, and each grouping column's value after its null
  rule (drop: null; impute: the declared value);
* the DISTINCT tuples of those values with no null in them, and no date outside Python's years
  1 to 9999 (no declared key can equal such a date, and none could be shown).

The tree is rendered by :mod:`.dialects`: DuckDB runs it on its connection, Spark with one
``spark.sql`` over the source's temporary view, as the aggregate query.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from sqlglot import exp

from snapdp.data.engines.relational import exprs
from snapdp.data.model.keys import Key
from snapdp.data.model.predicate import Predicate
from snapdp.data.model.schema import Column

__all__ = ["declared_of", "observed_query", "typed_tuple"]

P = "_snapdp_o"
_FIRST, _LAST = _dt.date(1, 1, 1), _dt.date(9999, 12, 31)


def declared_of(columns: Sequence[Column], where_columns: Sequence[Column]) -> dict[str, Column]:
    """Every column the query reads, once, with its declaration (the grouping's last)."""
    decl: dict[str, Column] = {c.name: c for c in where_columns}
    decl.update({c.name: c for c in columns})
    return decl


def observed_query(
    columns: Sequence[Column],
    where: Predicate | None,
    where_columns: Sequence[Column],
    source: exp.Expression,
    families: Mapping[str, str],
) -> exp.Select:
    """The DISTINCT typed tuples of ``columns`` among the rows of ``source`` that ``where``
    keeps; ``families``: each used column's family for
    :func:`~snapdp.data.engines.relational.exprs.cast_native`. Output columns ``_snapdp_ok<i>``."""
    decl = declared_of(columns, where_columns)
    alias = {name: f"{P}c{i}" for i, name in enumerate(decl)}
    casts = [(n, families[n], c.type, alias[n]) for n, c in decl.items()]
    s0 = exprs.cast_select(casts, source, f"{P}l")
    keys = [f"{P}k{i}" for i in range(len(columns))]
    s1 = exp.select(
        *(
            exp.alias_(exprs.with_null_rule(c, exprs.column(alias[c.name])), k)
            for c, k in zip(columns, keys, strict=True)
        )
    ).from_(s0.subquery(f"{P}s0"))
    if where is not None:
        values = {n: exprs.column(a) for n, a in alias.items()}
        s1 = s1.where(exprs.predicate(where, values, decl))
    conds: list[exp.Expression] = [
        exp.Not(this=exp.Is(this=exprs.column(k), expression=exp.Null())) for k in keys
    ]
    for c, k in zip(columns, keys, strict=True):
        if c.type == "date":
            conds.append(
                exp.Between(
                    this=exprs.column(k),
                    low=exprs.typed_literal(c, _FIRST),
                    high=exprs.typed_literal(c, _LAST),
                )
            )
    return (
        exp.select(*(exprs.column(k) for k in keys))
        .distinct()
        .from_(s1.subquery(f"{P}s1"))
        .where(*conds)
    )


def typed_tuple(columns: Sequence[Column], row: Sequence[Any]) -> tuple[Key, ...]:
    """An engine's row as typed keys (an integer as int, a date as a date, text as str, a
    decimal's double as the exact fraction)."""
    out: list[Key] = []
    for c, v in zip(columns, row, strict=True):
        if c.type == "integer":
            out.append(int(v))
        elif c.type == "date":
            out.append(v if isinstance(v, _dt.date) else _dt.date.fromisoformat(str(v)))
        elif c.type == "boolean":
            out.append(bool(v))
        elif c.type == "decimal":
            out.append(Fraction(float(v)))
        else:
            out.append(str(v))
    return tuple(out)
