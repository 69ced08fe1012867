r"""CSV files as physical lines, one record per line (the CSV rule of docs/data.md, "CSV input").

The engines read a CSV file through :class:`CsvLines`: the file is split into lines at each line
feed (LF) and nowhere else, so no line can change how another is read. This module does the
byte-level part of the rule, vectorised with numpy, and hands the lines to DuckDB as a stream of
Arrow batches (one column ``_snapdp_line``; DuckDB calls :meth:`CsvLines.__arrow_c_stream__` once
per scan, and each call reads the file again from its start, so a query may scan it any number of
times). Splitting a line into fields is SQL (:mod:`snapdp.data.engines.duckdb`).

Per line: one trailing CR is removed (CRLF and LF files read alike; a CR anywhere else is data);
a line with no byte above 0x20 is blank and left out; in UTF-8 a byte-order mark at the start of
a line is removed; a line that does not decode in the declared encoding is passed on as a null
(no record, but counted by ``snapdp check``); a latin-1 line is passed on as UTF-8 text. With a
header, the first non-blank line of each file is left out. The stream holds at most one block
(8 MiB of whole lines, more for a longer line) at a time, outside DuckDB's memory limit.
"""

from __future__ import annotations

import codecs
import gzip
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any, cast

import numpy as np
import numpy.typing as npt

from snapdp.errors import ParameterError

__all__ = ["LINE_COLUMN", "CsvLines", "csv_encoding", "first_line"]

LINE_COLUMN = "_snapdp_line"
_BLOCK = 8 << 20
_BOM = b"\xef\xbb\xbf"
_ENCODINGS = {
    "utf-8": "utf-8",
    "utf8": "utf-8",
    "latin-1": "latin-1",
    "latin1": "latin-1",
    "iso-8859-1": "latin-1",
    "iso8859-1": "latin-1",
}


def csv_encoding(name: str) -> str:
    """The declared CSV encoding, normalised to ``"utf-8"`` or ``"latin-1"`` (a declaration
    error otherwise: the line rule needs an encoding in which a line feed is the byte 0x0A and
    is never part of another character)."""
    key = str(name).lower().replace("_", "-")
    if key not in _ENCODINGS:
        raise ParameterError(
            f"`encoding` {name!r} is not supported for CSV: use utf-8 or latin-1 (convert other "
            "encodings, e.g. UTF-16, to UTF-8 first)",
            parameter="encoding",
        )
    return _ENCODINGS[key]


def check_delimiter(delimiter: str, encoding: str) -> None:
    """A latin-1 file can only hold a delimiter of latin-1 (a declaration error otherwise)."""
    if encoding == "latin-1" and ord(delimiter) > 0xFF:
        raise ParameterError(
            f"`delimiter` {delimiter!r} is not a latin-1 character", parameter="delimiter"
        )


def _open(path: Path) -> tuple[IO[bytes], IO[bytes]]:
    """(the decompressed stream, the file on disk) of ``path``; ``.gz`` is gunzipped."""
    raw: IO[bytes] = open(path, "rb")  # noqa: SIM115 - closed by the caller
    if path.name.lower().endswith(".gz"):
        return cast("IO[bytes]", gzip.GzipFile(fileobj=raw, mode="rb")), raw
    return raw, raw


def _blocks(stream: IO[bytes], size: int = _BLOCK) -> Iterator[bytes]:
    """The stream in blocks of whole lines: each block ends with LF, except the last one when the
    file does not end with LF. A line longer than ``size`` makes its block longer."""
    pending: list[bytes] = []
    while True:
        chunk = stream.read(size)
        if not chunk:
            if pending:
                yield b"".join(pending)
            return
        cut = chunk.rfind(b"\n")
        if cut < 0:
            pending.append(chunk)
            continue
        if cut + 1 == len(chunk):
            pending.append(chunk)
            rest = b""
        else:
            pending.append(chunk[: cut + 1])
            rest = chunk[cut + 1 :]
        yield pending[0] if len(pending) == 1 else b"".join(pending)
        pending = [rest] if rest else []


