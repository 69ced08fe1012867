"""The engine for a source: DuckDB or Spark, imported lazily (Spark only when asked for).

One place builds engines: the CLI (``make_engine``, by the ``--engine`` flag) and the Python API
(``default_engine``, by the type of the data) both come here (docs/data.md).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from snapdp.data.engines.base import Engine
from snapdp.data.engines.frames import arrow_source
from snapdp.data.model.schema import Schema
from snapdp.errors import ParameterError

__all__ = ["default_engine", "make_engine"]


def make_engine(
    name: str,
    source: object,
    schema: Schema,
    *,
    memory_limit: str | None = None,
    glob: bool = False,
) -> Any:
    """The engine ``name`` over ``source`` (imported lazily: Spark only when asked for).

    ``memory_limit`` bounds DuckDB's memory (it spills to a private temporary folder beyond it);
    Spark's memory is set in its own session. ``glob``: read a path as a file pattern."""
    module_name = "snapdp.data.engines." + ("spark" if name == "spark" else "duckdb") + ".engine"
    class_name = "SparkEngine" if name == "spark" else "DuckDBEngine"
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        raise ParameterError(
            f"`--engine {name}` is not available in this installation", parameter="engine"
        ) from None
    if name == "spark":
        if memory_limit is not None:
            raise ParameterError(
                "`--memory-limit` is DuckDB's; set Spark's memory in its session "
                "(docs/data.md, 'Running on a cluster')",
                parameter="memory_limit",
            )
        if hasattr(source, "to_pandas"):  # an Arrow table (the demo)
            source = source.to_pandas()
        return getattr(module, class_name)(source, csv=schema.csv, glob=glob)
    if not isinstance(source, (str, Path)):
        return getattr(module, class_name)(source, csv=schema.csv, memory_limit=memory_limit)
    return getattr(module, class_name)(source, csv=schema.csv, glob=glob, memory_limit=memory_limit)


def default_engine(data: object, schema: Schema) -> Engine:
    """The engine for ``data``: Spark for a Spark DataFrame, else DuckDB (imported lazily); a
    polars frame or a DuckDB relation is read into an Arrow table first
    (:func:`snapdp.data.engines.frames.arrow_source`)."""
    if data is None:
        raise ParameterError(
            "`data` is required (a path, a DataFrame or an Arrow table)", parameter="data"
        )
    data = arrow_source(data)
    if type(data).__module__.startswith("pyspark"):
        module = importlib.import_module("snapdp.data.engines.spark.engine")
        engine: Engine = module.SparkEngine(data, csv=schema.csv)
        return engine
    module = importlib.import_module("snapdp.data.engines.duckdb.engine")
    engine = module.DuckDBEngine(data, csv=schema.csv)
    return engine
