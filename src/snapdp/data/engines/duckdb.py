r"""The DuckDB engine: the engine contract in one SQL query per plan, out of core (docs/data.md).

Implements :mod:`snapdp.data.engines.base` step by step; rows never pass through Python one by one
(a CSV's lines are cut by numpy, a block at a time), and only one row per cell comes back.

* **Read.** A path is a literal file or folder (a name holding ``[``, ``*`` or ``?`` is not a
  pattern) unless ``glob=True``. A folder is a Parquet dataset (``**/*.parquet``, hive
  partitioning); a file starting with the Parquet magic bytes is Parquet; any other file is a CSV,
  read one record per line (base step 1): :class:`CsvLines` parses it with numpy, in blocks,
  into a stream of Arrow lists of fields (DuckDB's CSV reader would end lines at a lone CR too
  and let quotes span lines), re-read for each scan; a line over ``max_line_bytes`` is read
  past, never held. Each file's header is parsed the same way (never sniffed) and its columns
  are read by name; without a header the columns are declared (``CsvOptions.column_names``).
  A pandas DataFrame is turned into an Arrow table column by column with the declared types
  (object columns cell by cell by the contract's rules: never by DuckDB's type inference from a
  sample of the data); an Arrow table is read as it is.
  Errors: only for a source that cannot be opened or read as a whole, naming the file and the kind
  of failure; DuckDB's own messages (which may quote rows) are never passed on.
* **Cast** by the regular-expression gates of the contract (``TRY_CAST`` only after a gate, so
  DuckDB's laxer parsers, e.g. ``'1_000'`` or ``'infinity'``, never decide).
* **Cells.** Declared keys become a typed keys table (integers as BIGINT, decimals as the double
  nearest the key, text, booleans, dates) joined to the typed cell: no text matching. Bins compare
  an integer cell exactly with integer edges, a decimal cell as a double with the double nearest
  each edge (base step 3). The cell index is row-major.
* **Bounding** by the keyed-hash ranks (:func:`~snapdp.data.engines.base.mix_rank` of the row's
  32-bit lanes in BIGINT arithmetic, every product below 2^63; a text unit's lanes from
  ``md5_number``; tested equal to ``row_rank``/``group_rank``). No sort: L∞ keeps the lowest
  ranks per (unit, cell) by ``arg_min``/``min_by(…, n)`` aggregates, L0 keeps per unit the cells of
  lowest group rank (an aggregate, then a semi-join), k keeps the lowest-ranked rows per unit by
  one aggregate over units. DuckDB's ``memory_limit`` and ``temp_directory`` let these spill.
* **Aggregates** are exact: quanta sums as HUGEINT; Σ(2q − L_q − U_q)² as HUGEINT when a row's
  square is below 2^64, else by 32-bit limbs recombined in Python. Which method is used depends on
  the declared bounds only; no error can depend on the data.

Internal names: the source's columns are read once, under aliases ``_snapdp_…`` chosen here; no
user column name appears anywhere else in the query, so no user column can collide with them.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sqlglot import exp

from snapdp._validation import check_count
from snapdp.data.engines._cells import declared_columns, frame_to_arrow
from snapdp.data.engines.base import (
    GROUP_TAG,
    RANK_MASK,
    RANK_MULTIPLIERS,
    ROW_TAG,
    UNIT_MULTIPLIER,
    AggregatePlan,
    Aggregates,
    ValueColumn,
    chunk_width,
    key_words,
    lane_count,
    row_chunks,
    row_radices,
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
from snapdp.data.engines.header import csv_header
from snapdp.data.engines.relational import exprs
from snapdp.data.engines.relational.dialects import duckdb_sql
from snapdp.data.model.schema import Column, CsvOptions
from snapdp.errors import ParameterError

__all__ = ["DuckDBEngine", "cell_index_sql", "quote_identifier"]

_GLOB_CHARS = frozenset("*?[]{}\\")
_HEX32 = re.compile(r"[0-9a-fA-F]{32}")
_INT_TYPES = (
    "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT",
    "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT",
)  # fmt: skip
_FLOAT_TYPES = ("FLOAT", "DOUBLE", "REAL")
_P = "_snapdp_"  # the prefix of every internal name
_TEXT_BLOB = "TEXT AS BLOB"  # a text column handed to DuckDB as bytes (decoded by the cast)


def quote_identifier(name: str) -> str:
    """A SQL identifier for ``name``, quoted so that any column name is safe."""
    return '"' + name.replace('"', '""') + '"'


def _lit(text: str) -> str:
    """A SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


