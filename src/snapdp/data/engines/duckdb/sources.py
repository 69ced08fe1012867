"""The DuckDB engine's sources: a CSV (its lines cut by :class:`CsvLines`), Parquet file,
folder or pattern, pandas DataFrame or Arrow table, opened on a DuckDB connection (docs/data.md).

A path is a literal file or folder (a name holding ``[``, ``*`` or ``?`` is not a pattern) unless
``glob=True``; a CSV's columns are read by each file's own header (never sniffed); text handed
over by Arrow is read as bytes and decoded by the cast (a cell that is not UTF-8 is null); Parquet
files of several schemas are read per group of one schema (:mod:`.parquet_groups`). Errors
name the source and the kind of failure only; DuckDB's own messages (which may quote rows) are
never passed on.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

from snapdp.data.engines._cells import declared_columns, frame_to_arrow, is_pandas_frame
from snapdp.data.engines.base import (
    AggregatePlan,
)
from snapdp.data.engines.csv.lines import (
    check_delimiter,
    csv_encoding,
)
from snapdp.data.engines.csv.records import (
    FIELDS_COLUMN,
    GROUP_COLUMN,
    RECORD_COLUMN,
    CsvLines,
)
from snapdp.data.engines.duckdb.arrow_text import as_duckdb_scans
from snapdp.data.engines.duckdb.connection import connection, sql_string
from snapdp.data.engines.duckdb.families import (
    GLOB_CHARS,
    HIVE_AS_TEXT,
    PREFIX,
    TEXT_BLOB,
    quote_identifier,
    source_family,
)
from snapdp.data.engines.duckdb.parquet_groups import (
    ParquetGroups,
    arrow_dataset,
    hive_keys,
    schema_groups,
)
from snapdp.data.engines.header import csv_header, is_parquet
from snapdp.data.model.schema import Column, CsvOptions
from snapdp.errors import ParameterError

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection

__all__ = [
    "PREFIX",
    "TEXT_BLOB",
    "DuckDBSource",
    "quote_identifier",
    "read_failure",
    "source_family",
    "sql_string",
]


_P = PREFIX


class DuckDBSource:
    """A source opened on a DuckDB connection: a CSV or Parquet file, a folder of Parquet files,
    a pandas DataFrame or an Arrow table (docs/data.md), with its column names and types.

    ``memory_limit`` (e.g. ``"2GB"``) and ``temp_directory`` (default: a private temporary
    folder removed with the engine) are DuckDB's: past the limit, the
    bounding aggregates spill to the temporary directory. ``threads``: DuckDB's thread count.
    An engine that sets none of the three holds a connection of its own to one in-memory
    database the process shares (spilling to a private folder removed at exit): its views and
    temporary tables are its own, and no database is opened per engine.
    """

    def __init__(
        self,
        source: object,
        *,
        csv: CsvOptions = CsvOptions(),  # noqa: B008 - a frozen record
        glob: bool = False,
        memory_limit: str | None = None,
        temp_directory: str | None = None,
        threads: int | None = None,
    ) -> None:
        import duckdb

        self._duckdb = duckdb
        self._csv = csv
        self._frame: Any = None
        self._arrow: Any = None
        self._is_csv = False
        self._tmp: str | None = None
        self._bytes: int | None = None  # the source's size on disk, for progress()
        self._lines: CsvLines | None = None  # a CSV source's lines (they report progress)
        # a Parquet source: its files and hive base folder, to read text columns as bytes
        self._parquet: tuple[list[str], str | None] | None = None
        self._parquet_text: tuple[str, dict[str, str]] | None = None
        # a Parquet source read without its folders' key=value columns, and those columns
        self._flat: str | None = None
        self._hive: frozenset[str] | None = None
        # Parquet files of several schemas, read group by group (parquet_groups)
        self._groups: ParquetGroups | None = None
        self._con: DuckDBPyConnection = connection(
            duckdb, memory_limit, temp_directory, threads, self._private_dir
        )
        if isinstance(source, (str, Path)):
            self._open_path(str(source), glob)
        elif is_pandas_frame(source):
            self._frame = source
            frame: Any = source
            self._label = "<pandas.DataFrame>"
            self._names = [str(c) for c in frame.columns]
            if len(set(self._names)) != len(self._names):
                raise ParameterError("`data`: the DataFrame has repeated column names")
            self._types = {}
        elif _module(source).startswith("pyarrow") and type(source).__name__ == "Table":
            self._arrow = source
            self._label = "<pyarrow.Table>"
            table, blobs = as_duckdb_scans(source)
            self._con.register(f"{_P}arrow", table)
            self._relation = quote_identifier(f"{_P}arrow")
            self._types = self._describe()
            self._types.update(dict.fromkeys(blobs, TEXT_BLOB))
            self._names = list(self._types)
        else:
            raise ParameterError(
                "`data` must be a path to a CSV or Parquet file or a folder of Parquet files, a "
                f"pandas DataFrame or a pyarrow Table, not {type(source).__name__}",
                parameter="data",
            )

    # -- set-up --------------------------------------------------------------------------------
    def _open_path(self, text: str, glob: bool) -> None:
        if glob:
            self._open_glob(text)
            return
        path = Path(text).expanduser()
        self._label = str(path)
        try:
            if not path.exists():
                raise ParameterError(f"`data` file not found: {text!r}", parameter="data")
            path = path.resolve()
            self._label = str(path)
            if path.is_dir():
                self._open_parquet_folder(path)
                return
            self._bytes = path.stat().st_size
            with open(path, "rb") as fh:
                head = fh.read(4)
        except PermissionError:
            raise ParameterError(
                f"`data` {str(path)!r} cannot be opened (permission denied)", parameter="data"
            ) from None
        except OSError as exc:
            raise ParameterError(
                f"`data` {str(path)!r} cannot be opened ({exc.strerror or 'I/O error'})",
                parameter="data",
            ) from None
        if is_parquet(path, head, self._csv.header):
            self._open_parquet(self._literal(path), "", [str(path)], None)
        else:
            self._open_csv([path])
        self._names = list(self._types)

    def _private_dir(self) -> str:
        """A private temporary folder, removed with the engine (spill files, literal links)."""
        if self._tmp is None:
            self._tmp = tempfile.mkdtemp(prefix="snapdp-")
            weakref.finalize(self, shutil.rmtree, self._tmp, True)
        return self._tmp

    def _literal(self, path: Path) -> str:
        """A path DuckDB reads literally: the path itself, or a symlink to it in a private
        temporary folder when the path holds a character DuckDB would take as a pattern."""
        if not GLOB_CHARS.intersection(str(path)):
            return str(path)
        suffix = "".join(path.suffixes[-2:]) if not path.is_dir() else ""
        tmp = self._private_dir()
        link = os.path.join(tmp, f"source{len(os.listdir(tmp))}{suffix}")
        os.symlink(path, link)
        return link

    def _open_parquet_folder(self, path: Path) -> None:
        files = [p for p in path.rglob("*.parquet") if p.is_file()]
        self._bytes = sum(p.stat().st_size for p in files)
        if not files:
            raise ParameterError(
                f"`data` folder {str(path)!r} holds no .parquet files", parameter="data"
            )
        pattern = os.path.join(self._literal(path), "**", "*.parquet")
        names = sorted(str(p) for p in files)
        if not self._open_groups(names, str(path)):
            # DuckDB would read every file by the first file's types, and a cell of another file
            # that does not cast to them (2**40 into an INTEGER) failed the scan; the files
            # share one schema here, by name is the same
            self._open_parquet(pattern, ", union_by_name = true", names, str(path), hive=True)
        self._names = list(self._types)

    def _open_glob(self, pattern: str) -> None:
        import glob as _glob

        self._label = pattern
        matches = sorted(p for p in _glob.glob(pattern, recursive=True) if os.path.isfile(p))
        if not matches:
            raise ParameterError(f"`data` pattern {pattern!r} matches no file", parameter="data")
        self._bytes = sum(os.path.getsize(p) for p in matches)
        with open(matches[0], "rb") as fh:
            head = fh.read(4)
        if is_parquet(matches[0], head, self._csv.header):
            if not self._open_groups(matches, None):
                self._open_parquet(pattern, ", union_by_name = true", matches, None)
        else:
            self._open_csv([Path(p).resolve() for p in matches])
        self._names = list(self._types)

    def _open_csv(self, paths: list[Path]) -> None:
        """A CSV source, one record per line (docs/data.md, "CSV input"): its fields streamed by
        :class:`CsvLines`. The columns are declared (no header) or each file's own header,
        parsed the same way; the source's columns are the headers' names in order of first
        appearance, and each file's columns are read by name (null where its header lacks one).
        """
        opts = self._csv
        encoding = csv_encoding(opts.encoding)
        check_delimiter(opts.delimiter, encoding)
        if opts.header:
            # a file with no non-blank line has no header and no record: an error alone, in a
            # pattern nothing (the header is public; a file of rows has one)
            found = [(path, self._header(path, encoding, len(paths) == 1)) for path in paths]
            paths = [path for path, names in found if names is not None]
            headers = [names for _, names in found if names is not None]
            if not paths:
                raise ParameterError(
                    f"`data` {self._label!r}: no file holds a CSV header", parameter="data"
                )
        else:
            assert opts.column_names is not None  # CsvOptions refuses a header-less CSV without
            headers = [list(opts.column_names)] * len(paths)
        distinct: list[list[str]] = []
        for names in headers:
            if names not in distinct:
                distinct.append(names)
        groups = [distinct.index(names) for names in headers] if len(distinct) > 1 else None
        columns = list(dict.fromkeys(name for names in distinct for name in names))
        fields = [len(names) for names in headers]
        limit = opts.max_line_bytes
        self._lines = CsvLines(
            paths, encoding, opts.header, opts.delimiter, fields, groups=groups, max_line=limit
        )
        self._bytes = self._lines.total
        self._source_lines = quote_identifier(f"{_P}lines")
        self._con.register(f"{_P}lines", self._lines)
        # the same lines, only whether each is a record: for plans that read no column
        self._flags = CsvLines(
            paths, encoding, opts.header, opts.delimiter, fields, groups=groups, max_line=limit,
            lists=False, progress=self._lines,
        )  # fmt: skip
        self._source_flags = quote_identifier(f"{_P}flags")
        self._con.register(f"{_P}flags", self._flags)
        self._records_only = (
            f"(SELECT 1 AS {_P}one FROM {self._source_flags} WHERE {RECORD_COLUMN})"
        )
        select = ", ".join(
            f"{_by_name(name, distinct)} AS {quote_identifier(name)}" for name in columns
        )
        tag = "" if groups is None else f", {GROUP_COLUMN} AS {_P}g"
        # per non-blank line its fields, or null when it is no record
        self._relation = (
            f"(SELECT {select} FROM (SELECT {FIELDS_COLUMN} AS {_P}f{tag} "
            f"FROM {self._source_lines} WHERE {FIELDS_COLUMN} IS NOT NULL))"
        )
        self._is_csv = True
        self._types = dict.fromkeys(columns, "VARCHAR")
        self._check_readable()

    def _header(self, path: Path, encoding: str, alone: bool) -> list[str] | None:
        """The column names in the header of the CSV file (:func:`csv_header`): public."""
        return csv_header(path, encoding, self._csv.delimiter, self._csv.max_line_bytes, alone)

    def _check_readable(self) -> None:
        """Read the source's schema; a failure is one line naming the file, never DuckDB's text."""
        try:
            self._con.execute(f"DESCRIBE SELECT * FROM {self._relation}").fetchall()
            return
        except self._duckdb.Error:
            pass  # raised below, outside the handler: no __context__ with DuckDB's text
        raise ParameterError(f"`data` {self._label!r} cannot be read as a table", parameter="data")

    def _open_parquet(
        self, target: str, options: str, files: list[str], base: str | None, *, hive: bool = False
    ) -> None:
        """A Parquet source: ``read_parquet`` of ``target`` with ``options``, partition values
        from key=value folders as text (``hive``: always, else when DuckDB finds such folders);
        ``files`` and the hive ``base`` folder for the Arrow path; the same without the folders'
        columns for :meth:`_hive_columns`."""
        read = f"read_parquet({sql_string(target)}{options}"
        partitioning = ", hive_partitioning = true" if hive else ""
        self._relation = f"{read}{partitioning}, {HIVE_AS_TEXT})"
        self._types = self._describe()
        self._flat = f"{read}, hive_partitioning = false)"
        self._parquet = (files, base)

    def _open_groups(self, files: list[str], base: str | None) -> bool:
        """Whether the Parquet ``files`` (``base``: a folder's path) do not all share one schema
        and one layout of key=value folders; if so they are opened in groups of one schema and
        layout, each read at its own types (docs/data.md, "Reading the data"). From the files'
        schemas and paths alone."""
        groups = schema_groups(files, self._label, base) if len(files) > 1 else [files]
        if len(groups) == 1:
            return False
        self._groups = ParquetGroups(
            self._con, self._duckdb, self._label, groups, base, self._private_dir
        )
        self._types = self._groups.columns()
        return True

    def _hive_columns(self) -> frozenset[str]:
        """The columns of a Parquet source read from key=value folder names, not from its files
        (found once, when a plan first reads a text column: opening a source stays one DESCRIBE).
        """
        if self._hive is None:
            flat = self._describe(self._flat) if self._flat is not None else self._types
            self._hive = frozenset(self._types).difference(flat)
        return self._hive

    def _describe(self, relation: str | None = None) -> dict[str, str]:
        try:
            query = f"DESCRIBE SELECT * FROM {relation or self._relation}"
            rows = self._con.execute(query).fetchall()
            return {str(r[0]): str(r[1]).upper() for r in rows}
        except self._duckdb.Error:
            pass  # raised below, outside the handler: no __context__ with DuckDB's text
        raise ParameterError(
            f"`data` {self._label!r} cannot be read as a Parquet table or Arrow table",
            parameter="data",
        )

    def _source_for(self, plan: AggregatePlan) -> tuple[str, dict[str, str]]:
        """The FROM clause and the source's column types (a DataFrame: its used columns, as an
        Arrow table registered for this query)."""
        return self._source_of(declared_columns(plan))

    def _source_parts(self, decl: dict[str, Column]) -> list[tuple[str, dict[str, str]]]:
        """The relations that together hold the source's rows for the columns ``decl``, each
        with its column types, uncast: Parquet files of several schemas, one per group of files
        of one schema; any other source, :meth:`_source_of`'s one. For ``snapdp check``."""
        if self._groups is not None:
            return self._groups.parts(decl)
        return [self._source_of(decl)]

    def _source_of(self, decl: dict[str, Column]) -> tuple[str, dict[str, str]]:
        if self._groups is not None:  # Parquet files of several schemas: cast group by group
            return self._groups.source_of(decl)
        if self._lines is not None and not decl:  # a CSV, no column read: count the records
            return self._records_only, {}
        if self._parquet is not None and any(
            source_family(self._types[n]) == "text" and n not in self._hive_columns() for n in decl
        ):  # a text column of the files (a partition column's text is the folder's name)
            return self._parquet_text_source()
        if self._frame is None:
            return self._relation, self._types
        table, blobs = as_duckdb_scans(frame_to_arrow(self._frame, decl))
        self._con.register(f"{_P}frame", table)
        relation = quote_identifier(f"{_P}frame")
        rows = self._con.execute(f"DESCRIBE SELECT * FROM {relation}").fetchall()
        types = {str(r[0]): str(r[1]).upper() for r in rows}
        types.update(dict.fromkeys(blobs, TEXT_BLOB))
        return relation, types

    def _parquet_text_source(self) -> tuple[str, dict[str, str]]:
        """The Parquet source read by Arrow with its text columns as bytes (for a plan that reads
        a text column): DuckDB's Parquet reader fails the whole scan on one cell that is not
        UTF-8, where the contract makes that cell null (docs/data.md, "What does not fit").
        Chosen from the schema alone, never from the data. Streamed, with projection
        (:func:`~snapdp.data.engines.duckdb.parquet_groups.arrow_dataset`)."""
        if self._parquet_text is None:
            import pyarrow as pa

            assert self._parquet is not None
            files, base = self._parquet
            hive = hive_keys(files, base) if base is not None else None
            try:
                dataset, blobs = arrow_dataset(files, base, hive, list(self._types))
            except (pa.ArrowException, OSError, ValueError):
                raise ParameterError(
                    f"`data` {self._label!r} cannot be read as a Parquet table", parameter="data"
                ) from None
            self._con.register(f"{_P}pq", dataset)
            relation = quote_identifier(f"{_P}pq")
            rows = self._con.execute(f"DESCRIBE SELECT * FROM {relation}").fetchall()
            types = {str(r[0]): str(r[1]).upper() for r in rows}
            types.update(dict.fromkeys(blobs, TEXT_BLOB))
            self._parquet_text = (relation, types)
        return self._parquet_text


