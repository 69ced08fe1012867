"""Spark: the distinct observed keys of undeclared grouping columns (see
:mod:`snapdp.data.engines.observed`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlglot import exp

from snapdp.data.engines._cells import frame_to_arrow
from snapdp.data.engines.duckdb.observed import typed_tuple
from snapdp.data.engines.relational import exprs
from snapdp.data.engines.relational.dialects import spark_sql
from snapdp.data.engines.spark.engine import _family
from snapdp.data.engines.spark.reading import from_pandas, quote_identifier
from snapdp.data.model.keys import Key
from snapdp.data.model.predicate import Predicate
from snapdp.data.model.schema import Column

__all__ = ["spark_keys"]


def spark_keys(
    engine: Any,
    columns: Sequence[Column],
    where: Predicate | None,
    where_columns: Sequence[Column],
) -> list[tuple[Key, ...]]:
    """The distinct typed tuples of ``columns`` among the rows ``where`` keeps."""
    from pyspark.sql import functions as sf

    decl: dict[str, Column] = {c.name: c for c in where_columns}
    decl.update({c.name: c for c in columns})
    if engine._pandas is not None:
        source = from_pandas(engine._session, frame_to_arrow(engine._pandas, decl))
    else:
        source = engine._df
    dtypes = dict(source.dtypes)
    src = {name: f"_s{i}" for i, name in enumerate(decl)}
    df = source.select(*[sf.col(quote_identifier(n)).alias(src[n]) for n in decl])
    if where is not None:
        wc = {c.name: c for c in where_columns}
        values = {n: _cast(c, src[n], dtypes[n]) for n, c in wc.items()}
        df = df.where(_expr(exprs.predicate(where, values, wc)))
    keys = [
        _expr(exprs.with_null_rule(c, _cast(c, src[c.name], dtypes[c.name]))).alias(f"_k{i}")
        for i, c in enumerate(columns)
    ]
    df = df.select(*keys).dropna()
    for i, c in enumerate(columns):  # a date outside Python's years 1..9999 is no key
        if c.type == "date":
            df = df.where(sf.expr(f"_k{i} BETWEEN DATE '0001-01-01' AND DATE '9999-12-31'"))
    df = df.distinct()
    return [typed_tuple(columns, tuple(row)) for row in df.collect()]


def _cast(column: Column, name: str, dtype: str) -> exp.Expression:
    """The contract's cast of the source column ``name`` of Spark type ``dtype``."""
    return exprs.cast_native(exprs.column(name), _family(dtype), column.type)


def _expr(node: exp.Expression) -> Any:
    """A node of the shared tree as a Spark column."""
    from pyspark.sql import functions as sf

    return sf.expr(spark_sql(node))
