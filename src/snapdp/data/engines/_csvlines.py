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
ones), is no record. Blocks of plain lines (no CR or BOM, each field free of quotes or wrapped
whole in them) are cut in one pass (:func:`_plain_records`); the rest line by line. Both are
tested against the reference parser of ``tests/data_oracle.py`` and against each other.
"""

from __future__ import annotations

import codecs
import gzip
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any, NamedTuple, cast

import numpy as np
import numpy.typing as npt

from snapdp.data.model.schema import DEFAULT_MAX_LINE_BYTES
from snapdp.errors import ParameterError

__all__ = [
    "FIELDS_COLUMN",
    "GROUP_COLUMN",
    "LONG_LINE",
    "RECORD_COLUMN",
    "CsvLines",
    "Split",
    "check_delimiter",
    "csv_encoding",
    "first_line",
    "header_fields",
    "split_fields",
    "utf8_errors",
]

_Bytes = npt.NDArray[np.uint8]
_Ints = npt.NDArray[np.int64]
_Bools = npt.NDArray[np.bool_]

FIELDS_COLUMN = "_snapdp_fields"
RECORD_COLUMN = "_snapdp_record"
GROUP_COLUMN = "_snapdp_group"
_BLOCK = 2 << 20
_MAX_LINE = DEFAULT_MAX_LINE_BYTES
#: What a line longer than the declared maximum is read as: one ``"`` (an open quote), so it
#: never splits into fields, in any path of the parser; the NUL makes it no header either.
LONG_LINE = b'\x00"'
_AHEAD = 2  # blocks parsed ahead of the one DuckDB takes
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


def utf8_errors(arr: _Bytes) -> _Ints:
    """Positions (sorted, perhaps repeated) of the bytes where strict UTF-8 decoding fails, each
    within the line it belongs to: a byte that never starts or continues a character (80–BF
    where no sequence expects one, C0, C1, F5–FF), or the first byte of a sequence that is cut
    short, overlong (E0 80–9F, F0 80–8F), a surrogate (ED A0–BF) or above U+10FFFF (F4 90–BF).
    Python's decoder rejects exactly these (tested)."""
    n = len(arr)
    pad = np.zeros(n + 3, np.uint8)  # 0 beyond the end: never a continuation byte
    pad[:n] = arr
    cont = (pad & 0xC0) == 0x80
    lead2 = np.flatnonzero((arr >= 0xC2) & (arr <= 0xDF))
    lead3 = np.flatnonzero((arr & 0xF0) == 0xE0)
    lead4 = np.flatnonzero((arr >= 0xF0) & (arr <= 0xF4))
    never = np.flatnonzero((arr == 0xC0) | (arr == 0xC1) | (arr >= 0xF5))
    second3 = pad[lead3 + 1]
    ok3 = (
        cont[lead3 + 1]
        & cont[lead3 + 2]
        & ~((arr[lead3] == 0xE0) & (second3 < 0xA0))
        & ~((arr[lead3] == 0xED) & (second3 > 0x9F))
    )
    second4 = pad[lead4 + 1]
    ok4 = (
        cont[lead4 + 1]
        & cont[lead4 + 2]
        & cont[lead4 + 3]
        & ~((arr[lead4] == 0xF0) & (second4 < 0x90))
        & ~((arr[lead4] == 0xF4) & (second4 > 0x8F))
    )
    ok2 = cont[lead2 + 1]
    claimed = np.zeros(n + 3, np.bool_)  # continuation bytes of the well-formed sequences
    claimed[lead2[ok2] + 1] = True
    good3 = lead3[ok3]
    claimed[good3 + 1] = True
    claimed[good3 + 2] = True
    good4 = lead4[ok4]
    claimed[good4 + 1] = True
    claimed[good4 + 2] = True
    claimed[good4 + 3] = True
    stray = np.flatnonzero(cont[:n] & ~claimed[:n])
    return np.sort(np.concatenate([never, stray, lead2[~ok2], lead3[~ok3], lead4[~ok4]]))


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
        """Mark the lines holding bytes that are not UTF-8 (a whole-block decode first: most
        blocks are valid; else :func:`utf8_errors`, linear however many lines are bad). CR, LF
        and BOM are whole characters and never part of another, so a line decodes alone exactly
        when its bytes hold no error here."""
        try:
            codecs.utf_8_decode(buf, "strict", True)
            return
        except UnicodeDecodeError:
            pass
        errors = utf8_errors(np.frombuffer(buf, np.uint8))
        if len(errors):
            valid[np.searchsorted(self.raw_starts, errors, "right") - 1] = False

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
    if not len(qpos):
        sep = dpos
        per_line = _per_line(dpos, offsets, fields)
    else:
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
        ends_d[width - 1 : size] = starts_d[: size - width + 1]
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
    if width > 1 and len(sep):
        keep = np.ones(size, np.bool_)
        for t in range(1, width):
            keep[sep + t] = False
        out = out[keep]
        shift = np.zeros(k + 1, np.int64)
        np.cumsum(per_line, out=shift[1:])
        offsets = offsets - (width - 1) * shift
        sep = sep - (width - 1) * np.arange(len(sep), dtype=np.int64)
    return Split(out, offsets, ok, sep, per_line)


