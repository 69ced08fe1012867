"""Parquet files as the DuckDB engine reads them: the Arrow dataset of the text path, and a folder
or pattern whose files do not all share one schema, read per group of files of one schema
(docs/data.md, "Reading the data").

Reading such files at each column's common type let one file's type change every other file's
values (a DECIMAL(38, 0) file made the DECIMAL(38, 2) cell 1.25 of every other file 1), or fail
the read (a DATE file beside a BIGINT one). So each group of files of one schema is read at its
own types and cast by the declaration, as a file alone is, and the groups' cast rows are put
together: per file, the values of that file read alone, whatever the other files hold. Groups
come from the files' schemas alone, never from their values.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from snapdp.data.engines.duckdb.arrow_text import bytes_type
from snapdp.data.engines.duckdb.connection import sql_string
from snapdp.data.engines.duckdb.families import (
    GLOB_CHARS,
    HIVE_AS_TEXT,
    PREFIX,
    TEXT_BLOB,
    cast_family,
    quote_identifier,
    source_family,
)
from snapdp.data.engines.relational import builders, exprs
from snapdp.data.engines.relational.dialects import duckdb_sql
from snapdp.data.model.schema import Column
from snapdp.errors import ParameterError

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection

__all__ = ["ParquetGroups", "arrow_dataset", "schema_groups"]

_P = PREFIX


def schema_groups(files: list[str], label: str, base: str | None) -> list[list[str]]:
    """``files`` in groups of one Arrow schema (names, types and nullability, in order; metadata
    ignored) and one layout (:func:`_layout`), each group in the order of ``files``, the groups
    in the order of their first file. Reads each file's footer, never its rows.

    The layout is part of a group's key because DuckDB refuses, or reads without their
    partition columns, files whose key=value folders differ: one person's file of the same
    schema in another folder (the folder's root beside ``p=1/``) made the whole source
    unreadable, where the same file of another schema was read in a group of its own, so that
    whether a release failed depended on that file's types."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    groups: dict[tuple[object, ...], list[str]] = {}
    try:
        for file in files:
            schema = pq.read_schema(file)
            key = (
                tuple((f.name, str(f.type), f.nullable) for f in schema),
                _layout(file, base),
            )
            groups.setdefault(key, []).append(file)
    except (pa.ArrowException, OSError, ValueError):
        raise ParameterError(
            f"`data` {label!r} cannot be read as a Parquet table", parameter="data"
        ) from None
    return list(groups.values())


def _layout(file: str, base: str | None) -> tuple[str, ...]:
    """The keys of ``file``'s key=value folders (:func:`_key_folders`), in order: the partition
    columns DuckDB reads from its path. From the path alone."""
    return tuple(folder.split("=", 1)[0] for folder in _key_folders(file, base))


def _key_folders(file: str, base: str | None) -> list[str]:
    """The key=value folders of ``file``'s path (below ``base``, a folder's path; the whole path
    for a pattern's match), in order. A folder whose name holds a pattern character is not one
    (:meth:`ParquetGroups._literal` leaves it out of the link DuckDB reads)."""
    path = Path(file)
    parts = path.relative_to(base).parts if base is not None else path.parts
    return [p for p in parts[:-1] if "=" in p and not GLOB_CHARS.intersection(p)]


def arrow_dataset(
    files: list[str], base: str | None, hive: list[str] | None, names: list[str]
) -> tuple[Any, list[str]]:
    """The Parquet ``files``, of one schema (:func:`schema_groups`), as an Arrow dataset with
    their text columns as bytes, and the names of those columns: DuckDB's Parquet reader fails
    the whole scan on one cell that is not UTF-8, where the contract makes that cell null
    (docs/data.md, "What does not fit").

    ``hive``: the keys of the key=value folders between ``base`` and the files (None: the
    columns of ``names``, DuckDB's, that are not in the files), read as text whatever they look
    like (``hive_types_autocast = false``). Raises Arrow's and the OS's errors."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    schema = ds.dataset(files[0], format="parquet").schema  # the files share one schema
    keys = hive if hive is not None else [n for n in names if n not in schema.names]
    fixed = set(keys)
    schema = pa.schema(
        [*(f for f in schema if f.name not in fixed), *(pa.field(n, pa.string()) for n in keys)]
    )
    partitioning = (
        ds.partitioning(pa.schema([(n, pa.string()) for n in keys]), flavor="hive")
        if keys
        else None
    )
    fields = [f if f.name in fixed else f.with_type(_scanned(f.type)) for f in schema]
    blobs = [f.name for f in schema if f.name not in fixed and bytes_type(f.type) != f.type]
    dataset = ds.dataset(
        files,
        schema=pa.schema(fields),
        format="parquet",
        partitioning=partitioning,
        partition_base_dir=base,
    )
    return dataset, blobs


def _scanned(arrow_type: Any) -> Any:
    """The type a file's column is scanned at on the Arrow path: text as bytes
    (:func:`bytes_type`), and the number types DuckDB cannot scan from Arrow as DuckDB's own
    Parquet reader reads them, so that both paths give the same values: a half float as a single
    float, a 256-bit decimal of at most 38 digits as the 128-bit one, a wider one as a double,
    and a duration (stored as a 64-bit integer, which DuckDB's reader reads) as that integer.
    From the schema alone."""
    import pyarrow as pa

    if pa.types.is_duration(arrow_type):
        return pa.int64()
    if pa.types.is_float16(arrow_type):
        return pa.float32()
    if pa.types.is_decimal256(arrow_type):
        if arrow_type.precision > 38:
            return pa.float64()
        return pa.decimal128(arrow_type.precision, arrow_type.scale)
    return bytes_type(arrow_type)


def hive_keys(files: list[str], base: str) -> list[str]:
    """The keys of the key=value folders between ``base`` and each of ``files``, in order of
    first appearance: the columns DuckDB's hive partitioning reads from the paths (a file's own
    column of that name gives way to it, as in DuckDB). Not pyarrow's discovery, which names
    every column of the files when no such folder is found, so that a folder of plain files had
    its text read as strings (a cell that is not UTF-8 was then a value, or failed the read)."""
    keys: dict[str, None] = {}
    for file in files:
        for part in Path(file).relative_to(base).parts[:-1]:
            if "=" in part:
                keys.setdefault(part.split("=", 1)[0], None)
    return list(keys)


class ParquetGroups:
    """A folder's or pattern's Parquet files in groups of one schema (:func:`schema_groups`, at
    least two), each read at its own types: by DuckDB's reader, or, when a plan reads a text
    column of the group's files, by Arrow's (:func:`arrow_dataset`) — as each file alone.

    ``base``: a folder's path (its key=value folders are partition columns, as DuckDB's
    ``hive_partitioning = true``); None for a pattern (DuckDB finds such folders itself).
    ``private``: a private temporary folder, for links to files whose path DuckDB would take as
    a pattern."""

    def __init__(
        self,
        con: DuckDBPyConnection,
        duckdb: Any,
        label: str,
        groups: list[list[str]],
        base: str | None,
        private: Callable[[], str],
    ) -> None:
        self._con = con
        self._duckdb = duckdb
        self._label = label
        self._groups = groups
        self._base = base
        self._private = private
        partitioning = ", hive_partitioning = true" if base is not None else ""
        self._reads: list[str] = []
        self._flat: list[str] = []  # the same without the key=value folders' columns
        self._types: list[dict[str, str]] = []
        for files in groups:
            listed = ", ".join(sql_string(self._literal(f)) for f in files)
            self._reads.append(f"read_parquet([{listed}]{partitioning}, {HIVE_AS_TEXT})")
            self._flat.append(f"read_parquet([{listed}], hive_partitioning = false)")
            self._types.append(self._describe(self._reads[-1]))
        self._hive: list[frozenset[str]] | None = None
        self._arrow: dict[int, tuple[str, dict[str, str]]] = {}

    def columns(self) -> dict[str, str]:
        """Every group's columns, in order of first appearance, the partition columns last (as
        DuckDB's ``union_by_name``), each with its type in the first group that has it."""
        merged: dict[str, str] = {}
        for types in self._types:
            for name, kind in types.items():
                merged.setdefault(name, kind)
        hive = set().union(*self._hive_columns())
        return {
            **{n: t for n, t in merged.items() if n not in hive},
            **{n: t for n, t in merged.items() if n in hive},
        }

    def parts(self, decl: Mapping[str, Column]) -> list[tuple[str, dict[str, str]]]:
        """Per group, the relation a plan reading the columns ``decl`` reads and its column types:
        Arrow's dataset when one of them is a text column of the group's files, else DuckDB's
        reader (as for a file alone). Chosen from the schemas and the declaration alone."""
        hive = self._hive_columns()
        out = []
        for g, types in enumerate(self._types):
            if any(source_family(types.get(n, "")) == "text" and n not in hive[g] for n in decl):
                out.append(self._arrow_part(g))
            else:
                out.append((self._reads[g], types))
        return out

    def source_of(self, decl: Mapping[str, Column]) -> tuple[str, dict[str, str]]:
        """The rows of every group with the columns ``decl`` cast by the declaration in each
        group (a column a group lacks: null), as one relation, and its column types: each
        declared column at its declared type's SQL type, which the engine's casts keep as they
        are (a value of that type cast to it again is itself). No column: the rows alone."""
        names = list(decl)
        selects = []
        for relation, types in self.parts(decl):
            present = [n for n in names if n in types]
            alias = {n: f"{_P}v{i}" for i, n in enumerate(names)}
            casts = [(n, cast_family(types[n]), decl[n].type, alias[n]) for n in present]
            inner = exprs.cast_select(casts, exp.Var(this=relation), f"{_P}gl")
            items = [
                f"{quote_identifier(alias[n]) if n in types else duckdb_sql(exprs.null(c.type))}"
                f" AS {quote_identifier(n)}"
                for n, c in decl.items()
            ]
            select = ", ".join(items) or f"1 AS {_P}one"
            selects.append(f"SELECT {select} FROM ({duckdb_sql(inner)}) AS {_P}gs")
        # each cast value at its declared type's SQL type, which the engine's casts keep as is
        types = {n: builders.sql_type_name(c.type) for n, c in decl.items()}
        return f"({' UNION ALL '.join(selects)})", types

    # -- internals -----------------------------------------------------------------------------
    def _describe(self, relation: str) -> dict[str, str]:
        try:
            rows = self._con.execute(f"DESCRIBE SELECT * FROM {relation}").fetchall()
            return {str(r[0]): str(r[1]).upper() for r in rows}
        except self._duckdb.Error:
            pass  # raised below, outside the handler: no __context__ with DuckDB's text
        raise ParameterError(
            f"`data` {self._label!r} cannot be read as a Parquet table", parameter="data"
        )

    def _literal(self, file: str) -> str:
        """A path DuckDB reads literally: the file's own, or a link to it in the private folder
        when the path holds a character DuckDB would take as a pattern (the link keeps the
        path's key=value folders, which DuckDB reads as partition columns)."""
        if not GLOB_CHARS.intersection(file):
            return file
        tmp = self._private()
        folder = os.path.join(tmp, f"file{len(os.listdir(tmp))}", *_key_folders(file, self._base))
        os.makedirs(folder)
        link = os.path.join(folder, "file" + "".join(Path(file).suffixes[-2:]))
        os.symlink(file, link)
        return link

    def _hive_columns(self) -> list[frozenset[str]]:
        """Per group, its columns read from key=value folder names, not from its files."""
        if self._hive is None:
            self._hive = [
                frozenset(hive_keys(files, self._base))
                if self._base is not None
                else frozenset(types).difference(self._describe(flat))
                for files, types, flat in zip(self._groups, self._types, self._flat, strict=True)
            ]
        return self._hive

    def _arrow_part(self, g: int) -> tuple[str, dict[str, str]]:
        """Group ``g`` read by Arrow with its text columns as bytes, registered once."""
        if g not in self._arrow:
            import pyarrow as pa

            files = self._groups[g]
            hive = hive_keys(files, self._base) if self._base is not None else None
            name = f"{_P}pqg{g}"
            failed = False
            try:
                dataset, blobs = arrow_dataset(files, self._base, hive, list(self._types[g]))
                self._con.register(name, dataset)
            except (pa.ArrowException, OSError, ValueError, self._duckdb.Error):
                failed = True  # raised below, outside the handler: no __context__
            if failed:
                raise ParameterError(
                    f"`data` {self._label!r} cannot be read as a Parquet table", parameter="data"
                )
            relation = quote_identifier(name)
            types = self._describe(relation)
            types.update(dict.fromkeys(blobs, TEXT_BLOB))
            self._arrow[g] = (relation, types)
        return self._arrow[g]
