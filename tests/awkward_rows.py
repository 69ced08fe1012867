"""Awkward rows for differential tests (tests/differential.py; docs/data.md, "What is public,
what is protected"): the registry :data:`AWKWARD` of kinds of odd rows a table may gain.

Each kind is a function of a ``random.Random`` returning an :class:`Awkward` row: typed or odd
``cells`` per column (str, bytes, int, float, bool, date or None) for every source kind, and
optionally the raw ``csv_line`` when the oddity is in the line itself. Register a new kind, e.g.
one a bug report describes, with ``@awkward("name")``; the short differential test runs every
kind, the benchmark draws them in turn.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass

TOP = (1 << 63) - 1
COLUMNS = ("g", "k", "v", "w", "h", "d", "u")
G_KEYS = ("a", "b", "c")
K_KEYS = (0, 1, 2)
DATES = (dt.date(2024, 1, 1), dt.date(2024, 2, 29), dt.date(2024, 12, 31))


# -- awkward rows -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Awkward:
    """One awkward row: ``cells`` (column → str, bytes, int, float, bool, date or None; a column
    left out is null) for every source, and ``csv_line``, the raw CSV line, when the oddity is in
    the line itself (fields, quotes, line ends) rather than in a cell."""

    cells: Mapping[str, object]
    csv_line: bytes | None = None


AWKWARD: dict[str, Callable[[random.Random], Awkward]] = {}


def awkward(name: str) -> Callable[[Callable[[random.Random], Awkward]], Callable[..., Awkward]]:
    """Register an awkward-row kind under ``name`` (a function of a ``random.Random``)."""

    def register(fn: Callable[[random.Random], Awkward]) -> Callable[[random.Random], Awkward]:
        if name in AWKWARD:
            raise ValueError(f"awkward kind {name!r} is registered twice")
        AWKWARD[name] = fn
        return fn

    return register


def base_row(rng: random.Random, units: int = 40) -> dict[str, object]:
    """A plain row of D: typed Python values."""
    return {
        "g": rng.choice(G_KEYS),
        "k": rng.choice(K_KEYS),
        "v": round(rng.uniform(0, 100), 2),
        "w": rng.randrange(0, 1001),
        "h": rng.randrange(1 << 62, TOP),
        "d": rng.choice(DATES),
        "u": f"p{rng.randrange(units)}",
    }


def _with(rng: random.Random, **cells: object) -> Awkward:
    row = base_row(rng)
    row.update(cells)
    return Awkward(row)


def _line(rng: random.Random, change: Callable[[list[bytes]], bytes]) -> Awkward:
    row = base_row(rng)
    return Awkward(row, change([csv_field(row[c]) for c in COLUMNS]))


@awkward("plain")
def _plain(rng: random.Random) -> Awkward:
    return Awkward(base_row(rng))


@awkward("invalid utf-8 key")
def _bad_utf8_key(rng: random.Random) -> Awkward:
    return _with(rng, g=rng.choice([b"\xff\xfe", b"a\x80", b"\xc3", b"\xed\xa0\x80"]))


@awkward("invalid utf-8 unit")
def _bad_utf8_unit(rng: random.Random) -> Awkward:
    return _with(rng, u=b"p\xc3", v=b"5\xff")


@awkward("lone surrogate")
def _surrogate(rng: random.Random) -> Awkward:
    return _with(rng, g="a\ud800", u="\udfffp")


@awkward("NUL")
def _nul(rng: random.Random) -> Awkward:
    return _with(rng, g="a\x00", u="p\x00q", v="1\x00")


@awkward("near 2^63")
def _near_top(rng: random.Random) -> Awkward:
    return _with(rng, h=TOP - rng.randrange(0, 1024), w=TOP - 511, k=TOP)


@awkward("beyond int64")
def _beyond(rng: random.Random) -> Awkward:
    return _with(rng, h=1 << 64, w=-(1 << 63) - 1, k=(1 << 63) + 1)


@awkward("int64 minimum")
def _bottom(rng: random.Random) -> Awkward:
    return _with(rng, h=-(1 << 63), w=-(1 << 63))


@awkward("NaN and inf text")
def _nan_text(rng: random.Random) -> Awkward:
    return _with(rng, v=rng.choice(["NaN", "inf", "-Infinity", "nan"]), h="Infinity")


@awkward("NaN and inf floats")
def _nan_float(rng: random.Random) -> Awkward:
    return _with(rng, v=rng.choice([float("nan"), float("inf"), -float("inf")]), w=float("nan"))


@awkward("huge decimals")
def _huge(rng: random.Random) -> Awkward:
    return _with(rng, v=rng.choice(["1e308", "-1e308", "1e400", "4.9e-324"]), w="1e30")


@awkward("empty cells")
def _empty(rng: random.Random) -> Awkward:
    return Awkward(dict.fromkeys(COLUMNS, ""))


@awkward("whitespace cells")
def _blank(rng: random.Random) -> Awkward:
    return Awkward({c: rng.choice([" ", "  ", "\t"]) for c in COLUMNS})


@awkward("wrong types")
def _wrong(rng: random.Random) -> Awkward:
    return _with(rng, v="Alice", k="x", w="2.5", d="yesterday", h="true")


@awkward("python types")
def _python(rng: random.Random) -> Awkward:
    return _with(rng, g=1, k=True, v="3", w=4.0, d="2024-01-01", h=2.5, u=7)


@awkward("undeclared keys")
def _undeclared(rng: random.Random) -> Awkward:
    return _with(rng, g="zzz", k=7, d=dt.date(1999, 1, 1))


@awkward("null unit")
def _null_unit(rng: random.Random) -> Awkward:
    return _with(rng, u=None)


@awkward("new unit")
def _new_unit(rng: random.Random) -> Awkward:
    return _with(rng, u="fresh")


@awkward("bad dates")
def _dates(rng: random.Random) -> Awkward:
    return _with(rng, d=rng.choice(["2024-02-30", "0000-01-01", "2024-13-01", "24-01-01"]))


@awkward("long text")
def _long(rng: random.Random) -> Awkward:
    return _with(rng, g="x" * 10_000, u="p" * 5_000)


@awkward("exponent and sign keys")
def _exponent(rng: random.Random) -> Awkward:
    return _with(rng, k=rng.choice(["1e0", "+1", "1.0", " 2 "]), w="+5", v=" 5 ")


@awkward("negative zero")
def _neg_zero(rng: random.Random) -> Awkward:
    return _with(rng, v="-0", k="-0", w=-0.0)


@awkward("control characters")
def _control(rng: random.Random) -> Awkward:
    return _with(rng, g="\x01\x02", u="\t", v="\x0b5")


@awkward("quote inside")
def _quote(rng: random.Random) -> Awkward:
    return _with(rng, g='a"b', u='"p1"')


@awkward("delimiter inside")
def _delim(rng: random.Random) -> Awkward:
    return _with(rng, g="a,b", u="p1,p2")


@awkward("lone CR")
def _cr(rng: random.Random) -> Awkward:
    return _with(rng, g="a\rb", u="p\r")


@awkward("extra field")
def _extra(rng: random.Random) -> Awkward:
    return _line(rng, lambda f: b",".join([*f, b"extra"]))


@awkward("missing field")
def _missing(rng: random.Random) -> Awkward:
    return _line(rng, lambda f: b",".join(f[:-1]))


@awkward("unbalanced quote")
def _unbalanced(rng: random.Random) -> Awkward:
    return _line(rng, lambda f: b",".join([b'"' + f[0], *f[1:]]))


@awkward("CRLF")
def _crlf(rng: random.Random) -> Awkward:
    return _line(rng, lambda f: b",".join(f) + b"\r")


@awkward("byte-order mark")
def _bom(rng: random.Random) -> Awkward:
    return _line(rng, lambda f: b"\xef\xbb\xbf" + b",".join(f))


@awkward("blank line")
def _blank_line(rng: random.Random) -> Awkward:
    return Awkward(dict.fromkeys(COLUMNS), b" \t ")


def csv_field(cell: object) -> bytes:
    """One CSV field: text as UTF-8 (a surrogate's bytes kept, which are not UTF-8), bytes as
    they are, quoted when holding the delimiter or a quote."""
    if cell is None:
        return b""
    if isinstance(cell, bytes):
        return cell
    if isinstance(cell, bool):
        text = "true" if cell else "false"
    elif isinstance(cell, float):
        text = repr(cell)
    elif isinstance(cell, dt.date):
        text = cell.isoformat()
    else:
        text = str(cell)
    raw = text.encode("utf-8", "surrogatepass")
    if b"," in raw or b'"' in raw:
        return b'"' + raw.replace(b'"', b'""') + b'"'
    return raw


@awkward("over-long line")
def _over_long(rng: random.Random) -> Awkward:
    """A line past the default `max_line_bytes` (1 MiB): in a CSV it is no record (skipped
    without being held in memory); elsewhere a long text cell."""
    return _with(rng, u="p" * ((1 << 20) + rng.randrange(1, 4096)))
