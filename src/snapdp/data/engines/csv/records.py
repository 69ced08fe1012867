"""The Arrow records of CSV lines and the re-readable :class:`CsvLines` stream DuckDB scans
(docs/data.md, "CSV input"); the per-line rule is in :mod:`snapdp.data.engines.csv.lines`."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from snapdp.data.engines.csv.block import block_records, cut_block
from snapdp.data.engines.csv.lines import (
    _BLOCK,
    _MAX_LINE,
    LONG_LINE,
    _blocks,
    _Bools,
    _Lines,
    _open,
    split_fields,
)

__all__ = [
    "FIELDS_COLUMN",
    "GROUP_COLUMN",
    "RECORD_COLUMN",
    "CsvLines",
]

FIELDS_COLUMN = "_snapdp_fields"
RECORD_COLUMN = "_snapdp_record"
GROUP_COLUMN = "_snapdp_group"
_AHEAD = 2  # blocks parsed ahead of the one DuckDB takes


def _flags(ok: _Bools) -> Any:
    """An Arrow boolean array (whether each line is a record)."""
    import pyarrow as pa

    return pa.Array.from_buffers(
        pa.bool_(), len(ok), [None, pa.py_buffer(np.packbits(ok, bitorder="little"))]
    )


class CsvLines:
    """The lines of one or more CSV files (read in order) as a re-readable Arrow stream: per
    non-blank line its fields as a list (null: no record), or, without ``lists``, whether it is
    a record.

    ``fields``: the number of fields of a record, one for all files or one per file (each file's
    own header). ``groups``: per file a group number (the files of one header); when given,
    each line also carries its file's group (:data:`GROUP_COLUMN`), so that a query reads each
    file's columns by name. ``max_line``: longer lines are no record, never held in memory.

    :meth:`percent`: how much of the files the latest scan has read, in whole percent of their
    size on disk (for ``progress()``: never a count of lines or bytes); a stream made with
    ``progress=other`` reports its position through ``other``."""

    def __init__(
        self,
        paths: Sequence[Path],
        encoding: str,
        header: bool,
        delimiter: str,
        fields: int | Sequence[int],
        *,
        groups: Sequence[int] | None = None,
        max_line: int = _MAX_LINE,
        lists: bool = True,
        block: int = _BLOCK,
        progress: CsvLines | None = None,
    ) -> None:
        self.paths = list(paths)
        self.lists = lists
        self._progress = progress or self  # where ``done`` is kept (shared by two streams)
        self.delimiter = delimiter.encode("utf-8")
        counts = [fields] * len(self.paths) if isinstance(fields, int) else list(fields)
        if len(counts) != len(self.paths):
            raise ValueError("one field count per file")
        self.fields = counts
        self.groups = None if groups is None else list(groups)
        self.max_line = max_line
        self.block = block
        self.utf8 = encoding == "utf-8"
        self.header = header
        self.total = sum(p.stat().st_size for p in self.paths)
        self.done = 0

    def percent(self) -> int:
        """Whole percent of the files' bytes on disk the latest scan has read (0 to 100)."""
        if not self.total:
            return 0
        return min(100, 100 * self.done // self.total)

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        import pyarrow as pa

        kind = pa.large_list(pa.large_string()) if self.lists else pa.bool_()
        columns = [(FIELDS_COLUMN if self.lists else RECORD_COLUMN, kind)]
        if self.groups is not None:
            columns.append((GROUP_COLUMN, pa.int32()))
        schema = pa.schema(columns)
        reader = pa.RecordBatchReader.from_batches(schema, self._batches(schema))
        return reader.__arrow_c_stream__(requested_schema)

    def skipped(self, limit: int) -> list[tuple[Path, int, str]]:
        """(file, line number from 1, why) of the first ``limit`` non-blank lines that are no
        record, in file order; why is ``"longer than N bytes"``, ``"not valid ENCODING"``,
        ``"not split by the CSV rule"`` or ``"N fields, not M"``. For ``snapdp check`` (the
        owner's tool), never for a release."""
        out: list[tuple[Path, int, str]] = []
        encoding = "UTF-8" if self.utf8 else "latin-1"
        for path, fields in zip(self.paths, self.fields, strict=True):
            stream, raw = _open(path, self.header)
            try:
                with raw:
                    header = self.header
                    number = 0  # lines before the block
                    for buf in _blocks(stream, self.block, self.max_line):
                        if len(out) >= limit:
                            return out
                        if not self.utf8 and not buf.isascii():
                            buf = buf.decode("latin-1").encode("utf-8")
                        lines = _Lines(buf, self.utf8)
                        if header and lines.drop_first():
                            header = False
                        kept = np.flatnonzero(lines.keep)
                        split = split_fields(*lines.compact(), self.delimiter, None)
                        for j in np.flatnonzero(~split.ok | (split.per_line + 1 != fields)):
                            if len(out) >= limit:
                                break
                            i = int(kept[j])
                            line = buf[int(lines.raw_starts[i]) : int(lines.raw_ends[i])]
                            if line == LONG_LINE:
                                why = f"longer than {self.max_line} bytes"
                            elif not lines.valid[i]:
                                why = f"not valid {encoding}"
                            elif not split.ok[j]:
                                why = "not split by the CSV rule"
                            else:
                                why = f"{int(split.per_line[j]) + 1} fields, not {fields}"
                            out.append((path, number + i + 1, why))
                        number += len(lines.keep)
            finally:
                stream.close()
        return out

    def _parse(self, buf: bytes, header: bool, fields: int) -> tuple[Any, bool]:
        """One block as Arrow lists of fields (or record flags, without ``lists``); whether a
        header line was left out of it. Every block takes the same vectorised steps, whatever
        its lines hold (docs/data.md, "Run time"): no step is skipped or added because of a
        CR, a byte-order mark, a blank line, a quote, non-ASCII or undecodable bytes."""
        if not self.utf8:  # the declaration, not the data, picks this
            buf = buf.decode("latin-1").encode("utf-8")
        block = cut_block(buf, self.utf8, self.delimiter, fields, header, self.lists)
        return (block_records(block) if self.lists else _flags(block.ok)), block.dropped

    def _batch(self, records: Any, schema: Any, group: int | None) -> Any:
        import pyarrow as pa

        if group is None:
            return pa.record_batch([records], schema=schema)
        tag = pa.array(np.full(len(records), group, np.int32))
        return pa.record_batch([records, tag], schema=schema)

    def _batches(self, schema: Any) -> Iterator[Any]:
        """The record batches of every file in order. Blocks are parsed by two worker threads
        (numpy lets go of the GIL for most of the work), at most ``_AHEAD`` blocks ahead of the
        one DuckDB takes; a file's blocks up to its header are parsed in turn."""
        before = 0
        self._progress.done = 0
        groups: list[int | None] = [None] * len(self.paths)
        if self.groups is not None:
            groups = list(self.groups)
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="snapdp-csv") as pool:
            for path, fields, group in zip(self.paths, self.fields, groups, strict=True):
                stream, raw = _open(path, self.header)
                try:
                    with raw:
                        header = self.header
                        ahead: deque[Future[tuple[Any, bool]]] = deque()
                        for buf in _blocks(stream, self.block, self.max_line):
                            self._progress.done = before + raw.tell()
                            if header:
                                records, dropped = self._parse(buf, True, fields)
                                header = not dropped
                                if len(records):
                                    yield self._batch(records, schema, group)
                                continue
                            ahead.append(pool.submit(self._parse, buf, False, fields))
                            while len(ahead) > _AHEAD:
                                records = ahead.popleft().result()[0]
                                if len(records):
                                    yield self._batch(records, schema, group)
                        while ahead:
                            records = ahead.popleft().result()[0]
                            if len(records):
                                yield self._batch(records, schema, group)
                finally:
                    stream.close()
                before += path.stat().st_size
                self._progress.done = before
