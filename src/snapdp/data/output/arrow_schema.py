"""The Arrow schema a Parquet file carries for Arrow readers (its ``ARROW:schema`` metadata),
serialized without pyarrow: an IPC Schema message (Arrow's Message.fbs and Schema.fbs, format
version V5) in FlatBuffers, base64-encoded, as pyarrow's writer stores it. Readers that honour it
(pyarrow, polars) read a column of nulls as Arrow's null type, not as its Parquet storage.

Only the types :mod:`snapdp.data.output.parquet` writes: null, bool, int64, double, string (UTF-8),
every field nullable.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Sequence

__all__ = ["arrow_schema"]

# Schema.fbs's Type union and Message.fbs's MessageHeader union, MetadataVersion
_TYPE = {"null": 1, "int": 2, "float": 3, "str": 5, "bool": 6}
_SCHEMA_HEADER = 1
_V5 = 4
_DOUBLE = 2  # Precision

_SIZE = {"u8": 1, "bool": 1, "i16": 2, "i32": 4, "u32": 4, "i64": 8}
_FORMAT = {"u8": "<B", "bool": "<?", "i16": "<h", "i32": "<i", "i64": "<q"}

# A table: (slot, kind, value); kind a scalar kind above, "table" (value: a table),
# "string" (value: str) or "tables" (value: a list of tables).
Table = list[tuple[int, str, object]]


def arrow_schema(names: Sequence[str], kinds: Sequence[str]) -> bytes:
    """``ARROW:schema``'s value for fields ``names`` of ``kinds`` (null, bool, int, float, str)."""
    fields = [_field(name, kind) for name, kind in zip(names, kinds, strict=True)]
    schema: Table = [(0, "i16", 0), (1, "tables", fields)]  # little-endian
    message: Table = [(0, "i16", _V5), (1, "u8", _SCHEMA_HEADER), (2, "table", schema),
                      (3, "i64", 0)]  # fmt: skip
    body = _Builder().root(message)
    body += bytes(-len(body) % 8)
    framed = b"\xff\xff\xff\xff" + struct.pack("<i", len(body)) + body
    return base64.b64encode(framed)


def _field(name: str, kind: str) -> Table:
    detail: Table = []
    if kind == "int":
        detail = [(0, "i32", 64), (1, "bool", True)]
    elif kind == "float":
        detail = [(0, "i16", _DOUBLE)]
    return [(0, "string", name), (1, "bool", True), (2, "u8", _TYPE[kind]),
            (3, "table", detail), (5, "tables", [])]  # fmt: skip


class _Builder:
    """FlatBuffers laid out front to back: each table's vtable just before it, then the objects
    it refers to after it (an offset always points forward, as FlatBuffers requires)."""

    def __init__(self) -> None:
        self.buf = bytearray()

    def root(self, table: Table) -> bytes:
        self.buf += bytes(4)  # the root offset, patched below
        self._patch(0, self._table(table))
        return bytes(self.buf)

    def _align(self, n: int) -> None:
        self.buf += bytes(-len(self.buf) % n)

    def _patch(self, slot: int, target: int) -> None:
        self.buf[slot : slot + 4] = struct.pack("<I", target - slot)

    def _table(self, table: Table) -> int:
        # inline layout: the soffset, then the fields by decreasing size, each aligned
        sized = sorted(table, key=lambda f: -_SIZE.get(f[1], 4))
        where: dict[int, int] = {}
        end = 4
        for slot, kind, _ in sized:
            size = _SIZE.get(kind, 4)
            end += -end % size
            where[slot] = end
            end += size
        end += -end % 4
        slots = max((f[0] for f in table), default=-1) + 1
        vtable = struct.pack(f"<{2 + slots}H", 4 + 2 * slots, end,
                             *(where.get(i, 0) for i in range(slots)))  # fmt: skip
        # the table starts 8-aligned; its vtable ends right before it
        self._align(2)
        pad = -(len(self.buf) + len(vtable)) % 8
        self.buf += bytes(pad)
        vt_pos = len(self.buf)
        self.buf += vtable
        start = len(self.buf)
        self.buf += bytes(end)
        self.buf[start : start + 4] = struct.pack("<i", start - vt_pos)
        later: list[tuple[int, str, object]] = []
        for slot, kind, value in table:
            at = start + where[slot]
            if kind in _FORMAT:
                self.buf[at : at + _SIZE[kind]] = struct.pack(_FORMAT[kind], value)
            else:
                later.append((at, kind, value))
        for at, kind, value in later:
            self._patch(at, self._object(kind, value))
        return start

    def _object(self, kind: str, value: object) -> int:
        if kind == "table":
            assert isinstance(value, list)
            return self._table(value)
        self._align(4)
        pos = len(self.buf)
        if kind == "string":
            assert isinstance(value, str)
            encoded = value.encode("utf-8")
            self.buf += struct.pack("<I", len(encoded)) + encoded + b"\x00"
            return pos
        assert kind == "tables" and isinstance(value, list)
        self.buf += struct.pack("<I", len(value)) + bytes(4 * len(value))
        for i, item in enumerate(value):
            self._patch(pos + 4 + 4 * i, self._table(item))
        return pos