class DuckDBEngine:
    """An :class:`~snapdp.data.engines.base.Engine` over a CSV or Parquet file, a folder of Parquet
    files, a pandas DataFrame or an Arrow table (see the module docstring and docs/data.md).

    ``memory_limit`` (e.g. ``"2GB"``) and ``temp_directory`` (default: a private temporary
    folder removed with the engine) are DuckDB's: past the limit, the
    bounding aggregates spill to the temporary directory. ``threads``: DuckDB's thread count.
    """

    def __init__(
        self,
        source: object,
        *,
        csv: CsvOptions = CsvOptions(),  # noqa: B008 - frozen dataclass
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
        self._con = duckdb.connect(":memory:")
        self._configure(memory_limit, temp_directory, threads)
        if isinstance(source, (str, Path)):
            self._open_path(str(source), glob)
        elif _module(source).startswith("pandas") and type(source).__name__ == "DataFrame":
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
            table, blobs = _text_as_binary(source)
            self._con.register(f"{_P}arrow", table)
            self._relation = quote_identifier(f"{_P}arrow")
            self._types = self._describe()
            self._types.update(dict.fromkeys(blobs, _TEXT_BLOB))
            self._names = list(self._types)
        else:
            raise ParameterError(
                "`data` must be a path to a CSV or Parquet file or a folder of Parquet files, a "
                f"pandas DataFrame or a pyarrow Table, not {type(source).__name__}",
                parameter="data",
            )

    # -- set-up --------------------------------------------------------------------------------
    def _configure(
        self, memory_limit: str | None, temp_directory: str | None, threads: int | None
    ) -> None:
        # progress is tracked (for progress()) but never printed by DuckDB itself
        self._con.execute("SET enable_progress_bar = true")
        self._con.execute("SET enable_progress_bar_print = false")
        self._con.execute("SET preserve_insertion_order = false")
        if memory_limit is not None:
            try:
                self._con.execute(f"SET memory_limit = {_lit(str(memory_limit))}")
            except self._duckdb.Error:
                raise ParameterError(
                    f"`memory_limit` must be a size such as '2GB', not {memory_limit!r}",
                    parameter="memory_limit",
                ) from None
        if temp_directory is None:  # never DuckDB's default (".tmp" in the working folder)
            temp_directory = os.path.join(self._private_dir(), "spill")
        try:
            self._con.execute(f"SET temp_directory = {_lit(str(temp_directory))}")
        except self._duckdb.Error:
            raise ParameterError(
                f"`temp_directory` cannot be used: {str(temp_directory)!r}",
                parameter="temp_directory",
            ) from None
        if threads is not None:
            self._con.execute(f"SET threads = {check_count('threads', threads)}")

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
        if head == b"PAR1":
            self._relation = f"read_parquet({_lit(self._literal(path))})"
            self._types = self._describe()
            self._parquet = ([str(path)], None)
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
        if not _GLOB_CHARS.intersection(str(path)):
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
        self._relation = f"read_parquet({_lit(pattern)}, hive_partitioning = true)"
        self._types = self._describe()
        self._names = list(self._types)
        self._parquet = (sorted(str(p) for p in files), str(path))

    def _open_glob(self, pattern: str) -> None:
        import glob as _glob

        self._label = pattern
        matches = sorted(p for p in _glob.glob(pattern, recursive=True) if os.path.isfile(p))
        if not matches:
            raise ParameterError(f"`data` pattern {pattern!r} matches no file", parameter="data")
        self._bytes = sum(os.path.getsize(p) for p in matches)
        with open(matches[0], "rb") as fh:
            head = fh.read(4)
        if head == b"PAR1":
            self._relation = f"read_parquet({_lit(pattern)}, union_by_name = true)"
            self._types = self._describe()
            self._parquet = (matches, None)
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
        except self._duckdb.Error:
            raise ParameterError(
                f"`data` {self._label!r} cannot be read as a table", parameter="data"
            ) from None

    def _describe(self) -> dict[str, str]:
        try:
            rows = self._con.execute(f"DESCRIBE SELECT * FROM {self._relation}").fetchall()
        except self._duckdb.Error:
            raise ParameterError(
                f"`data` {self._label!r} cannot be read as a Parquet table or Arrow table",
                parameter="data",
            ) from None
        return {str(r[0]): str(r[1]).upper() for r in rows}

    # -- the Engine protocol -------------------------------------------------------------------
    def describe(self) -> str:
        """The resolved path, or the frame's type."""
        return self._label

    def progress(self) -> int | None:
        """How much of the source the running :meth:`aggregate` has read, in whole percent (0 to
        100): the CSV reader's position, or DuckDB's scan progress; None for an in-memory frame.
        A share of the source only, never a count of rows or bytes (docs/data.md). Safe to call
        from another thread while :meth:`aggregate` runs."""
        if self._lines is not None:
            return self._lines.percent()
        if self._bytes is None:
            return None
        try:
            percent = float(self._con.query_progress())
        except self._duckdb.Error:
            return None
        return 0 if not percent > 0 else int(min(percent, 100.0))

    def column_names(self) -> list[str]:
        """The source's column names (header or schema)."""
        return list(self._names)

    def aggregate(self, plan: AggregatePlan) -> Aggregates:
        """The exact aggregates of ``plan`` (engine contract, docs/data.md)."""
        sql, layout = self.sql(plan)
        result = Aggregates.zeros(plan)
        try:
            rows = self._con.execute(sql).fetchall()
        except self._duckdb.Error as exc:
            raise ParameterError(
                f"`data` {self._label!r} could not be read ({_kind(exc)})", parameter="data"
            ) from None
        finally:
            if self._frame is not None:
                self._con.unregister(f"{_P}frame")
        for row in rows:
            cell = int(row[0])
            result.rows[cell] = int(row[1])
            pos = 2
            for j, vc in enumerate(plan.values):
                result.sums[j][cell] = int(row[pos] or 0)
                result.counts[j][cell] = int(row[pos + 1])
                pos += 2
                squares = result.squares[j]
                if vc.squares and squares is not None:
                    if layout[j] == "limbs":
                        hi, mid, lo = (int(x or 0) for x in row[pos : pos + 3])
                        squares[cell] = (hi << 64) + (mid << 33) + lo
                        pos += 3
                    else:
                        squares[cell] = int(row[pos] or 0)
                        pos += 1
        return result

    # -- for `snapdp check` only (reads the data WITHOUT privacy; never in a release path) ----
    def cast_select(self, columns: Sequence[Column]) -> str:
        """SQL selecting, per declared column i, its raw cell as text (``raw_i``; an empty text
        cell is null) and its value cast by the contract (``val_i``). For ``snapdp check``."""
        decl = {c.name: c for c in columns}
        _check_columns(list(decl), self._names)
        relation, types = self._source_of(decl)
        items = []
        for i, (name, column) in enumerate(decl.items()):
            col = quote_identifier(name)
            if types.get(name) == _TEXT_BLOB:  # the text, or its bytes escaped when not UTF-8
                col = f"COALESCE(try(decode({col})), CAST({col} AS VARCHAR))"
            items.append(f"NULLIF(CAST({col} AS VARCHAR), '') AS raw_{i}")
            items.append(f"{self._cast(name, column, types)} AS val_{i}")
        return f"SELECT {', '.join(items) or '1 AS one'} FROM {relation}"

    def line_counts(self) -> tuple[int, int] | None:
        """For a CSV source: (its non-blank lines, the records among them), the header not
        counted; the other lines do not split into the header's number of fields or do not
        decode (docs/data.md, "CSV input"). None for any other source. For ``snapdp check``."""
        if self._lines is None:
            return None
        row = self.fetch(
            f"SELECT COUNT(*), COUNT(*) FILTER (WHERE {RECORD_COLUMN}) FROM {self._source_flags}"
        )[0]
        return int(row[0]), int(row[1])

    def skipped_lines(self, limit: int) -> list[str]:
        """For a CSV source: where the first ``limit`` lines that are no record are and why, as
        ``"line N (why)"`` (``"FILE: line N (why)"`` for several files; why: longer than
        max_line_bytes, not in the encoding, not split by the CSV rule, or another number of
        fields). For ``snapdp check`` only: it quotes nothing of the line, but it is exact."""
        if self._lines is None or limit <= 0:
            return []
        many = len(self._lines.paths) > 1
        return [
            f"{path}: line {n} ({why})" if many else f"line {n} ({why})"
            for path, n, why in self._lines.skipped(limit)
        ]

    def fetch(self, sql: str) -> list[tuple[Any, ...]]:
        """Run ``sql`` on this engine's connection (for ``snapdp check``: the owner's tool)."""
        try:
            return self._con.execute(sql).fetchall()
        except self._duckdb.Error as exc:
            raise ParameterError(
                f"`data` {self._label!r} could not be read ({_kind(exc)})", parameter="data"
            ) from None

    # -- SQL -----------------------------------------------------------------------------------
    def sql(self, plan: AggregatePlan) -> tuple[str, list[str]]:
        """The query for ``plan`` and, per value column, how its squares come back."""
        _check_plan(plan, self._names)
        relation, types = self._source_for(plan)
        used = plan.used_columns()
        alias = {name: f"{_P}c{i}" for i, name in enumerate(used)}
        # s0: the used columns under internal aliases, cast to their declared types.
        casts = []
        decl = declared_columns(plan)
        for name in used:
            casts.append(f"{self._cast(name, decl[name], types)} AS {alias[name]}")
        ctes = [f"{_P}s0 AS (SELECT {', '.join(casts) or '1 AS _snapdp_one'} FROM {relation})"]
        # s1: cells, quanta, unit text.
        cols: list[str] = []
        joins: list[str] = []
        cell_terms: list[str] = []
        stride = plan.n_cells
        where: list[str] = []
        for gi, g in enumerate(plan.groupings):
            stride //= g.n_cells
            node = exprs.with_null_rule(g, exprs.column(alias[g.name]))
            value = duckdb_sql(node)
            if g.keys is not None:
                keys = _keys_table(g)
                if keys is None:
                    where.append("FALSE")
                    continue
                joins.append(
                    f"JOIN (VALUES {keys}) AS {_P}k{gi}({_P}kv, {_P}ki) "
                    f"ON {value} = {_P}k{gi}.{_P}kv"
                )
                cell_terms.append(f"{_P}k{gi}.{_P}ki * {stride}")
            else:
                index = duckdb_sql(exprs.bin_index(g, node))
                where.append(f"({index}) IS NOT NULL")
                cell_terms.append(f"({index}) * {stride}")
        if plan.where is not None:  # step 3: the row filter, on the cast values
            values = {name: exprs.column(alias[name]) for name in alias}
            where.append(duckdb_sql(exprs.predicate(plan.where, values, decl)))
        cell = " + ".join(cell_terms) if cell_terms else "0"
        cols.append(f"CAST({cell} AS BIGINT) AS {_P}cell")
        layout: list[str] = []
        for j, vc in enumerate(plan.values):
            q, q_type = _quanta_expr(exprs.column(alias[vc.column.name]), vc)
            cols.append(f"CAST({q} AS {q_type}) AS {_P}q{j}")
            layout.append("limbs" if _needs_limbs(vc) else "direct")
        if plan.unit is not None:
            cols.append(f"{alias[plan.unit.name]} AS {_P}u")
        ctes.append(
            f"{_P}s1 AS (SELECT {', '.join(cols)} FROM {_P}s0 {' '.join(joins)}"
            + (f" WHERE {' AND '.join(where)}" if where else "")
            + ")"
        )
        qnames = [f"{_P}q{j}" for j in range(len(plan.values))]
        final = f"{_P}s1"
        if plan.unit is not None:
            final = self._bounding(plan, ctes, qnames)
        select = [f"{_P}cell", "COUNT(*)"]
        for j, vc in enumerate(plan.values):
            q = f"{_P}q{j}"
            select += [f"CAST(SUM({q}) AS HUGEINT)", f"COUNT({q})"]
            if vc.squares:
                centre = vc.lower_q + vc.upper_q
                c = f"(2 * CAST({q} AS HUGEINT) - ({centre}))"
                if layout[j] == "limbs":
                    a = f"abs({c})"
                    hi, lo = f"({a} >> 32)", f"({a} & 4294967295)"
                    select += [f"SUM({hi} * {hi})", f"SUM({hi} * {lo})", f"SUM({lo} * {lo})"]
                else:
                    select.append(f"SUM({c} * {c})")
        query = (
            "WITH "
            + ",\n".join(ctes)
            + f"\nSELECT {', '.join(select)} FROM {final} GROUP BY {_P}cell"
        )
        return query, layout

    def _bounding(self, plan: AggregatePlan, ctes: list[str], qnames: list[str]) -> str:
        """Append the bounding CTEs (step 5); return the name of the bounded rows' relation.

        Each stage is one aggregate: per group of the stage, the ``n`` lowest-ranked rows by
        ``arg_min``/``min_by(…, n)``, the row packed into one integer when the declared domain
        allows (a fixed-size state: less memory, no sort), else a struct. The row rank is a
        function of the row (unit, cell, quanta), so each stage recomputes it."""
        packer = _Packer(plan, qnames)
        b = plan.bounds
        ctes.append(f"{_P}b0 AS (SELECT * FROM {_P}s1 WHERE {_P}u IS NOT NULL)")
        current = f"{_P}b0"
        step = 1
        if b.max_rows_per_group is not None:
            current = _top_rows(
                ctes, current, step, [f"{_P}u", f"{_P}cell"], b.max_rows_per_group, packer, plan
            )
            step += 1
        if b.max_groups_per_unit is not None:
            n = b.max_groups_per_unit
            pick = (
                f"arg_min({_P}cell, {_P}gr) AS {_P}cell"
                if n == 1
                else f"unnest(min_by({_P}cell, {_P}gr, {n})) AS {_P}cell"
            )
            cells = f"(SELECT DISTINCT {_P}u, {_P}cell FROM {current})"
            ctes.append(
                f"{_P}g{step} AS (SELECT * FROM "
                f"{_ranked(cells, plan, GROUP_TAG, False, f'{_P}gr')})"
            )
            ctes.append(f"{_P}h{step} AS (SELECT {_P}u, {pick} FROM {_P}g{step} GROUP BY {_P}u)")
            ctes.append(
                f"{_P}b{step} AS (SELECT * FROM {current} SEMI JOIN {_P}h{step} "
                f"USING ({_P}u, {_P}cell))"
            )
            current = f"{_P}b{step}"
            step += 1
        if b.max_rows_per_unit is not None:
            current = _top_rows(ctes, current, step, [f"{_P}u"], b.max_rows_per_unit, packer, plan)
            step += 1
        out = ", ".join([f"{_P}cell", *qnames])
        if plan.null_units == "own":
            ctes.append(
                f"{_P}bz AS (SELECT {out} FROM {current} UNION ALL "
                f"SELECT {out} FROM {_P}s1 WHERE {_P}u IS NULL)"
            )
            return f"{_P}bz"
        return current

    def _source_for(self, plan: AggregatePlan) -> tuple[str, dict[str, str]]:
        """The FROM clause and the source's column types (a DataFrame: its used columns, as an
        Arrow table registered for this query)."""
        return self._source_of(declared_columns(plan))

    def _source_of(self, decl: dict[str, Column]) -> tuple[str, dict[str, str]]:
        if self._lines is not None and not decl:  # a CSV, no column read: count the records
            return self._records_only, {}
        if self._parquet is not None and any(_family(self._types[n]) == "text" for n in decl):
            return self._parquet_text_source()
        if self._frame is None:
            return self._relation, self._types
        table, blobs = _text_as_binary(frame_to_arrow(self._frame, decl))
        self._con.register(f"{_P}frame", table)
        relation = quote_identifier(f"{_P}frame")
        rows = self._con.execute(f"DESCRIBE SELECT * FROM {relation}").fetchall()
        types = {str(r[0]): str(r[1]).upper() for r in rows}
        types.update(dict.fromkeys(blobs, _TEXT_BLOB))
        return relation, types

    def _parquet_text_source(self) -> tuple[str, dict[str, str]]:
        """The Parquet source read by Arrow with its text columns as bytes (for a plan that reads
        a text column): DuckDB's Parquet reader fails the whole scan on one cell that is not
        UTF-8, where the contract makes that cell null (docs/data.md, "What does not fit").
        Chosen from the schema alone, never from the data. Streamed, with projection."""
        if self._parquet_text is None:
            import pyarrow as pa
            import pyarrow.dataset as ds

            assert self._parquet is not None
            files, base = self._parquet
            try:
                if base is not None:
                    found = ds.dataset(
                        files, format="parquet", partitioning="hive", partition_base_dir=base
                    )
                    fixed = set(found.partitioning.schema.names) if found.partitioning else set()
                    schema = found.schema
                else:
                    schema = pa.unify_schemas(  # by name, as DuckDB's union_by_name
                        [ds.dataset(f, format="parquet").schema for f in files],
                        promote_options="permissive",
                    )
                    fixed = set()
                fields = [
                    f if f.name in fixed else f.with_type(_bytes_type(f.type)) for f in schema
                ]
                blobs = [
                    f.name for f in schema if f.name not in fixed and _bytes_type(f.type) != f.type
                ]
                dataset = ds.dataset(
                    files,
                    schema=pa.schema(fields),
                    format="parquet",
                    partitioning="hive" if base is not None else None,
                    partition_base_dir=base,
                )
            except (pa.ArrowException, OSError, ValueError):
                raise ParameterError(
                    f"`data` {self._label!r} cannot be read as a Parquet table", parameter="data"
                ) from None
            self._con.register(f"{_P}pq", dataset)
            relation = quote_identifier(f"{_P}pq")
            rows = self._con.execute(f"DESCRIBE SELECT * FROM {relation}").fetchall()
            types = {str(r[0]): str(r[1]).upper() for r in rows}
            types.update(dict.fromkeys(blobs, _TEXT_BLOB))
            self._parquet_text = (relation, types)
        return self._parquet_text

    def _cast(self, name: str, column: Column, types: dict[str, str]) -> str:
        """SQL: the source column ``name`` cast to ``column.type`` by the contract's rules."""
        source = types.get(name, "VARCHAR")
        family = "bytes" if source == _TEXT_BLOB else _family(source)
        return duckdb_sql(exprs.cast_native(exprs.column(name), family, column.type))


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


def _bytes_type(arrow_type: Any) -> Any:
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


def _text_as_binary(table: Any) -> tuple[Any, list[str]]:
    """``table`` with every text column as bytes (no copy for plain strings) and the names of
    those columns: DuckDB validates UTF-8 when it scans Arrow text and fails the whole query on
    one bad cell; as bytes, the cast decodes each cell and makes a bad one null."""
    import pyarrow as pa

    blobs: list[str] = []
    columns = []
    for name, column in zip(table.column_names, table.columns, strict=True):
        target = _bytes_type(column.type)
        if target != column.type:
            if pa.types.is_dictionary(column.type):
                column = pa.chunked_array(
                    [c.dictionary_decode() for c in column.chunks], column.type.value_type
                )
            column = pa.chunked_array([c.view(target) for c in column.chunks], target)
            blobs.append(name)
        columns.append(column)
    return pa.Table.from_arrays(columns, names=table.column_names), blobs


def _module(obj: object) -> str:
    return type(obj).__module__ or ""


def _family(sql_type: str) -> str:
    t = sql_type.upper()
    if t == "VARCHAR" or t.startswith("ENUM"):
        return "text"
    if t in _INT_TYPES:
        return "int"
    if t in _FLOAT_TYPES:
        return "float"
    if t.startswith("DECIMAL"):
        return "fixed"
    if t == "BOOLEAN":
        return "bool"
    if t == "DATE":
        return "date"
    return "other"


def _keys_table(column: Column) -> str | None:
    """SQL VALUES rows (typed key, index), or None when no cell can equal any key."""
    rows = exprs.key_rows(column)
    return ", ".join(f"({duckdb_sql(key)}, {i})" for key, i in rows) if rows else None


def cell_index_sql(column: Column, value: str) -> str:
    """SQL: the index of the cast column ``value`` among ``column``'s keys or bins after its
    null rule (NULL: the row is dropped from groupings on the column). For ``snapdp check``;
    the engine itself joins a keys table, with the same result."""
    return duckdb_sql(exprs.cell_index(column, exprs.column(value)))


def _quanta_bits(vc: ValueColumn) -> int:
    scale: int = 10**vc.decimals
    return max(abs(vc.lower_q), abs(vc.upper_q)) + 2 * scale + 2


def _q_type(vc: ValueColumn) -> str:
    return "BIGINT" if _quanta_bits(vc) < 1 << 62 else "HUGEINT"


def _quanta_expr(value: exp.Expression, vc: ValueColumn) -> tuple[str, str]:
    """SQL: the quanta of the double ``value`` (step 6) and their SQL type.

    q = clamp(round_half_even(clamp(v, lo, hi)·10^d), L_q, U_q) with lo = ⌊L_q/10^d⌋ − 1 and
    hi = ⌈U_q/10^d⌉ + 1 as doubles: the coarse clamp only keeps the conversion in range, the exact
    clamp is the integer one. Ties to even: DuckDB's cast of a DOUBLE to an integer rounds to
    nearest, ties to even (as ``nearbyint``; tested equal to Python's ``round`` on ties and random
    doubles, for BIGINT and HUGEINT)."""
    if vc.column.type not in ("integer", "decimal"):
        raise ParameterError(
            f"column {vc.column.name!r}: a value column must be integer or decimal, "
            f"not {vc.column.type!r}",
            parameter="type",
        )
    if not vc.lower_q <= vc.upper_q:
        raise ParameterError(f"column {vc.column.name!r}: empty quanta range", parameter="lower")
    magnitude = _quanta_bits(vc)
    if magnitude >= 1 << 64:
        raise ParameterError(
            f"column {vc.column.name!r}: bounds too wide to sum exactly (|bound|·10^decimals "
            "must stay below 2^64)",
            parameter="upper",
        )
    q_type = _q_type(vc)
    return duckdb_sql(exprs.quanta(vc, value, q_type)), q_type


def _needs_limbs(vc: ValueColumn) -> bool:
    """Whether Σ(2q − L − U)² needs 32-bit limbs: a row's square may reach 2^62 (then 2^63+
    rows could overflow HUGEINT). From the declared bounds only."""
    return vc.squares and (vc.upper_q - vc.lower_q) >= 1 << 31


def _fold_sql(t: str) -> str:
    return f"(xor({t}, {t} >> 32) & {RANK_MASK})"


def _lanes_sql(value: str, count: int) -> list[str]:
    """SQL: the ``count`` 32-bit lanes of the non-negative integer ``value`` as BIGINTs."""
    if count == 1:
        return [f"CAST({value} AS BIGINT)"]
    return [f"CAST((({value}) >> {32 * i}) & {RANK_MASK} AS BIGINT)" for i in range(count)]


def _ranked(relation: str, plan: AggregatePlan, tag: int, values: bool, name: str) -> str:
    """SQL: ``relation`` (columns unit, cell and, with ``values``, the quanta) with a column
    ``name`` holding :func:`~snapdp.data.engines.base.mix_rank` of the row's lanes (tested
    equal to ``row_rank``/``group_rank``). One projection per lane: each reads the previous
    accumulators as columns, so the SQL grows linearly with the number of lanes."""
    u = f"{_P}u"
    if plan.unit is not None and plan.unit.type == "text":
        relation = f"(SELECT *, md5_number({u}) AS {_P}um FROM {relation})"
        units = _lanes_sql(f"{_P}um", 2)
    else:
        units = [f"({u} & {RANK_MASK})", f"(({u} >> 32) & {RANK_MASK})"]
    lanes: list[str] = []
    if not values:
        lanes += _lanes_sql(f"{_P}cell", lane_count(plan.n_cells))
    else:
        radices = row_radices(plan)
        digits = [f"{_P}cell"]
        for j, vc in enumerate(plan.values):
            d = f"COALESCE(CAST({_P}q{j} AS {_q_type(vc)}) - ({vc.lower_q - 1}), 0)"
            digits.append(d if radices[j + 1] >= 1 << 63 else f"CAST({d} AS BIGINT)")
        for chunk in row_chunks(plan):
            value = digits[chunk[0]]
            for i in chunk[1:]:
                value = f"({value} * {radices[i]} + {digits[i]})"
            lanes += _lanes_sql(value, lane_count(chunk_width(plan, chunk)))
    # with_unit: one lane for the unit first
    lanes.insert(0, f"xor({units[0]}, ({units[1]} * {UNIT_MULTIPLIER}) & {RANK_MASK})")
    # each lane computed once (both accumulators read it), as a column
    xs = [f"{_P}x{i}" for i in range(len(lanes))]
    relation = (
        f"(SELECT *, {', '.join(f'{x} AS {c}' for x, c in zip(lanes, xs, strict=True))} "
        f"FROM {relation})"
    )
    k0, k1, k2, k3 = key_words(plan.hash_key)
    ma, mb = RANK_MULTIPLIERS
    ta, tb = f"{_P}ta", f"{_P}tb"
    n = len(lanes)
    pairs = [(x, x) for x in xs] + [(str(k2 ^ n), str(k3 ^ n))]
    xa, xb = pairs[0]
    rel = (
        f"(SELECT *, xor(CAST({k0 ^ tag} AS BIGINT), {xa}) * {ma} AS {ta}, "
        f"xor(CAST({k1 ^ tag} AS BIGINT), {xb}) * {mb} AS {tb} FROM {relation})"
    )
    for xa, xb in pairs[1:]:
        rel = (
            f"(SELECT * REPLACE (xor({_fold_sql(ta)}, {xa}) * {ma} AS {ta}, "
            f"xor({_fold_sql(tb)}, {xb}) * {mb} AS {tb}) FROM {rel})"
        )
    text_unit = plan.unit is not None and plan.unit.type == "text"
    drop = ", ".join([ta, tb, *xs, *([f"{_P}um"] if text_unit else [])])
    return (
        f"(SELECT * EXCLUDE ({drop}), {_fold_sql(ta)} * {1 << 31} + ({_fold_sql(tb)} >> 1) "
        f"AS {name} FROM {rel})"
    )


class _Packer:
    """A row (cell, quanta) as one integer when the declared domain allows: digits of radix
    n_cells, then (U_q − L_q + 2) per value column (0 for a null quantum, q − L_q + 1 otherwise).
    BIGINT when the product of the radices is below 2^63, HUGEINT below 2^126, else a struct."""

    def __init__(self, plan: AggregatePlan, qnames: list[str]) -> None:
        self.qnames = qnames
        self.values = plan.values
        self.radices = [v.upper_q - v.lower_q + 2 for v in plan.values]
        total = plan.n_cells
        for r in self.radices:
            total *= r
        self.type = "BIGINT" if total < 1 << 63 else "HUGEINT" if total < 1 << 126 else None

    def pack(self) -> str:
        if self.type is None:
            return "{" + ", ".join(f"{_lit(c)}: {c}" for c in [f"{_P}cell", *self.qnames]) + "}"
        expr = f"CAST({_P}cell AS {self.type})"
        for q, vc, radix in zip(self.qnames, self.values, self.radices, strict=True):
            digit = f"COALESCE(CAST({q} AS {self.type}) - ({vc.lower_q - 1}), 0)"
            expr = f"({expr} * {radix} + {digit})"
        return expr

    def unpack(self, packed: str) -> list[str]:
        """SQL select items restoring ``cell`` and the quanta from ``packed``."""
        if self.type is None:
            return [f"{packed}.{c} AS {c}" for c in [f"{_P}cell", *self.qnames]]
        items: list[str] = []
        divisor = 1
        columns = list(zip(self.qnames, self.values, self.radices, strict=True))
        for q, vc, radix in reversed(columns):
            digit = f"(({packed} // {divisor}) % {radix})"
            items.append(
                f"CAST(CASE WHEN {digit} = 0 THEN NULL ELSE {digit} + ({vc.lower_q - 1}) END "
                f"AS {_q_type(vc)}) AS {q}"
            )
            divisor *= radix
        items.append(f"CAST({packed} // {divisor} AS BIGINT) AS {_P}cell")
        return items[::-1]


def _top_rows(
    ctes: list[str],
    current: str,
    step: int,
    by: list[str],
    n: int,
    packer: _Packer,
    plan: AggregatePlan,
) -> str:
    """Append CTEs keeping the ``n`` lowest-ranked rows per ``by`` by one aggregate (no sort)."""
    rank = f"{_P}rr"
    current = _ranked(current, plan, ROW_TAG, True, rank)
    keys = ", ".join(by)
    if n == 1:
        pick = f"arg_min({packer.pack()}, {rank}) AS {_P}t"
    else:
        pick = f"unnest(min_by({packer.pack()}, {rank}, {n})) AS {_P}t"
    ctes.append(f"{_P}a{step} AS (SELECT {keys}, {pick} FROM {current} GROUP BY {keys})")
    ctes.append(
        f"{_P}b{step} AS (SELECT {_P}u, {', '.join(packer.unpack(f'{_P}t'))} FROM {_P}a{step})"
    )
    return f"{_P}b{step}"


def _check_plan(plan: AggregatePlan, names: Sequence[str]) -> None:
    _check_columns(plan.used_columns(), names)
    if not _HEX32.fullmatch(plan.hash_key):
        raise ParameterError("`hash_key` must be 32 hex digits", parameter="hash_key")
    if plan.unit is not None and plan.unit.type not in ("integer", "text"):
        raise ParameterError(
            f"the privacy unit {plan.unit.name!r} must be declared integer or text, not "
            f"{plan.unit.type!r}",
            parameter="privacy_unit",
        )
    if plan.null_units not in ("drop", "own"):
        raise ParameterError(
            f"`null_units` must be 'drop' or 'own', not {plan.null_units!r}",
            parameter="null_units",
        )


def _check_columns(used: Sequence[str], names: Sequence[str]) -> None:
    """Every used column must be in the source (its names are public: header or schema)."""
    missing = [c for c in used if c not in names]
    if missing:
        raise ParameterError(
            f"column {missing[0]!r} is not in the data (its columns: "
            f"{', '.join(repr(n) for n in names[:20])}{', …' if len(names) > 20 else ''})",
            parameter="columns",
        )


def _kind(exc: BaseException) -> str:
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
