"""results.parquet in plain Python, without pyarrow (docs/plans.md, "Outputs").

A release's long table holds few rows of a few value types: this writes it as one row group of
one uncompressed data page per column (Parquet's PLAIN encoding, definition levels bit-packed),
its metadata in Thrift's compact protocol, so that ``snapdp run`` of a CSV source needs no
``pyarrow.parquet`` (docs/performance.md, "Latency"). Readers see the table the pyarrow writer
gave them: the same columns, types (null, bool, int64, double, string; every column nullable),
values, nulls and row order (the Arrow schema is kept in the file's ``ARROW:schema`` metadata,
as pyarrow keeps it: :mod:`snapdp.data.output.arrow_schema`); the bytes differ (no compression,
no statistics).

:func:`parquet_column` says whether a column fits (the types above, as
:func:`snapdp.data.output.writers.arrow_column` infers them); the caller writes any other table
with pyarrow.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from snapdp.data.output.arrow_schema import arrow_schema

__all__ = ["parquet_bytes", "parquet_column"]

# Parquet's physical types, repetition, encodings and page type (parquet.thrift)
_BOOLEAN, _INT32, _INT64, _DOUBLE, _BYTE_ARRAY = 0, 1, 2, 5, 6
_OPTIONAL = 1
_PLAIN, _RLE = 0, 3
_DATA_PAGE = 0
_UTF8 = 0  # ConvertedType
_STRING_LOGICAL, _NULL_LOGICAL = 1, 11  # LogicalType union members
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_FLOAT_INT = 1 << 53  # an int mixed with floats converts exactly below this
_PAGE_LIMIT = (1 << 31) - 1

# Thrift compact protocol type codes
_T_I32, _T_I64, _T_BINARY, _T_LIST, _T_STRUCT = 5, 6, 8, 9, 12

Column = tuple[str, list[object]]  # (kind, values): kind one of null, bool, int, float, str


def parquet_column(values: Sequence[object]) -> Column | None:
    """The column's Parquet kind and values, as pyarrow would infer its type from ``values``;
    None when the column is not one this module writes."""
    kinds = {type(v) for v in values if v is not None}
    if not kinds:
        return ("null", list(values))
    if kinds == {bool}:
        return ("bool", list(values))
    if kinds == {int}:
        if all(_INT64_MIN <= v <= _INT64_MAX for v in values if isinstance(v, int)):
            return ("int", list(values))
        return None
    if kinds <= {int, float}:
        if all(-_FLOAT_INT <= v <= _FLOAT_INT for v in values if type(v) is int):
            return ("float", [None if v is None else float(v) for v in values])  # type: ignore[arg-type]
        return None
    if kinds == {str}:
        return ("str", list(values))
    return None


def parquet_bytes(names: Sequence[str], columns: Sequence[Column]) -> bytes | None:
    """The Parquet file of ``columns`` (each from :func:`parquet_column`) named ``names``, or
    None when a column's page would pass Parquet's 2 GiB page size."""
    rows = len(columns[0][1]) if columns else 0
    out = bytearray(b"PAR1")
    chunks = []
    for name, (kind, values) in zip(names, columns, strict=True):
        page = _page(kind, values)
        if page is None:
            return None
        offset = len(out)
        out += page
        chunks.append(_chunk(name, kind, rows, offset, len(page)))
    meta = _file_metadata(names, [kind for kind, _ in columns], rows, chunks, len(out) - 4)
    out += meta + struct.pack("<I", len(meta)) + b"PAR1"
    return bytes(out)


# -- pages ---------------------------------------------------------------------------------------
def _page(kind: str, values: list[object]) -> bytes | None:
    """One data page (v1): its header, the definition levels, the PLAIN values."""
    present = [v for v in values if v is not None]
    levels = _levels([v is not None for v in values])
    body = struct.pack("<I", len(levels)) + levels + _plain(kind, present)
    if len(body) > _PAGE_LIMIT:
        return None
    data_header = _struct([(1, _T_I32, len(values)), (2, _T_I32, _PLAIN), (3, _T_I32, _RLE),
                           (4, _T_I32, _RLE)])  # fmt: skip
    header = _struct([(1, _T_I32, _DATA_PAGE), (2, _T_I32, len(body)), (3, _T_I32, len(body)),
                      (5, _T_STRUCT, data_header)])  # fmt: skip
    return header + body


def _levels(defined: list[bool]) -> bytes:
    """Definition levels (bit width 1) as one bit-packed run of the hybrid RLE encoding."""
    groups = (len(defined) + 7) // 8
    return _varint((groups << 1) | 1) + _bits(defined, groups)


def _bits(flags: list[bool], size: int) -> bytes:
    """``flags`` packed least significant bit first into ``size`` bytes."""
    packed = bytearray(size)
    for i, flag in enumerate(flags):
        if flag:
            packed[i >> 3] |= 1 << (i & 7)
    return bytes(packed)


def _plain(kind: str, values: list[object]) -> bytes:
    if kind == "null":
        return b""
    if kind == "bool":
        return _bits([v is True for v in values], (len(values) + 7) // 8)
    if kind == "int":
        return struct.pack(f"<{len(values)}q", *values)
    if kind == "float":
        return struct.pack(f"<{len(values)}d", *values)
    parts = []
    for v in values:
        encoded = str(v).encode("utf-8")
        parts.append(struct.pack("<I", len(encoded)) + encoded)
    return b"".join(parts)


# -- metadata ------------------------------------------------------------------------------------
_PHYSICAL = {"null": _INT32, "bool": _BOOLEAN, "int": _INT64, "float": _DOUBLE, "str": _BYTE_ARRAY}


def _chunk(name: str, kind: str, rows: int, offset: int, size: int) -> bytes:
    """A ColumnChunk: its ColumnMetaData (one page at ``offset``, ``size`` bytes)."""
    meta = _struct([
        (1, _T_I32, _PHYSICAL[kind]),
        (2, _T_LIST, (_T_I32, [_PLAIN, _RLE])),
        (3, _T_LIST, (_T_BINARY, [name.encode("utf-8")])),
        (4, _T_I32, 0),  # UNCOMPRESSED
        (5, _T_I64, rows),
        (6, _T_I64, size),
        (7, _T_I64, size),
        (9, _T_I64, offset),
    ])  # fmt: skip
    return _struct([(2, _T_I64, offset), (3, _T_STRUCT, meta)])


def _file_metadata(
    names: Sequence[str], kinds: Sequence[str], rows: int, chunks: list[bytes], size: int
) -> bytes:
    schema = [_struct([(4, _T_BINARY, b"schema"), (5, _T_I32, len(names))])]
    for name, kind in zip(names, kinds, strict=True):
        fields: list[tuple[int, int, object]] = [
            (1, _T_I32, _PHYSICAL[kind]),
            (3, _T_I32, _OPTIONAL),
            (4, _T_BINARY, name.encode("utf-8")),
        ]
        if kind == "str":
            fields.append((6, _T_I32, _UTF8))
            fields.append((10, _T_STRUCT, _struct([(_STRING_LOGICAL, _T_STRUCT, _struct([]))])))
        elif kind == "null":
            fields.append((10, _T_STRUCT, _struct([(_NULL_LOGICAL, _T_STRUCT, _struct([]))])))
        schema.append(_struct(fields))
    group = _struct([(1, _T_LIST, (_T_STRUCT, chunks)), (2, _T_I64, size), (3, _T_I64, rows)])
    return _struct([
        (1, _T_I32, 2),
        (2, _T_LIST, (_T_STRUCT, schema)),
        (3, _T_I64, rows),
        (4, _T_LIST, (_T_STRUCT, [group])),
        (5, _T_LIST, (_T_STRUCT, [_struct([(1, _T_BINARY, b"ARROW:schema"),
                                           (2, _T_BINARY, arrow_schema(names, kinds))])])),
        (6, _T_BINARY, b"snapdp"),
    ])  # fmt: skip


# -- Thrift compact protocol ---------------------------------------------------------------------
def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _zigzag(n: int) -> bytes:
    return _varint((n << 1) ^ (n >> 63))


def _value(kind: int, value: object) -> bytes:
    if kind in (_T_I32, _T_I64):
        assert isinstance(value, int)
        return _zigzag(value)
    if kind == _T_BINARY:
        assert isinstance(value, bytes)
        return _varint(len(value)) + value
    if kind == _T_STRUCT:
        assert isinstance(value, bytes)
        return value  # already encoded, with its stop byte
    assert kind == _T_LIST and isinstance(value, tuple)
    element, items = value
    size = len(items)
    head = bytes([(size << 4) | element]) if size < 15 else bytes([0xF0 | element]) + _varint(size)
    return head + b"".join(_value(element, item) for item in items)


def _struct(fields: Sequence[tuple[int, int, object]]) -> bytes:
    """A struct of (field id, type, value) in increasing field id, then the stop byte."""
    out = bytearray()
    last = 0
    for fid, kind, value in fields:
        delta = fid - last
        if 0 < delta <= 15:
            out.append((delta << 4) | kind)
        else:
            out.append(kind)
            out += _zigzag(fid)
        out += _value(kind, value)
        last = fid
    out.append(0)
    return bytes(out)
