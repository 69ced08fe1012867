"""DuckDB: the distinct observed keys of undeclared grouping columns (see
:mod:`snapdp.data.engines.observed`)."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from typing import Any

from snapdp.data.engines.duckdb.query import cast_sql
from snapdp.data.engines.duckdb.sources import PREFIX, quote_identifier
from snapdp.data.engines.relational import exprs
from snapdp.data.engines.relational.dialects import duckdb_sql
from snapdp.data.model.keys import Key
from snapdp.data.model.predicate import Predicate
from snapdp.data.model.schema import Column

__all__ = ["duckdb_keys", "typed_tuple"]

_P = "_snapdp_o"


def duckdb_keys(
    engine: Any,
    columns: Sequence[Column],
    where: Predicate | None,
    where_columns: Sequence[Column],
) -> list[tuple[Key, ...]]:
    """The distinct typed tuples of ``columns`` among the rows ``where`` keeps."""
    decl: dict[str, Column] = {c.name: c for c in where_columns}
    decl.update({c.name: c for c in columns})
    relation, types = engine._source_of(decl)
    alias = {name: f"{_P}c{i}" for i, name in enumerate(decl)}
    casts = [f"{cast_sql(n, c, types)} AS {alias[n]}" for n, c in decl.items()]
    keys = [
        duckdb_sql(exprs.with_null_rule(c, exprs.column(alias[c.name]))) + f" AS {_P}k{i}"
        for i, c in enumerate(columns)
    ]
    conds = [f"{_P}k{i} IS NOT NULL" for i in range(len(columns))]
    # a date outside Python's years 1..9999 is no key (no declared key can equal it either)
    conds += [
        f"{_P}k{i} BETWEEN DATE '0001-01-01' AND DATE '9999-12-31'"
        for i, c in enumerate(columns)
        if c.type == "date"
    ]
    inner = f"SELECT {', '.join(casts)} FROM {relation}"
    if where is not None:
        values = {n: exprs.column(a) for n, a in alias.items()}
        inner += f" WHERE {duckdb_sql(exprs.predicate(where, values, decl))}"
    names = ", ".join(f"{_P}k{i}" for i in range(len(columns)))
    sql = (
        f"SELECT DISTINCT {names} FROM (SELECT {', '.join(keys)} FROM ({inner}) AS "
        f"{quote_identifier(_P + 's')}) WHERE {' AND '.join(conds)}"
    )
    try:
        rows = engine.fetch(sql)
    finally:
        if getattr(engine, "_frame", None) is not None:
            engine._con.unregister(f"{PREFIX}frame")
    return [typed_tuple(columns, row) for row in rows]


def typed_tuple(columns: Sequence[Column], row: Sequence[Any]) -> tuple[Key, ...]:
    """An engine's row as typed keys (an integer as int, a date as a date, text as str)."""
    out: list[Key] = []
    for c, v in zip(columns, row, strict=True):
        if c.type == "integer":
            out.append(int(v))
        elif c.type == "date":
            out.append(v if isinstance(v, _dt.date) else _dt.date.fromisoformat(str(v)))
        elif c.type == "boolean":
            out.append(bool(v))
        else:
            out.append(str(v))
    return tuple(out)
