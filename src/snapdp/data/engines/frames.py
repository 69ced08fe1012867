"""In-memory sources a notebook holds, turned into Arrow tables at the API's door
(docs/notebooks.md, "Sources").

A polars DataFrame (or LazyFrame) and a DuckDB relation become a ``pyarrow.Table`` with the
types their columns carry (never types guessed from the values), and the engine then reads that
table as any Arrow table, casting each column to its declared type by the contract's rules
(docs/data.md, "What does not fit"). Other sources pass through unchanged. A source that cannot
be read as a whole is refused with a message that names its kind only, never its content
(DESIGN §8.1).
"""

from __future__ import annotations

from typing import Any

from snapdp.errors import ParameterError

__all__ = ["arrow_source", "source_kind"]


def source_kind(data: object) -> str | None:
    """ "polars", "polars-lazy" or "duckdb" for the sources this module converts; else None."""
    module = type(data).__module__ or ""
    name = type(data).__name__
    if module.startswith("polars") and name == "DataFrame":
        return "polars"
    if module.startswith("polars") and name == "LazyFrame":
        return "polars-lazy"
    if module.startswith(("duckdb", "_duckdb")) and name == "DuckDBPyRelation":
        return "duckdb"
    return None


def arrow_source(data: object) -> object:
    """``data`` as a ``pyarrow.Table`` when it is a polars DataFrame or LazyFrame or a DuckDB
    relation (every row read now, once); any other ``data`` unchanged."""
    kind = source_kind(data)
    if kind is None:
        return data
    source: Any = data
    try:
        return _to_arrow(source, kind)
    except Exception:  # its message may quote rows (DESIGN §8.1): raised below, without it
        pass
    what = "DuckDB relation" if kind == "duckdb" else "polars frame"
    raise ParameterError(  # outside the handler, so the refusal carries no __context__
        f"`data`: the {what} cannot be read as a whole (its query or a column failed); "
        "nothing was read or spent",
        parameter="data",
    )


def _to_arrow(source: Any, kind: str) -> object:
    if kind == "polars":
        return source.to_arrow()
    if kind == "polars-lazy":
        return source.collect().to_arrow()
    if hasattr(source, "to_arrow_table"):
        return source.to_arrow_table()
    return source.arrow()  # DuckDB before 1.4