def _per_line(dpos: _Ints, offsets: _Ints, fields: int | None) -> _Ints:
    """How many of the sorted positions ``dpos`` fall in each line. Fast when every line holds
    ``fields`` − 1: then the i-th run of ``fields`` − 1 positions lies in line i."""
    k = len(offsets) - 1
    if fields is not None and len(dpos) == k * (fields - 1):
        if fields == 1:
            return np.zeros(k, np.int64)
        runs = dpos.reshape(k, fields - 1)
        if (runs[:, 0] >= offsets[:-1]).all() and (runs[:, -1] < offsets[1:]).all():
            return np.full(k, fields - 1, np.int64)
    return np.diff(np.searchsorted(dpos, offsets))


def _list_array(fields: _Ints, values: _Ints, data: _Bytes, ok: _Bools | None) -> Any:
    """An Arrow large_list<large_string>: list i holds the strings ``fields[i]`` to
    ``fields[i + 1]`` − 1, string j is ``data[values[j]:values[j + 1]]``; null where not ``ok``."""
    import pyarrow as pa

    strings = pa.Array.from_buffers(
        pa.large_string(), len(values) - 1, [None, pa.py_buffer(values), pa.py_buffer(data)]
    )
    bitmap = None
    if ok is not None and not ok.all():
        bitmap = pa.py_buffer(np.packbits(ok, bitorder="little"))
    return pa.Array.from_buffers(
        pa.large_list(pa.large_string()),
        len(fields) - 1,
        [bitmap, pa.py_buffer(fields)],
        null_count=0 if bitmap is None else -1,
        children=[strings],
    )


