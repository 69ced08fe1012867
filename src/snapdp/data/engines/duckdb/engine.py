r"""The DuckDB engine: the engine contract in one SQL query per plan, out of core (docs/data.md).

Implements :mod:`snapdp.data.engines.base` step by step; rows never pass through Python one by one
(a CSV's lines are cut by numpy, a block at a time), and only one row per cell comes back.

* **Read.** A path is a literal file or folder (a name holding ``[``, ``*`` or ``?`` is not a
  pattern) unless ``glob=True``. A folder is a Parquet dataset (``**/*.parquet``, hive partitioning;
  files of several schemas read per group of one schema, each at its own types,
  :mod:`.parquet_groups`); a file starting with the Parquet magic bytes is Parquet; any other file
  is a CSV, read one record per line (base step 1): :class:`CsvLines` parses it with numpy, in
  blocks, into a stream of Arrow lists of fields (DuckDB's CSV reader would end lines at a lone CR
  too and let quotes span lines), re-read for each scan whatever the file's size (a small file once
  held in a table, chosen by its size on disk, let one row change the work); a line over
  ``max_line_bytes`` is read past, never held. Each file's header is parsed the same way (never
  sniffed) and its columns are read by name; without a header the columns are declared
  (``CsvOptions.column_names``).
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
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from snapdp.data.engines.base import (
    AggregatePlan,
    Aggregates,
)
from snapdp.data.engines.csv.records import (
    RECORD_COLUMN,
)
from snapdp.data.engines.duckdb.query import (
    cast_sql,
    check_columns,
    check_plan,
    null_sql,
    plan_sql,
    unread_type,
)
from snapdp.data.engines.duckdb.sources import (
    PREFIX,
    TEXT_BLOB,
    DuckDBSource,
    quote_identifier,
    read_failure,
)
from snapdp.data.model.schema import Column
from snapdp.errors import ParameterError

__all__ = ["DuckDBEngine"]

_P = PREFIX


class DuckDBEngine(DuckDBSource):
    """An :class:`~snapdp.data.engines.base.Engine` over a CSV or Parquet file, a folder of Parquet
    files, a pandas DataFrame or an Arrow table (see the module docstring and docs/data.md).

    ``memory_limit`` (e.g. ``"2GB"``) and ``temp_directory`` (default: a private temporary
    folder removed with the engine) are DuckDB's: past the limit, the
    bounding aggregates spill to the temporary directory. ``threads``: DuckDB's thread count.
    An engine that sets none of the three holds a connection of its own to one in-memory
    database the process shares (spilling to a private folder removed at exit): its views and
    temporary tables are its own, and no database is opened per engine.
    """

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
        failure: str | None = None
        try:
            rows = self._con.execute(sql).fetchall()
        except self._duckdb.Error as exc:
            failure = read_failure(exc)  # raised below, outside the handler: no __context__
        finally:
            if self._frame is not None:
                self._con.unregister(f"{_P}frame")
        if failure is not None:
            raise ParameterError(
                f"`data` {self._label!r} could not be read ({failure})", parameter="data"
            )
        # Every cell is unpacked the same way, whether the data hold rows in it or not (an
        # absent cell as a row of zeros): the work does not show which keys occur (docs/data.md,
        # "Run time").
        width = 2 + sum(
            2 + ((3 if layout[j] == "limbs" else 1) if vc.squares else 0)
            for j, vc in enumerate(plan.values)
        )
        zero: tuple[Any, ...] = (0,) * width
        present = {int(row[0]): row for row in rows}
        for cell in range(plan.n_cells):
            row = present.get(cell, zero)
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
        return self.check_select(columns)[0]

    def check_select(self, columns: Sequence[Column]) -> tuple[str, dict[str, str]]:
        """:meth:`cast_select`, and the declared columns whose type in the source's schema the
        contract never reads as their declared type, with that type (``{"k": "BLOB"}``: every
        cell of such a column is null in releases). For ``snapdp check``; from the schema only."""
        decl = {c.name: c for c in columns}
        check_columns(list(decl), self._names)
        parts = self._source_parts(decl)
        unread: dict[str, str] = {}
        selects = []
        for relation, types in parts:  # Parquet files of several schemas: group by group
            for name, column in decl.items():
                found = unread_type(name, column, types) if name in types else None
                if found is not None:
                    unread.setdefault(name, found)
            items = []
            for i, (name, column) in enumerate(decl.items()):
                if name not in types and len(parts) > 1:  # a group lacking the column
                    items.append(f"CAST(NULL AS VARCHAR) AS raw_{i}")
                    items.append(f"{null_sql(column)} AS val_{i}")
                    continue
                col = quote_identifier(name)
                if types.get(name) == TEXT_BLOB:  # the text, or its bytes escaped when not UTF-8
                    col = f"COALESCE(try(decode({col})), CAST({col} AS VARCHAR))"
                items.append(f"NULLIF(CAST({col} AS VARCHAR), '') AS raw_{i}")
                items.append(f"{cast_sql(name, column, types)} AS val_{i}")
            selects.append(f"SELECT {', '.join(items) or '1 AS one'} FROM {relation}")
        if len(selects) == 1:
            return selects[0], unread
        return f"SELECT * FROM ({' UNION ALL '.join(selects)})", unread

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
                f"`data` {self._label!r} could not be read ({read_failure(exc)})", parameter="data"
            ) from None

    # -- SQL -----------------------------------------------------------------------------------
    def sql(self, plan: AggregatePlan) -> tuple[str, list[str]]:
        """The query for ``plan`` and, per value column, how its squares come back."""
        check_plan(plan, self._names)
        relation, types = self._source_for(plan)
        return plan_sql(plan, relation, types)
