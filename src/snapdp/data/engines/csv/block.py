"""One block of CSV lines to Arrow records in one fixed sequence of vectorised steps
(docs/data.md, "CSV input" and "Run time").

A release's run time is something it shows, so this reader does the same steps for every block,
whatever its lines hold: the line ends, the trailing CR, blank lines, byte-order marks, UTF-8
validity, quotes and delimiters are found by whole-block numpy operations, each run for every
block (never skipped because no byte of the block calls for it, never repeated per odd line).
What varies is only the size of some intermediate arrays (one entry per line, delimiter or
quote). The rule is that of :mod:`snapdp.data.engines.csv.lines` (:class:`_Lines` with
:func:`split_fields`), which ``snapdp check`` and the header use and the tests compare this with.

Positions are those of the block itself: line i is ``buf[s[i]:e[i]]`` (after its BOM, before its
CR and LF); its bytes are kept when it is a record candidate (``live``: not blank, not the
header, valid text), less its field separators; every other byte becomes an LF and all LFs go
in one ``bytes.replace``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from snapdp.data.engines.csv.lines import _Bools, _Bytes, _Ints, utf8_errors

__all__ = ["Block", "cut_block"]


class Block(NamedTuple):
    """A block cut by :func:`cut_block`: per line emitted (not blank, not the header) whether
    it is a record (``ok``); the fields of all emitted lines (``lists``: line i holds fields
    ``lists[i]`` to ``lists[i + 1]`` − 1; field j is ``data[values[j]:values[j + 1]]``, quotes
    kept; a line that is no record holds what it splits into, an undecodable one one empty
    field); whether a header line was left out."""

    ok: _Bools
    lists: _Ints
    values: _Ints
    data: _Bytes
    dropped: bool


def _exclusive_cumsum(x: _Ints) -> _Ints:
    out = np.zeros(len(x) + 1, np.int64)
    np.cumsum(x, out=out[1:])
    return out


def _delimiter_at(pad: _Bytes, at: _Ints, delimiter: bytes) -> _Bools:
    """Whether a delimiter starts at each position ``at`` (``pad``: the bytes and four 0s)."""
    hit: _Bools = pad[at] == delimiter[0]
    for t in range(1, len(delimiter)):
        hit &= pad[at + t] == delimiter[t]
    return hit


def cut_block(
    buf: bytes, utf8: bool, delimiter: bytes, fields: int, header: bool, lists: bool = True
) -> Block:
    """Cut one block (UTF-8 bytes; ``utf8``: check that they decode) into records of ``fields``
    fields by the rule of :mod:`snapdp.data.engines.csv.lines`; with ``header``, the first
    non-blank line is left out. Without ``lists`` only ``ok`` is filled.

    The LFs, quotes and delimiter starts are found in one pass (``cuts``, in order); the line of
    each and the quotes before each are running counts over them."""
    pad = np.frombuffer(buf + bytes(4), np.uint8)  # the bytes, 0 beyond the end (and at −1)
    n, width = len(buf), len(delimiter)
    arr = pad[:n]
    table = bytearray(256)  # 1 for LF, quote and the delimiter's first byte
    table[10] = table[34] = table[delimiter[0]] = 1
    # every cut, and one more at the block's end: a last line without LF ends there, and
    # after a final LF it is an empty line (blank, so never emitted)
    cuts = np.append(np.flatnonzero(np.frombuffer(buf.translate(table), np.bool_)), n)
    kinds = pad[cuts]
    is_lf = (kinds == 10) | (cuts == n)
    is_q = kinds == 34
    is_d = _delimiter_at(pad, cuts, delimiter)
    line_of = np.cumsum(is_lf, dtype=np.int64) - is_lf  # the line of each cut
    q_through = np.cumsum(is_q, dtype=np.int64)  # quotes up to each cut
    re = cuts[is_lf]  # each line's end: its LF (or the block's end)
    k = len(re)
    rs = np.zeros(k, np.int64)
    rs[1:] = re[:-1] + 1
    q_start = np.zeros(k + 1, np.int64)  # quotes before each line (and the end)
    q_start[1:] = q_through[is_lf]
    # one trailing CR is removed (an empty line's end − 1 is the LF before it, or pad[−1])
    e = re - ((pad[re - 1] == 13) & (re > rs))
    # blank: no byte above 0x20 in the line (its CR and LF are below)
    keep = np.maximum.reduceat(pad, rs) > 32 if k else np.zeros(0, np.bool_)
    bom = np.zeros(k, np.bool_)
    valid = np.ones(k, np.bool_)
    if utf8:  # the declared encoding picks this, not the data
        bom = (
            keep & (e - rs >= 3) & (pad[rs] == 0xEF) & (pad[rs + 1] == 0xBB) & (pad[rs + 2] == 0xBF)
        )
        valid[np.searchsorted(rs, utf8_errors(arr, pad), "right") - 1] = False
    s = rs + 3 * bom
    dropped = False
    if header:  # the first block of a file only
        first = np.flatnonzero(keep)[:1]
        keep[first] = False
        dropped = len(first) == 1
    live = keep & valid
    # separators: delimiters inside a live line's [s, e) with an even number of quotes before
    dpos = cuts[is_d]
    line_d = line_of[is_d]
    sep_mask = (
        live[line_d]
        & (dpos >= s[line_d])
        & (dpos + width <= e[line_d])
        & (((q_through[is_d] - q_start[line_d]) & 1) == 0)
    )
    sep = dpos[sep_mask]
    sep_line = line_d[sep_mask]
    per_line = np.bincount(sep_line, minlength=k).astype(np.int64)
    # quotes: an opening one follows the line's start, a delimiter or a quote; a closing one
    # precedes the line's end, a delimiter or a quote; a line holds an even number
    qpos = cuts[is_q]
    line_q = line_of[is_q]
    opening = ((q_through[is_q] - 1 - q_start[line_q]) & 1) == 0
    left = np.where(opening, qpos == s[line_q], qpos + 1 == e[line_q])
    near = np.where(opening, qpos - 1, qpos + 1)
    beside = np.where(  # a delimiter ends just before an opening one, starts after a closing one
        opening,
        _delimiter_at(pad, near - (width - 1), delimiter),
        _delimiter_at(pad, near, delimiter),
    )
    fine = left | (pad[near] == 34) | beside
    bad = (np.diff(q_start) & 1) == 1
    bad[line_q[~fine]] = True
    ok_all = live & ~bad & (per_line + 1 == fields)
    sel = np.flatnonzero(keep)
    ok = ok_all[sel]
    if not lists:
        return Block(ok, np.zeros(1, np.int64), np.zeros(1, np.int64), pad[:0], dropped)
    cr = live & (e < re)  # lines whose CR goes
    return _fields(arr, rs, s, e, live, bom, cr, sel, sep, sep_line, per_line, width, ok, dropped)


def _fields(
    arr: _Bytes,
    rs: _Ints,
    s: _Ints,
    e: _Ints,
    live: _Bools,
    bom: _Bools,
    cr: _Bools,
    sel: _Ints,
    sep: _Ints,
    sep_line: _Ints,
    per_line: _Ints,
    width: int,
    ok: _Bools,
    dropped: bool,
) -> Block:
    """The fields of the emitted lines ``sel`` (see :class:`Block`)."""
    n = len(arr)
    flat_len = np.where(live, e - s, 0) - width * per_line
    flat_start = _exclusive_cumsum(flat_len)  # each line's first byte once the rest is gone
    seps_before = _exclusive_cumsum(per_line)
    # the field after separator g (the j-th of line i) starts at F_i + (sep − s_i) − width·j
    shift = flat_start[:-1] - s + width * seps_before[:-1]
    after = sep + shift[sep_line] - width * np.arange(len(sep), dtype=np.int64)
    counts = per_line[sel]
    list_starts = np.arange(len(sel) + 1, dtype=np.int64) + _exclusive_cumsum(counts)
    # both rise, and a line's first field starts where the fields before it end: the merge of
    # the two is the fields' starts in order (equal values are equal fields' starts)
    values = np.concatenate([flat_start[sel], after, flat_start[-1:]])
    values.sort(kind="stable")
    # the bytes: those of live lines stay; their CR, BOM and separators become LF; all LF go
    lengths = np.diff(np.append(rs, n))
    out = bytearray(arr)
    kept = np.frombuffer(out, np.uint8)
    np.copyto(kept, np.uint8(10), where=~np.repeat(live, lengths))
    kept[e[cr]] = 10
    start = s[live & bom]
    for t in (1, 2, 3):
        kept[start - t] = 10
    for t in range(width):
        kept[sep + t] = 10
    data = np.frombuffer(out.translate(None, b"\n"), np.uint8)
    return Block(ok, list_starts, values, data, dropped)


def block_records(block: Block) -> Any:
    """The Arrow large_list<large_string> of a :class:`Block` (null: no record)."""
    import pyarrow as pa

    strings = pa.Array.from_buffers(
        pa.large_string(),
        len(block.values) - 1,
        [None, pa.py_buffer(block.values), pa.py_buffer(block.data)],
    )
    bitmap = pa.py_buffer(np.packbits(block.ok, bitorder="little"))
    return pa.Array.from_buffers(
        pa.large_list(pa.large_string()),
        len(block.lists) - 1,
        [bitmap, pa.py_buffer(block.lists)],
        null_count=-1,
        children=[strings],
    )
