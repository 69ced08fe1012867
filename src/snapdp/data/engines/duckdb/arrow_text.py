"""Arrow tables as the DuckDB engine hands them to DuckDB (docs/data.md, "What does not fit"):
text as bytes (DuckDB validates UTF-8 when it scans Arrow text and fails the whole query on one
bad cell; as bytes, the engine's cast decodes each cell and makes a bad one null), and the column
types DuckDB cannot scan or rescales made readable (:func:`as_duckdb_scans`)."""

from __future__ import annotations

from typing import Any

from snapdp.data.engines._cells import exact_numbers, rescaled

__all__ = ["as_duckdb_scans", "bytes_type"]


def bytes_type(arrow_type: Any) -> Any:
    """The Arrow bytes type of a text type (string, large string, string view, a dictionary of
    strings); any other type unchanged."""
    import pyarrow as pa

    t = arrow_type
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_string(t):
        return pa.binary()
    if pa.types.is_large_string(t):
        return pa.large_binary()
    if pa.types.is_string_view(t):
        return pa.binary_view()
    return arrow_type


def as_duckdb_scans(table: Any) -> tuple[Any, list[str]]:
    """``table`` as the DuckDB engine hands it to DuckDB, and the names of its text columns: every
    text column as bytes (no copy for plain strings): DuckDB validates UTF-8 when it scans Arrow
    text and fails the whole query on one bad cell; as bytes, the cast decodes each cell and
    makes a bad one null.

    Also every column of a type DuckDB rescales when it scans it (:func:`rescaled`) as nulls of
    its type: DuckDB fails the whole query on one value past its range (a time-zoned timestamp of
    year 300,000), and it scans a table's first column to count the rows of a release that reads
    no column. The contract casts such a column to null whatever it holds, so nothing else
    changes; chosen from the schema alone.

    And the two number types DuckDB cannot scan at all (it refused the whole table with its own
    error): half floats are widened to single floats and 256-bit decimals of at most 38 digits
    to 128-bit ones (both exact); a wider decimal is refused, naming its column."""
    import pyarrow as pa

    blobs: list[str] = []
    columns = []
    for name, column in zip(table.column_names, table.columns, strict=True):
        if rescaled(column.type):
            columns.append(pa.nulls(len(column), column.type))
            continue
        column = exact_numbers(name, column, "DuckDB")
        target = bytes_type(column.type)
        if target != column.type:
            if pa.types.is_dictionary(column.type):
                column = pa.chunked_array(
                    [c.dictionary_decode() for c in column.chunks], column.type.value_type
                )
            column = pa.chunked_array([c.view(target) for c in column.chunks], target)
            blobs.append(name)
        columns.append(column)
    return pa.Table.from_arrays(columns, names=table.column_names), blobs
