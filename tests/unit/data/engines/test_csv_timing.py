"""The CSV reader does the same work for every block, whatever its rows hold (docs/data.md, "Run
time"): the Python lines it runs and the functions it calls are traced, not timed, and a block of
plain rows and the same block with odd rows (a CR line end, a byte-order mark, a blank line, a
line that starts with a blank, non-ASCII text, undecodable bytes, a quoted field, a wrong number
of fields) go through the same sequence. ``benchmarks/timing_csv.py`` measures the time."""

from __future__ import annotations

import sys
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from snapdp.data.engines.csv.records import CsvLines

_CSV = str(Path(CsvLines.__module__.replace(".", "/")).parent)  # snapdp/data/engines/csv


def _trace(stream: CsvLines, buf: bytes, header: bool) -> list[tuple[str, ...]]:
    """The Python lines run (in the CSV reader's modules) and the functions called while
    ``stream`` parses ``buf``, in order."""
    seen: list[tuple[str, ...]] = []

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            seen.append(("line", frame.f_code.co_filename, str(frame.f_lineno)))
        return local

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        return local if _CSV in frame.f_code.co_filename.replace("\\", "/") else None

    def profiler(frame: FrameType, event: str, arg: Any) -> None:
        if event == "c_call" and _CSV in frame.f_code.co_filename.replace("\\", "/"):
            seen.append(("call", getattr(arg, "__qualname__", repr(arg))))

    sys.settrace(tracer)
    sys.setprofile(profiler)
    try:
        stream._parse(buf, header, 3)
    finally:
        sys.settrace(None)
        sys.setprofile(None)
    return seen


def _rows(n: int) -> list[bytes]:
    return [
        f"{i % 50},{(i * 37) % 1000}.{i % 100:02d},{i * 7919 % 5000}".encode() for i in range(n)
    ]


_ODD = {
    "a CR line end": lambda rows: rows.__setitem__(3, rows[3] + b"\r"),
    "every line CRLF": lambda rows: rows.__setitem__(slice(None), [r + b"\r" for r in rows]),
    "a byte-order mark": lambda rows: rows.__setitem__(5, b"\xef\xbb\xbf" + rows[5]),
    "a blank line": lambda rows: rows.insert(7, b""),
    "a line of blanks": lambda rows: rows.insert(7, b" \t "),
    "a leading blank": lambda rows: rows.__setitem__(8, b" " + rows[8]),
    "non-ASCII text": lambda rows: rows.__setitem__(9, "é,ü,1".encode()),
    "undecodable bytes": lambda rows: rows.__setitem__(11, b"\xff\xfe,1,2"),
    "a quoted field": lambda rows: rows.__setitem__(12, b'"7","1,5",3'),
    "a quote inside a field": lambda rows: rows.__setitem__(13, b'a"b,1,2'),
    "too few fields": lambda rows: rows.__setitem__(14, b"1,2"),
    "an unclosed quote": lambda rows: rows.__setitem__(15, b'"1,2,3'),
}


@pytest.mark.parametrize("encoding", ["utf-8", "latin-1"])
@pytest.mark.parametrize("header", [False, True])
@pytest.mark.parametrize("lists", [True, False])
@pytest.mark.parametrize("odd", sorted(_ODD))
def test_odd_rows_take_the_same_steps_as_plain_ones(
    odd: str, lists: bool, header: bool, encoding: str
) -> None:
    """Before: a block of plain rows was cut in one pass and any odd row sent its block down a
    line-by-line path (with extra steps for a CR, a BOM, a leading blank or non-ASCII text),
    about 2–4 times slower. Now the traces are equal."""
    rows = _rows(40)
    odd_rows = list(rows)
    _ODD[odd](odd_rows)
    stream = CsvLines([], encoding, header, ",", 3, lists=lists)
    plain = _trace(stream, b"\n".join(rows) + b"\n", header)
    other = _trace(stream, b"\n".join(odd_rows) + b"\n", header)
    assert plain, "nothing traced"
    assert other == plain


def test_the_trace_sees_a_different_path() -> None:
    """The trace tells paths apart: a two-byte delimiter (a declaration) runs extra loop turns."""
    rows = _rows(10)
    narrow = CsvLines([], "utf-8", False, ",", 3)
    wide = CsvLines([], "utf-8", False, "§", 3)
    buf = b"\n".join(rows) + b"\n"
    assert _trace(narrow, buf, False) != _trace(wide, buf.replace(b",", "§".encode()), False)
