"""The names and type families the DuckDB engine's sources share (:mod:`.sources`,
:mod:`.parquet_groups`): internal names, the type of text handed over as bytes, and each DuckDB
type's family for the casts (:func:`~snapdp.data.engines.relational.exprs.cast_native`)."""

from __future__ import annotations

__all__ = [
    "GLOB_CHARS",
    "HIVE_AS_TEXT",
    "PREFIX",
    "TEXT_BLOB",
    "cast_family",
    "quote_identifier",
    "source_family",
]

GLOB_CHARS = frozenset("*?[]{}\\")
_INT_TYPES = (
    "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT",
    "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT",
)  # fmt: skip
_FLOAT_TYPES = ("FLOAT", "DOUBLE", "REAL")
PREFIX = "_snapdp_"  # the prefix of every internal name
TEXT_BLOB = "TEXT AS BLOB"  # a text column handed to DuckDB as bytes (decoded by the cast)
#: Hive partition values (``year=2024/``) are read as text and cast by the declaration, as every
#: text cell: DuckDB otherwise types a partition column from the values of all the folders (BIGINT
#: or DATE when every value looks like one), so one unit's row in a new folder (``county=A1``)
#: changed how every other row's value was read (``01`` the integer 1, then the text ``01``).
HIVE_AS_TEXT = "hive_types_autocast = false"


def quote_identifier(name: str) -> str:
    """A SQL identifier for ``name``, quoted so that any column name is safe."""
    return '"' + name.replace('"', '""') + '"'


def source_family(sql_type: str) -> str:
    """The family of a DuckDB type for the casts (``text``, ``int``, ``float``, ``fixed``,
    ``bool``, ``date``; ``other`` for any other type)."""
    t = sql_type.upper()
    if t == "VARCHAR" or t.startswith("ENUM"):
        return "text"
    if t in _INT_TYPES:
        return "int"
    if t in _FLOAT_TYPES:
        return "float"
    if t.startswith("DECIMAL"):
        return "fixed"
    if t == "BOOLEAN":
        return "bool"
    if t == "DATE":
        return "date"
    return "other"


def cast_family(sql_type: str) -> str:
    """The family of a source column of DuckDB type ``sql_type`` for the casts: ``bytes`` for
    text handed over as bytes (:data:`TEXT_BLOB`), else :func:`source_family`."""
    return "bytes" if sql_type == TEXT_BLOB else source_family(sql_type)