# -- SQL helpers -----------------------------------------------------------------------------
def _by_name(name: str, headers: list[list[str]]) -> str:
    """SQL: the column ``name`` of a CSV line, by its position in the line's file's header
    (``headers[g]`` for the files of group g; null where the header lacks it)."""
    positions = [names.index(name) + 1 if name in names else None for names in headers]
    if len(headers) == 1:
        return _unquote_sql(f"{_P}f[{positions[0]}]")
    cases = " ".join(
        f"WHEN {g} THEN {_unquote_sql(f'{_P}f[{p}]')}"
        for g, p in enumerate(positions)
        if p is not None
    )
    return f"(CASE {_P}g {cases} ELSE CAST(NULL AS VARCHAR) END)"


def _unquote_sql(field: str) -> str:
    """SQL: a CSV field as text: a quoted field without its quotes, each doubled quote as one
    quote (the line was split by :func:`~snapdp.data.engines.csv.lines.split_fields`)."""
    return (
        f"(CASE WHEN starts_with({field}, '\"') "
        f"THEN replace(substring({field}, 2, length({field}) - 2), '\"\"', '\"') "
        f"ELSE {field} END)"
    )


def read_failure(exc: BaseException) -> str:
    """The kind of a read failure, from the exception's class only (never its text)."""
    name = type(exc).__name__
    if "IO" in name:
        return "an I/O error"
    if "OutOfMemory" in name:
        return "out of memory: raise --memory-limit or set a temporary directory"
    if "Conversion" in name or "InvalidInput" in name:
        return "a file that is not a readable table"
    if "Interrupt" in name:
        return "interrupted"
    return "a read error"


def _module(obj: object) -> str:
    return type(obj).__module__ or ""
