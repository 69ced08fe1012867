"""Tricky CSV files for the record-per-line rule (docs/data.md, "CSV input"), shared by the DuckDB,
Spark and reference-engine parity tests, and the awkward lines of the neighbour tests.

``FILES``: name → (bytes, CsvOptions). ``AWKWARD``: name → one line's bytes (without its LF), to
be placed in the middle of a table with columns g, v, u.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from snapdp.data.model.schema import CsvOptions

_C = CsvOptions()
_NO_HEADER = CsvOptions(header=False, column_names=("column0", "column1"))
_NO_HEADER_SHORT = CsvOptions(header=False, column_names=("column0", "column1"), max_line_bytes=8)
_LONG_QUOTED = b'1,"' + b'""' * 200_000 + b'x",p'  # 400 kB of doubled quotes in one field
_LONG_PLAIN = b"1," + b"7" * 1_000_000 + b",p"

FILES: dict[str, tuple[bytes, CsvOptions]] = {
    "quoted delimiters": (b'a,b\n"x,y",1\n"p,q,r","s"\n",",","\n', _C),
    "doubled quotes": (b'a,b\n"he said ""hi""",2\n"""",3\n"""""",4\n"a""",5\n', _C),
    "crlf": (b"a,b\r\n1,2\r\n3,4\r\n", _C),
    "mixed endings": (b"a,b\n1,2\r\n3,4\n5,6\r\n7,8", _C),
    "lone cr is data": (b"a,b\n1\r2,3\n4,5\r\r\n\r6,7\n8,9\r\r\r\n", _C),
    "cr inside quotes": (b'a,b\n"x\ry",1\r\n"z\r",2\n"\r",3\r\n', _C),
    "bom": (b"\xef\xbb\xbfa,b\r\n1,2\n", _C),
    "bom on later lines": (b"a,b\n\xef\xbb\xbf1,2\n\xef\xbb\xbf\n3,\xef\xbb\xbf4\n", _C),
    "no final newline": (b"a,b\n1,2\n3,4", _C),
    "no final newline, cr": (b"a,b\n1,2\n3,4\r", _C),
    "empty fields": (b'a,b,c\n,,\n"",,""\n1,,3\n,"",\n', _C),
    "blank lines": (b"\n\r\n \na,b\n\n1,2\n   \n\t\n\r\n3,4\n\n\n", _C),
    "header only": (b"a,b\n", _C),
    "header only, no newline": (b"a,b", _C),
    "header only, blank lines": (b"a,b\n\n\r\n  \n", _C),
    "one column": (b'v\n1\n\n2\n""\n \n"3"\n,\n\t\n', _C),
    "tab separated": (b"a\tb\n1\t2\n\t\n\t3\n4\t\n\t\t\n", CsvOptions(delimiter="\t")),
    "semicolons": (b'a;b\n"1;2";3\n1,5;2,5\n"x"";";y\n', CsvOptions(delimiter=";")),
    "pipe": (b'a|b\n1|2\n"|"|"||"\n||\n', CsvOptions(delimiter="|")),
    "unbalanced quote": (b'a,b\n1,2\n7,"oops\n3,4\n"\n5,6\n"x,y\n8,9\n', _C),
    "text after closing quote": (b'a,b\n"1"x,2\n"3" ,4\n5,"6"\n"7"",8\n', _C),
    "quote in unquoted field": (b'a,b\n5\'11",1\nx"y,2\n3,4\n "q",5\n', _C),
    "nul bytes": (b"a,b\n1,\x002\n\x00,3\n\x00\n4,5\x00\n", _C),
    "invalid utf-8": (b"a,b\n1,\xff\n2,\xc3\xa9\n\xed\xa0\x80,3\n\xc0\x80,4\n\xe2\x82\n5,6\n", _C),
    "latin-1": (b'a,b\n\xe9,1\n\xff\xfe,2\n"\xe0,",3\n', CsvOptions(encoding="latin-1")),
    "non-ascii delimiter": ('a§b\n1§2\n"§"§3\né§ü\n'.encode(), CsvOptions(delimiter="§")),
    "unicode text": ('a,b\nnaïve,ü\n"e\u0301,x",日本\n𝔸,\u2028\n\u0085,z\n'.encode(), _C),
    "no header": (b"1,2\n3,4\n5\n6,7,8\n", _NO_HEADER),
    "no header, blank first": (b"\n \n1,2\n3,4\n", _NO_HEADER),
    "no header, odd first line": (b"1,2,3\n1,2\n3,4\n", _NO_HEADER),
    "no header, bad first line": (b'1,"2\n\xff,1\n\x00,1\n3,4\n', _NO_HEADER),
    "no header, long first line": (b"1," + b"2" * 20 + b"\n3,4\n", _NO_HEADER_SHORT),
    "over-long lines": (
        b"a,b\n1,2\n" + b"3," + b"4" * 30 + b"\n5,6\n" + b"7," + b"8" * 14 + b"\n9,9",
        CsvOptions(max_line_bytes=16),
    ),
    "header line repeated": (b"a,b\n1,2\na,b\n", _C),
    "wrong field counts": (b"a,b,c\n1,2\n1,2,3\n1,2,3,4\n1,2,3,\n", _C),
    "long lines": (b"g,v,u\n" + _LONG_QUOTED + b"\n" + _LONG_PLAIN + b"\n2,3,q\n", _C),
}