def _plain_records(buf: bytes, delimiter: bytes, fields: int, lists: bool = True) -> Any | None:
    """The fast path, for a block without CR or BOM whose bytes decode, ``fields`` >= 2 and a
    one-byte delimiter above 0x20 (so that no blank line can hold ``fields`` − 1 of them). When
    every line holds exactly ``fields`` − 1 delimiters and every field is either free of ``"``
    or ``"…"`` with no ``"`` inside, the lines are records and their fields (quotes removed) are
    cut in one pass: as Arrow lists, or without ``lists`` as an array of True per line. Else
    None (the line-by-line path decides)."""
    arr = np.frombuffer(buf, np.uint8)
    n = len(arr)
    cut = arr == 10
    cut |= arr == delimiter[0]
    seps = np.flatnonzero(cut)
    final = bool(n) and arr[-1] != 10  # the last line has no LF: a cut at the end
    total = len(seps) + int(final)
    if total % fields or not total:
        return None
    kinds = arr[seps]
    if final:
        kinds = np.append(kinds, np.uint8(10))
    grid = kinds.reshape(total // fields, fields)  # per line: fields − 1 delimiters, its LF
    if not ((grid[:, -1] == 10).all() and (grid[:, :-1] != 10).all()):
        return None
    starts = np.empty(total, np.int64)  # each field's first byte; it ends at the next cut
    starts[0] = 0
    starts[1:] = seps[: total - 1] + 1
    quoted = b'"' in buf
    if quoted:
        index = np.int32 if n < 1 << 31 else np.int64
        is_quote = arr == 34
        quotes = np.zeros(n + 1, index)  # quotes before each byte
        np.cumsum(is_quote, dtype=index, out=quotes[1:])
        ends = np.empty(total, np.int64)
        ends[: len(seps)] = seps
        if final:
            ends[-1] = n
        inside = quotes[ends] - quotes[starts]
        padded = np.zeros(n + 1, np.uint8)
        padded[:n] = arr
        wrapped = (
            (inside == 2)
            & (ends - starts >= 2)
            & (padded[starts] == 34)
            & (padded[np.maximum(ends - 1, 0)] == 34)
        )
        if not ((inside == 0) | wrapped).all():
            return None
    if not lists:
        return _flags(np.ones(total // fields, np.bool_))
    if quoted:  # the cuts and the quotes go: a field starts where its first byte lands
        gone = cut | is_quote
        before = np.zeros(n + 1, index)
        np.cumsum(gone, dtype=index, out=before[1:])
        values = np.empty(total + 1, np.int64)
        values[:-1] = starts - before[starts]
        values[-1] = n - before[n]
        data = np.frombuffer(buf.translate(None, b'\n"' + delimiter), np.uint8)
    else:
        values = np.empty(total + 1, np.int64)
        values[0] = 0
        values[1 : len(seps) + 1] = seps - np.arange(len(seps))
        if final:
            values[-1] = n - len(seps)
        data = np.frombuffer(buf.translate(None, b"\n" + delimiter), np.uint8)
    return _list_array(np.arange(0, total + 1, fields, dtype=np.int64), values, data, None)


def _flags(ok: _Bools) -> Any:
    """An Arrow boolean array (whether each line is a record)."""
    import pyarrow as pa

    return pa.Array.from_buffers(
        pa.bool_(), len(ok), [None, pa.py_buffer(np.packbits(ok, bitorder="little"))]
    )


def _plain(buf: bytes, utf8: bool, delimiter: bytes, fields: int) -> bool:
    """Whether the fast path may cut ``buf`` (see :func:`_plain_records`)."""
    if fields < 2 or len(delimiter) != 1 or delimiter[0] <= 0x20:
        return False
    if b"\r" in buf or (utf8 and _BOM in buf):
        return False
    if utf8 and not buf.isascii():
        try:
            codecs.utf_8_decode(buf, "strict", True)
        except UnicodeDecodeError:
            return False
    return True


def _records(split: Split) -> Any:
    """Lines from :func:`split_fields` as Arrow lists of their fields (null: no record)."""
    data, offsets, ok, seps, count = split
    k = len(offsets) - 1
    before = np.zeros(k + 1, np.int64)  # separators before each line
    np.cumsum(count, out=before[1:])
    lists = np.arange(k + 1, dtype=np.int64) + before  # line i's first field
    values = np.empty(k + len(seps) + 1, np.int64)
    values[lists[:-1]] = offsets[:-1] - before[:-1]
    j = np.arange(len(seps), dtype=np.int64)
    values[j + np.repeat(np.arange(k, dtype=np.int64), count) + 1] = seps - j
    values[-1] = len(data) - len(seps)
    flat = np.frombuffer(data.tobytes().replace(b"\n", b""), np.uint8)
    return _list_array(lists, values, flat, ok)


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
    utf8 = encoding == "utf-8"
    stream, raw = _open(path)
    try:
        with raw:
            for buf in _blocks(stream, 1 << 16, max_line):
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
        header line was left out of it."""
        if not self.utf8 and not buf.isascii():
            buf = buf.decode("latin-1").encode("utf-8")
        if not header:
            plain = buf
            if b"\r" in buf and buf.count(b"\r") == buf.count(b"\r\n"):
                plain = buf.replace(b"\r\n", b"\n")  # every CR ends a line: CRLF as LF
            if _plain(plain, self.utf8, self.delimiter, fields):
                records = _plain_records(plain, self.delimiter, fields, self.lists)
                if records is not None:
                    return records, False
        lines = _Lines(buf, self.utf8)
        dropped = header and lines.drop_first()
        split = split_fields(*lines.compact(), self.delimiter, fields)
        return (_records(split) if self.lists else _flags(split.ok)), dropped

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
