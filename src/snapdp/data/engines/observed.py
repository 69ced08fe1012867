"""The keys a release finds in the data, for groups nobody declared (docs/sql.md, "Groups from the
data"): one query returning the DISTINCT tuples of the grouping columns, each cast to its
declared type, after its null rule and the row filter (a tuple with a null is no key), written
once as a sqlglot tree (:mod:`snapdp.data.engines.relational.observed`) and run by DuckDB or
Spark. Only the release session calls it, and it shows none of them except through the private
selection of :mod:`snapdp.data.statistics.selection`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from snapdp.data.model.keys import Key
from snapdp.data.model.predicate import Predicate
from snapdp.data.model.schema import Column
from snapdp.errors import ParameterError

__all__ = ["observed_keys"]


def observed_keys(
    engine: Any,
    columns: Sequence[Column],
    where: Predicate | None,
    where_columns: Sequence[Column],
) -> list[tuple[Key, ...]]:
    """The distinct typed tuples of ``columns`` in ``engine``'s rows that ``where`` keeps (in no
    particular order: the caller orders them by a keyed hash)."""
    own = getattr(engine, "observed_keys", None)
    if own is not None:  # an engine that answers itself (the tests' reference engine)
        out: list[tuple[Key, ...]] = list(own(tuple(columns), where, tuple(where_columns)))
        return out
    kind = type(engine).__module__
    if kind.startswith("snapdp.data.engines.duckdb"):
        from snapdp.data.engines.duckdb.observed import duckdb_keys

        return duckdb_keys(engine, columns, where, where_columns)
    if kind.startswith("snapdp.data.engines.spark"):
        from snapdp.data.engines.spark.observed import spark_keys

        return spark_keys(engine, columns, where, where_columns)
    raise ParameterError(
        f"{engine.describe()} cannot find groups in the data: declare the keys of the GROUP BY "
        "columns (docs/sql.md, 'Groups from the data')",
        parameter="keys",
    )
