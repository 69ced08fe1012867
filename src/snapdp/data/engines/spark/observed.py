"""Spark: the distinct observed keys of grouping columns from the data, the shared tree of
:mod:`snapdp.data.engines.relational.observed` rendered for Spark and run by ONE ``spark.sql``
over the source's temporary view, as the aggregate query (see
:mod:`snapdp.data.engines.observed`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlglot import exp

from snapdp.data.engines._cells import frame_to_arrow
from snapdp.data.engines.relational.dialects import spark_sql
from snapdp.data.engines.relational.observed import declared_of, observed_query, typed_tuple
from snapdp.data.engines.spark.engine import _VIEWS, _family, _run, blind_to_the_data
from snapdp.data.engines.spark.reading import from_pandas
from snapdp.data.model.keys import Key
from snapdp.data.model.predicate import Predicate
from snapdp.data.model.schema import Column
from snapdp.errors import ParameterError, not_in_source

__all__ = ["spark_keys"]


def spark_keys(
    engine: Any,
    columns: Sequence[Column],
    where: Predicate | None,
    where_columns: Sequence[Column],
) -> list[tuple[Key, ...]]:
    """The distinct typed tuples of ``columns`` among the rows ``where`` keeps."""
    decl = declared_of(columns, where_columns)
    present = set(engine.column_names())
    for name in decl:
        if name not in present:
            raise ParameterError(not_in_source(name), parameter="columns")
    if engine._pandas is not None:
        source = from_pandas(engine._session, frame_to_arrow(engine._pandas, decl))
    else:
        source = engine._df
    families = {name: _family(dtype) for name, dtype in source.dtypes if name in decl}
    view = f"_snapdp_source_{next(_VIEWS)}"
    tree = observed_query(columns, where, where_columns, exp.to_table(view), families)
    with blind_to_the_data(source.sparkSession):
        rows = _run(source, view, spark_sql(tree)).collect()
    return [typed_tuple(columns, tuple(row)) for row in rows]