class _Lines:
    """The lines of one block: [start, end) byte ranges after the per-line rules, and which of
    them are records (``keep``) and which decode (``valid``)."""

    def __init__(self, buf: bytes, utf8: bool) -> None:
        arr = np.frombuffer(buf, np.uint8)
        n = len(arr)
        ends = np.flatnonzero(arr == 10)
        if n and arr[-1] != 10:
            ends = np.append(ends, n)
        k = len(ends)
        starts = np.zeros(k, np.int64)
        starts[1:] = ends[:-1] + 1
        ends = ends.astype(np.int64)
        self.raw_starts, self.raw_ends = starts, ends
        self.cr = False
        if b"\r" in buf:  # one trailing CR is removed
            nonempty = np.flatnonzero(ends > starts)
            cr = np.zeros(k, np.int64)
            cr[nonempty] = arr[ends[nonempty] - 1] == 13
            if cr.any():
                ends = ends - cr
                self.cr = True
        # blank: no byte above 0x20
        keep = ends > starts
        first = np.flatnonzero(keep)
        low = first[arr[starts[first]] <= 32]
        if len(low):
            dtype = np.int64 if n >= 1 << 31 else np.int32
            above = np.zeros(n + 1, dtype)
            np.cumsum(arr > 32, dtype=dtype, out=above[1:])
            keep[low] = above[ends[low]] > above[starts[low]]
        self.bom = False
        if utf8 and _BOM in buf:  # a byte-order mark at the start of a line is removed
            cand = np.flatnonzero(keep & (ends - starts >= 3))
            s = starts[cand]
            hit = cand[(arr[s] == 0xEF) & (arr[s + 1] == 0xBB) & (arr[s + 2] == 0xBF)]
            if len(hit):
                starts = starts.copy()
                starts[hit] += 3
                self.bom = True
        valid = np.ones(k, np.bool_)
        if utf8 and not buf.isascii():
            self._mark_undecodable(buf, valid)
        self.arr, self.starts, self.ends, self.keep, self.valid = arr, starts, ends, keep, valid

    def _mark_undecodable(self, buf: bytes, valid: npt.NDArray[np.bool_]) -> None:
        """Mark the lines holding bytes that are not UTF-8: decode the block, and after each
        failure mark its line and resume after that line's line feed (a CR, an LF and a BOM are
        whole characters, so a line decodes alone exactly when it decodes here)."""
        view = memoryview(buf)
        pos = 0
        n = len(buf)
        while pos < n:
            try:
                codecs.utf_8_decode(view[pos:], "strict", True)
                return
            except UnicodeDecodeError as exc:
                line = int(np.searchsorted(self.raw_starts, pos + exc.start, "right")) - 1
                valid[line] = False
                pos = int(self.raw_ends[line]) + 1

    def drop_first(self) -> bool:
        """Leave out the first non-blank line (a header); whether there was one."""
        first = np.flatnonzero(self.keep)
        if not len(first):
            return False
        self.keep[first[0]] = False
        return True

    def arrow(self) -> Any:
        """The kept lines as an Arrow large_string array (null: a line that does not decode)."""
        import pyarrow as pa

        sel = np.flatnonzero(self.keep)
        s, e = self.starts[sel], self.ends[sel]
        valid = self.valid[sel]
        all_valid = bool(valid.all())
        if not all_valid:
            e = np.where(valid, e, s)
        offsets = np.zeros(len(sel) + 1, np.int64)
        np.cumsum(e - s, out=offsets[1:])
        arr = self.arr
        if len(sel) == len(self.keep) and all_valid and not self.cr and not self.bom:
            data = arr[arr != 10]  # every line whole: drop the line feeds
        else:
            marks = np.zeros(len(arr) + 1, np.int8)
            nonempty = e > s
            marks[s[nonempty]] = 1
            marks[e[nonempty]] -= 1
            data = arr[np.cumsum(marks[:-1], dtype=np.int8).view(np.bool_)]
        bitmap = None if all_valid else pa.py_buffer(np.packbits(valid, bitorder="little"))
        return pa.Array.from_buffers(
            pa.large_string(),
            len(sel),
            [bitmap, pa.py_buffer(offsets), pa.py_buffer(data)],
            null_count=-1 if bitmap is not None else 0,
        )


def first_line(path: Path, encoding: str) -> bytes | None:
    """The first non-blank line of ``path`` after the byte rules (CR and, in UTF-8, a BOM
    removed), as bytes of the declared encoding; None when the file has no non-blank line."""
    utf8 = encoding == "utf-8"
    stream, raw = _open(path)
    try:
        with raw:
            for buf in _blocks(stream, 1 << 16):
                lines = _Lines(buf, utf8=False)  # the bytes, not decoded: the caller decodes
                first = np.flatnonzero(lines.keep)
                if len(first):
                    i = int(first[0])
                    line = buf[int(lines.starts[i]) : int(lines.ends[i])]
                    return line[3:] if utf8 and line.startswith(_BOM) else line
    finally:
        stream.close()
    return None


class CsvLines:
    """The lines of one or more CSV files (read in order) as a re-readable Arrow stream.

    ``done`` and ``total``: bytes of the files on disk read so far by the latest scan, and their
    total size (for ``progress()``: positions in the files, never a count of lines)."""

    def __init__(
        self, paths: Sequence[Path], encoding: str, header: bool, *, block: int = _BLOCK
    ) -> None:
        self.paths = list(paths)
        self.block = block
        self.utf8 = encoding == "utf-8"
        self.header = header
        self.total = sum(p.stat().st_size for p in self.paths)
        self.done = 0

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        import pyarrow as pa

        schema = pa.schema([(LINE_COLUMN, pa.large_string())])
        reader = pa.RecordBatchReader.from_batches(schema, self._batches(schema))
        return reader.__arrow_c_stream__(requested_schema)

    def _batches(self, schema: Any) -> Iterator[Any]:
        import pyarrow as pa

        before = 0
        self.done = 0
        for path in self.paths:
            stream, raw = _open(path)
            try:
                with raw:
                    header = self.header
                    for buf in _blocks(stream, self.block):
                        self.done = before + raw.tell()
                        if not self.utf8 and not buf.isascii():
                            buf = buf.decode("latin-1").encode("utf-8")
                        lines = _Lines(buf, self.utf8)
                        if header and lines.drop_first():
                            header = False
                        array = lines.arrow()
                        if len(array):
                            yield pa.record_batch([array], schema=schema)
            finally:
                stream.close()
            before += path.stat().st_size
            self.done = before
