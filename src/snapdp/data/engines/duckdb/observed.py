"""DuckDB: the distinct observed keys of grouping columns from the data, the shared tree of
:mod:`snapdp.data.engines.relational.observed` rendered for DuckDB (see
:mod:`snapdp.data.engines.observed`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlglot import exp

from snapdp.data.engines.duckdb.families import cast_family
from snapdp.data.engines.duckdb.query import check_columns
from snapdp.data.engines.duckdb.sources import PREFIX
from snapdp.data.engines.relational.dialects import duckdb_sql
from snapdp.data.engines.relational.observed import declared_of, observed_query, typed_tuple
from snapdp.data.model.keys import Key
from snapdp.data.model.predicate import Predicate
from snapdp.data.model.schema import Column

__all__ = ["duckdb_keys"]


def duckdb_keys(
    engine: Any,
    columns: Sequence[Column],
    where: Predicate | None,
    where_columns: Sequence[Column],
) -> list[tuple[Key, ...]]:
    """The distinct typed tuples of ``columns`` among the rows ``where`` keeps."""
    decl = declared_of(columns, where_columns)
    check_columns(list(decl), engine.column_names())
    relation, types = engine._source_of(decl)
    families = {name: cast_family(types.get(name, "VARCHAR")) for name in decl}
    tree = observed_query(columns, where, where_columns, exp.Var(this=relation), families)
    try:
        rows = engine.fetch(duckdb_sql(tree))
    finally:
        if getattr(engine, "_frame", None) is not None:
            engine._con.unregister(f"{PREFIX}frame")
    return [typed_tuple(columns, row) for row in rows]