AWKWARD: dict[str, bytes] = {
    "unbalanced quote": b'7,"oops',
    "unbalanced quote, then data": b'1,"2,p3',
    "lone cr inside": b"1,2\r5,p9",
    "cr at end": b"1,2.5,p1\r\r",
    "cr first": b"\r1,2,p1",
    "text after closing quote": b'"1"x,2,p1',
    "quote in unquoted field": b'1,2",p1',
    "invalid utf-8": b"1,\xff\xfe2,p1",
    "invalid utf-8 unit": b"1,2,p\xc3",
    "nul byte": b"1,2,p\x001",
    "nul only": b"\x00",
    "only a quote": b'"',
    "two quotes": b'""',
    "very long line": b"1," + b"9" * 2_000_000 + b",p1",
    "very long quoted line": b'1,"' + b'""' * 300_000 + b'",p1',
    "bom": b"\xef\xbb\xbf1,2,p1",
    "quoted delimiter": b'1,"2,5",p1',
    "quoted record": b'"1","2","p1"',
    "header again": b"g,v,u",
    "too many fields": b"1,2,p1,4",
    "blank": b" \t ",
}


def random_lines(rng: random.Random, count: int, fields: int = 3) -> list[bytes]:
    """Random lines over an alphabet rich in what the rule treats specially: quotes, delimiters,
    CRs, spaces, BOMs, NULs, non-ASCII and bytes that are not UTF-8. Half of them are built as
    ``fields`` fields (each quoted or not, quotes doubled inside quotes), then perhaps spoilt."""
    atoms = [
        b'"', b'""', b",", b",", b"\r", b" ", b"\t", b"a", b"1", b"2.5", b"\xc3\xa9", b"\x00",
        b"\xef\xbb\xbf", b"\xff", b"\xe2\x82", b'","', b"x y",
    ]  # fmt: skip
    plain = [a for a in atoms if b'"' not in a and b"," not in a]
    out = []
    for _ in range(count):
        if rng.random() < 0.5:
            n = rng.choice([0, 1, 2, 3, 4, 5, 8])
            out.append(b"".join(rng.choice(atoms) for _ in range(n)))
            continue
        cells = []
        for _ in range(fields):
            if rng.random() < 0.5:
                cells.append(b"".join(rng.choice(plain) for _ in range(rng.randrange(3))))
            else:
                body = b"".join(rng.choice(atoms) for _ in range(rng.randrange(4)))
                cells.append(b'"' + body.replace(b'"', b'""') + b'"')
        line = b",".join(cells)
        if rng.random() < 0.2:  # spoil it
            at = rng.randrange(len(line) + 1)
            line = line[:at] + rng.choice(atoms) + line[at:]
        out.append(line)
    return out


def records(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Rows as a sorted list with the empty string as None (an empty field is null)."""
    return sorted(
        (tuple(None if v in ("", None) else v for v in row) for row in rows),
        key=lambda r: [("" if v is None else "\x01" + v) for v in r],
    )


def write(tmp: Path, name: str, data: bytes) -> Path:
    path = tmp / (name.replace(" ", "_").replace(",", "").replace("'", "") + ".csv")
    path.write_bytes(data)
    return path
