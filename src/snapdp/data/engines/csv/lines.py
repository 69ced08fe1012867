r"""CSV files read one record per line, for the DuckDB engine (docs/data.md, "CSV input").

DuckDB's own CSV reader ends a line at a lone CR as well as at LF, and lets a quoted field run
over lines, so the DuckDB engine reads a CSV file through :class:`CsvLines` instead: the file is
read in blocks of whole lines and each block is parsed here, vectorised with numpy, into one
Arrow list of fields per non-blank line (null for a line that is no record), which DuckDB scans
as a stream. DuckDB calls :meth:`CsvLines.__arrow_c_stream__` once per scan and each call reads
the file again from its start, so a query may scan it any number of times. Blocks are 2 MiB of
whole lines, plus at most one unfinished line of ``max_line`` bytes: a longer line is read past
without being kept (:func:`_blocks`) and comes as :data:`LONG_LINE`, never a record. Two blocks
are parsed at a time, two more wait for DuckDB: that memory, outside DuckDB's memory limit, is
bounded by a constant (docs/data.md, "Reading the data": about 64 × (2 MiB + ``max_line``)).

The rule, per line (:class:`_Lines`, :func:`split_fields`): lines end at LF only; one trailing CR
is removed; a line with no byte above 0x20 is blank and left out; in UTF-8 a byte-order mark at
the start of a line is removed; a line that does not decode is no record (latin-1 is passed on
as UTF-8); a line longer than ``max_line`` bytes is no record; with a header, the first
non-blank line of each file is left out. A line splits into fields each either ``"…"`` (``""``
a quote; the delimiter and CR inside are data) or without the delimiter and ``"``; a line that
does not split so, or not into its file's number of columns (its header's, or the declared
ones), is no record. Every block is cut by the same sequence of vectorised steps, whatever its
lines hold (:mod:`snapdp.data.engines.csv.block`; docs/data.md, "Run time"), tested against the
reference parser of ``tests/csv_oracle.py``.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path
from typing import IO, NamedTuple, cast

import numpy as np
import numpy.typing as npt

from snapdp.data.model.schema import DEFAULT_MAX_LINE_BYTES
from snapdp.errors import ParameterError

__all__ = [
    "LONG_LINE",
    "Split",
    "check_delimiter",
    "column_names",
    "csv_encoding",
    "first_line",
    "first_line_in",
    "header_fields",
    "split_fields",
    "unquote",
    "utf8_errors",
]


_Bytes = npt.NDArray[np.uint8]
_Ints = npt.NDArray[np.int64]
_Bools = npt.NDArray[np.bool_]


_BLOCK = 2 << 20
_MAX_LINE = DEFAULT_MAX_LINE_BYTES
#: What a line longer than the declared maximum is read as: one ``"`` (an open quote), so it
#: never splits into fields, in any path of the parser; the NUL makes it no header either.
LONG_LINE = b'\x00"'
_BOM = b"\xef\xbb\xbf"
_GZIP_MAGIC = b"\x1f\x8b"
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


def _open(path: Path, header: bool = True) -> tuple[IO[bytes], IO[bytes]]:
    """(the decompressed stream, the file on disk) of ``path``; a gzip file is gunzipped. With
    a ``header`` it is found by its magic bytes, whatever its name (the file then starts with
    the public header or with compression); without one the first line is a record, so one
    unit's line must not decide how the whole file is read: it is found by its name (``.gz``).
    """
    raw = open(path, "rb")  # noqa: SIM115 - closed by the caller
    gz = raw.peek(2)[:2] == _GZIP_MAGIC if header else path.name.lower().endswith(".gz")
    if gz:
        return cast("IO[bytes]", gzip.GzipFile(fileobj=raw, mode="rb")), raw
    return raw, raw


def _blocks(stream: IO[bytes], size: int = _BLOCK, max_line: int = _MAX_LINE) -> Iterator[bytes]:
    """The stream in blocks of whole lines: each block ends with LF, except the last one when the
    file does not end with LF. A line of more than ``max_line`` bytes (its LF not counted) comes
    as :data:`LONG_LINE` instead (one line, never a record), read past without being kept: a
    block holds at most ``size`` + ``max_line`` + 1 bytes, and nothing else is held."""
    carry = b""  # the start of a line not ended yet (at most max_line bytes)
    skipping = False  # inside a line longer than max_line: read on to its LF
    while True:
        chunk = stream.read(size)
        if not chunk:
            if skipping:
                yield LONG_LINE
            elif carry:
                yield carry
            return
        head = b""
        if skipping:
            nl = chunk.find(b"\n")
            if nl < 0:
                continue
            skipping = False
            head = LONG_LINE + b"\n"
            chunk = chunk[nl + 1 :]
        first = chunk.find(b"\n")
        if first < 0:
            if len(carry) + len(chunk) > max_line:
                carry, skipping = b"", True
            else:
                carry += chunk
            if head:
                yield head
            continue
        last = chunk.rfind(b"\n")
        view = memoryview(chunk)  # slices without copies: the block is joined once
        lead = LONG_LINE + b"\n" if len(carry) + first > max_line else b""
        lo = first + 1 if lead else 0  # the part of the chunk taken whole
        middle: bytes | memoryview = view[lo : last + 1]
        if len(middle) > max_line + 1 and _may_hold_long(chunk, lo, last + 1, max_line):
            middle = _shorten(bytes(middle), max_line)
        block = b"".join((head, lead if lead else carry, middle))
        tail = chunk[last + 1 :]
        if len(tail) > max_line:
            carry, skipping = b"", True
        else:
            carry = tail
        yield block


def _may_hold_long(chunk: bytes, start: int, end: int, max_line: int) -> bool:
    """False when no line of ``chunk[start:end]`` can be longer than ``max_line``: a run of
    ``max_line`` + 1 bytes without LF covers one of the aligned windows of half that length, and
    each holds an LF (a few ``find`` calls for a block of 2 MiB and the default limit)."""
    half = (max_line + 1) // 2
    if end - start > 64 * half:
        return True
    return any(chunk.find(b"\n", i, min(i + half, end)) < 0 for i in range(start, end, half))


def _shorten(lines: bytes, max_line: int) -> bytes:
    """``lines`` (each ending with LF) with each line of more than ``max_line`` bytes replaced
    by :data:`LONG_LINE`."""
    ends = np.flatnonzero(np.frombuffer(lines, np.uint8) == 10)
    lengths = np.diff(ends, prepend=-1) - 1
    long = np.flatnonzero(lengths > max_line)
    if not len(long):
        return lines
    parts = []
    start = 0
    for i in long:
        parts.append(lines[start : int(ends[i]) - int(lengths[i])])
        parts.append(LONG_LINE)
        start = int(ends[i])
    parts.append(lines[start:])
    return b"".join(parts)


def utf8_errors(arr: _Bytes, pad: _Bytes | None = None) -> _Ints:
    """Positions (sorted) of the bytes where strict UTF-8 decoding fails, each within the line
    it belongs to: a byte that never starts or continues a character (80–BF where no sequence
    expects one, C0, C1, F5–FF), or the first byte of a sequence that is cut short, overlong
    (E0 80–9F, F0 80–8F), a surrogate (ED A0–BF) or above U+10FFFF (F4 90–BF). Python's decoder
    rejects exactly these (tested). The same steps for every block: the bytes above 0x7F are
    found in one pass, then checked with their next three bytes (a continuation byte of a
    sequence is itself above 0x7F, so it is the next one found). ``pad``: ``arr`` followed by at
    least three 0s, if the caller has it."""
    if pad is None:
        pad = np.frombuffer(arr.tobytes() + bytes(3), np.uint8)  # 0s: never continuation bytes
    high = np.flatnonzero(arr >= 0x80)
    b = arr[high]
    b1, b2, b3 = pad[high + 1], pad[high + 2], pad[high + 3]
    c1, c2, c3 = (b1 & 0xC0) == 0x80, (b2 & 0xC0) == 0x80, (b3 & 0xC0) == 0x80
    lead2 = (b >= 0xC2) & (b <= 0xDF)
    lead3 = (b & 0xF0) == 0xE0
    lead4 = (b >= 0xF0) & (b <= 0xF4)
    ok2 = lead2 & c1
    ok3 = lead3 & c1 & c2 & ~((b == 0xE0) & (b1 < 0xA0)) & ~((b == 0xED) & (b1 > 0x9F))
    ok4 = lead4 & c1 & c2 & c3 & ~((b == 0xF0) & (b1 < 0x90)) & ~((b == 0xF4) & (b1 > 0x8F))
    h = len(high)
    claimed = np.zeros(h + 3, np.bool_)  # continuation bytes of the well-formed sequences
    claimed[1:] |= np.concatenate([ok2 | ok3 | ok4, np.zeros(2, np.bool_)])
    claimed[2:] |= np.concatenate([ok3 | ok4, np.zeros(1, np.bool_)])
    claimed[3:] |= ok4
    never = (b == 0xC0) | (b == 0xC1) | (b >= 0xF5)
    stray = ((b & 0xC0) == 0x80) & ~claimed[:h]
    bad = never | stray | (lead2 & ~ok2) | (lead3 & ~ok3) | (lead4 & ~ok4)
    found: _Ints = high[bad].astype(np.int64)
    return found


class _Lines:
    """The lines of one block: [start, end) byte ranges after the per-line rules, and which of
    them are records (``keep``) and which decode (``valid``).

    Every block goes through the same operations, whatever its lines hold (docs/data.md, "Run
    time"): the trailing CR, blank-line, byte-order-mark and UTF-8 checks run over every line
    of every block, never only when a byte of the block calls for them."""

    def __init__(self, buf: bytes, utf8: bool) -> None:
        arr = np.frombuffer(buf, np.uint8)
        n = len(arr)
        pad = np.zeros(n + 4, np.uint8)  # the bytes, 0 beyond the end (index −1: a 0 too)
        pad[:n] = arr
        ends = np.flatnonzero(arr == 10)
        if n and arr[-1] != 10:  # the last line of a file that does not end with LF
            ends = np.append(ends, n)
        k = len(ends)
        starts = np.zeros(k, np.int64)
        starts[1:] = ends[:-1] + 1
        ends = ends.astype(np.int64)
        self.raw_starts, self.raw_ends = starts, ends
        # one trailing CR is removed (an empty line ends at its start: pad[−1] is 0, no CR)
        ends = ends - ((pad[ends - 1] == 13) & (ends > starts))
        # blank: no byte above 0x20
        dtype = np.int64 if n >= 1 << 31 else np.int32
        above = np.zeros(n + 1, dtype)
        np.cumsum(arr > 32, dtype=dtype, out=above[1:])
        keep = above[ends] > above[starts]
        valid = np.ones(k, np.bool_)
        if utf8:  # the declaration's encoding, not the data, picks this
            # a byte-order mark at the start of a line is removed
            bom = (
                keep
                & (ends - starts >= 3)
                & (pad[starts] == 0xEF)
                & (pad[starts + 1] == 0xBB)
                & (pad[starts + 2] == 0xBF)
            )
            starts = starts + 3 * bom
            # CR, LF and BOM are whole characters and never part of another, so a line
            # decodes alone exactly when its bytes hold no error here
            errors = utf8_errors(arr)
            valid[np.searchsorted(self.raw_starts, errors, "right") - 1] = False
        self.arr, self.starts, self.ends, self.keep, self.valid = arr, starts, ends, keep, valid

    def drop_first(self) -> bool:
        """Leave out the first non-blank line (a header); whether there was one."""
        first = np.flatnonzero(self.keep)
        if not len(first):
            return False
        self.keep[first[0]] = False
        return True

    def compact(self) -> tuple[_Bytes, _Ints, _Bools]:
        """The kept lines back to back: (bytes, offsets (one more than lines), which decode; a
        line that does not decode is empty)."""
        sel = np.flatnonzero(self.keep)
        s, e = self.starts[sel], self.ends[sel]
        valid = self.valid[sel]
        e = np.where(valid, e, s)
        offsets = np.zeros(len(sel) + 1, np.int64)
        np.cumsum(e - s, out=offsets[1:])
        marks = np.zeros(len(self.arr) + 1, np.int8)  # +1 where a kept range starts, −1 at its end
        nonempty = e > s
        marks[s[nonempty]] = 1
        marks[e[nonempty]] -= 1
        data = self.arr[np.cumsum(marks[:-1], dtype=np.int8).view(np.bool_)]
        return data, offsets, valid


class Split(NamedTuple):
    """Lines split by :func:`split_fields`: ``data`` with each field separator as one LF,
    ``offsets`` of the lines in it, ``ok`` (which lines are records), ``seps`` (the separators'
    positions in ``data``) and ``per_line`` (separators per line)."""

    data: _Bytes
    offsets: _Ints
    ok: _Bools
    seps: _Ints
    per_line: _Ints


def split_fields(
    data: _Bytes, offsets: _Ints, ok: _Bools, delimiter: bytes, fields: int | None
) -> Split:
    """Split lines (UTF-8, back to back: ``data[offsets[i]:offsets[i + 1]]``) into fields by the
    CSV rule, vectorised; a line is a record (``ok``) when it splits, into ``fields`` fields if
    given.

    A field is ``"…"`` (anything but a lone ``"``; ``""`` is a quote) or holds neither the
    delimiter nor ``"``. So a line splits iff it holds an even number of quotes and each quote
    with an even number of quotes before it in the line (an opening one) follows the line's
    start, a delimiter or a quote, and each other (a closing one) precedes the line's end, a
    delimiter or a quote; its field separators are then the delimiters with an even number of
    quotes before them. (Cut at its quotes, the line's segments outside the quotes must be empty
    — a doubled quote — or touch a delimiter where a quoted field ends or starts.) The delimiter
    is one character: in UTF-8 its bytes never start inside another character, and ``"`` is
    one byte."""
    size = len(data)
    k = len(offsets) - 1
    width = len(delimiter)
    index = np.int32 if size < 1 << 31 else np.int64
    starts_d = np.zeros(size + 2, np.bool_)  # a delimiter starts here (index −1: the last pad)
    if width == 1:
        np.equal(data, delimiter[0], out=starts_d[:size])
    elif size >= width:
        hit = data[: size - width + 1] == delimiter[0]
        for t in range(1, width):
            hit &= data[t : size - width + 1 + t] == delimiter[t]
        starts_d[: size - width + 1] = hit
    dpos = np.flatnonzero(starts_d)
    is_quote = data == 34
    qpos = np.flatnonzero(is_quote)
    quotes = np.zeros(size + 1, index)  # quotes before each byte
    np.cumsum(is_quote, dtype=index, out=quotes[1:])
    at_line = quotes[offsets]  # quotes before each line (and the end)
    count = np.diff(at_line)  # quotes per line
    dcount = np.diff(np.searchsorted(dpos, offsets))  # delimiters per line
    even = ((quotes[dpos] - np.repeat(at_line[:-1], dcount)) & 1) == 0
    sep = dpos[even]
    line_of_d = np.repeat(np.arange(k, dtype=np.int64), dcount)
    per_line = np.bincount(line_of_d[even], minlength=k).astype(np.int64)
    ends_d = np.zeros(size + 2, np.bool_)  # a delimiter ends here
    span = max(size - width + 1, 0)  # (a block shorter than the delimiter has none)
    ends_d[width - 1 : width - 1 + span] = starts_d[:span]
    line_of_q = np.repeat(np.arange(k, dtype=np.int64), count)
    opening = ((np.arange(len(qpos), dtype=index) - at_line[line_of_q]) & 1) == 0
    padded = np.zeros(size + 2, np.uint8)  # the bytes, 0 beyond both ends
    padded[:size] = data
    left = np.where(
        opening,
        qpos == np.repeat(offsets[:-1], count),
        qpos + 1 == np.repeat(offsets[1:], count),
    )
    near = np.where(opening, qpos - 1, qpos + 1)
    fine = left | (padded[near] == 34) | np.where(opening, ends_d[near], starts_d[near])
    bad = (count & 1) == 1
    bad[line_of_q[~fine]] = True
    ok = ok & ~bad
    if fields is not None:
        ok = ok & (per_line + 1 == fields)
    out = data.copy()
    out[sep] = 10
    if width > 1:
        keep = np.ones(size, np.bool_)
        for t in range(1, width):
            keep[sep + t] = False
        out = out[keep]
        shift = np.zeros(k + 1, np.int64)
        np.cumsum(per_line, out=shift[1:])
        offsets = offsets - (width - 1) * shift
        sep = sep - (width - 1) * np.arange(len(sep), dtype=np.int64)
    return Split(out, offsets, ok, sep, per_line)


def header_fields(line: str, delimiter: str) -> list[str] | None:
    """The fields of one line (the header) by the same rule, unquoted; None if it does not
    split."""
    raw = np.frombuffer(line.encode("utf-8"), np.uint8)
    data, _, ok, _, _ = split_fields(
        raw, np.array([0, len(raw)], np.int64), np.ones(1, np.bool_), delimiter.encode(), None
    )
    if not ok[0]:
        return None
    return [unquote(f) for f in data.tobytes().decode("utf-8").split("\n")]


def unquote(field: str) -> str:
    """A field as split from a line: a quoted one without its quotes, ``""`` as ``"``."""
    return field[1:-1].replace('""', '"') if field.startswith('"') else field


def column_names(fields: list[str], label: str) -> list[str]:
    """The column names a CSV header with ``fields`` (unquoted) gives: those fields (refused
    when empty or repeated)."""
    if fields == [""]:
        raise ParameterError(
            f"`data` {label!r}: the first line holds no CSV header", parameter="data"
        )
    if len(set(fields)) != len(fields):
        raise ParameterError(
            f"`data` {label!r}: the CSV header repeats a column name", parameter="data"
        )
    return fields


def first_line(path: Path, encoding: str, max_line: int = _MAX_LINE) -> bytes | None:
    """The first non-blank line of ``path`` after the byte rules (CR and, in UTF-8, a BOM
    removed), as bytes of the declared encoding (:data:`LONG_LINE` when it is longer than
    ``max_line`` bytes); None when the file has no non-blank line."""
    stream, raw = _open(path)
    try:
        with raw:
            for buf in _blocks(stream, 1 << 16, max_line):
                line = first_line_in(buf, encoding)
                if line is not None:
                    return line
    finally:
        stream.close()
    return None


def first_line_in(buf: bytes, encoding: str) -> bytes | None:
    """The first non-blank line of the bytes ``buf`` (whole lines) after the byte rules (one
    trailing CR and, in UTF-8, a leading BOM removed), as bytes of ``encoding``; None when
    there is none. Shared by :func:`first_line` and the Spark engine's header."""
    lines = _Lines(buf, utf8=False)  # the bytes, not decoded: the caller decodes
    first = np.flatnonzero(lines.keep)
    if not len(first):
        return None
    i = int(first[0])
    line = buf[int(lines.starts[i]) : int(lines.ends[i])]
    return line[3:] if encoding == "utf-8" and line.startswith(_BOM) else line
