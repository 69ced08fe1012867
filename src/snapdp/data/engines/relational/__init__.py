"""The engine contract as one sqlglot expression tree, rendered for DuckDB and for Spark.

:mod:`.exprs` builds the nodes (casts, typed literals, row filter, keys, bins, quanta);
:mod:`.dialects` renders them through two thin dialect subclasses (docs/architecture.md).
"""
