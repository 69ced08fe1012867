"""Two thin sqlglot dialects for the engine contract: ``SnapDuckDB`` and ``SnapSpark``.

The tree of :mod:`~snapdp.data.engines.relational.exprs` is written once; each engine renders it
through its dialect. Stock sqlglot nodes render as sqlglot's own DuckDB and Spark dialects write
them, with two table entries changed for Spark (``TRY_CAST`` stays ``TRY_CAST``: a plain ``CAST``
raises under ANSI mode; a 128-bit integer is ``DECIMAL(38, 0)``). ``SnapDuckDB`` is sqlglot's
plain generator with the entries in which sqlglot's DuckDB generator writes these trees
otherwise (``//``, ``XOR``, ``[…]`` lists, ``{…}`` structs, ``HUGEINT``, ``VARCHAR``): importing
sqlglot's DuckDB dialect parses a few dozen SQL templates, ~25 ms of every fresh process
(docs/performance.md, "Latency"), and these trees use none of them.
tests/unit/data/engines/test_duckdb_dialect.py renders every query the engine and the owner's
check write through both and checks the texts are equal. Custom nodes stand only for the real
differences between the engines:

* :class:`FullMatch`: a regular expression over the whole text (DuckDB ``regexp_full_match``,
  Spark ``RLIKE`` anchored with ``^`` and ``\\z``);
* :class:`RoundHalfEven`: a double rounded to the nearest integer, ties to even (DuckDB's cast of
  a double to an integer already rounds so; Spark's truncates, so ``RINT`` first, kept within
  ±2^61 so that the cast can never raise);
* :class:`CellText`: a text cell as the contract reads it (empty is null; for Spark, text that
  is not UTF-8, which Spark does not check in Parquet bytes, is null too);
* :class:`BytesText` (DuckDB only): text handed over as bytes, decoded (not UTF-8: null);
* :class:`~.topn.TopRows` (top-n per group), :class:`~.topn.Digest` and
  :class:`~.topn.DigestLane` (a text unit's hash lanes): see :mod:`.topn`.
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.generator import Generator

from snapdp.data.engines.relational import topn

__all__ = [
    "BytesText",
    "CellText",
    "FullMatch",
    "RoundHalfEven",
    "SnapDuckDB",
    "duckdb_sql",
    "spark_sql",
]

_SPARK_ROUND_LIMIT = float(1 << 61)  # within a long, and every quanta bound is below it


class FullMatch(exp.Expression):
    """Whether the text ``this`` matches the regular expression ``pattern`` as a whole."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "pattern": True}


class RoundHalfEven(exp.Expression):
    """The double ``this`` rounded to an integer of type ``to``, ties to even."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "to": True}


class CellText(exp.Expression):
    """The text cell ``this``: null when empty (Spark: or not valid UTF-8)."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True}


class BytesText(exp.Expression):
    """The bytes ``this`` decoded as UTF-8 text: null when empty or not UTF-8 (DuckDB only)."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True}


def _not_sql(gen: Any, e: exp.Not) -> str:
    """``x IS NOT NULL`` for NOT (x IS NULL), so both engines see their own is-not-null test."""
    inner = e.this
    if isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null):
        return f"{gen.sql(inner, 'this')} IS NOT NULL"
    return f"NOT {gen.sql(e, 'this')}"


def _pattern(e: Any) -> str:
    literal = e.args["pattern"]
    assert isinstance(literal, exp.Literal) and literal.is_string
    return str(literal.this)


def _duckdb_full_match(gen: Any, e: FullMatch) -> str:
    return f"regexp_full_match({gen.sql(e, 'this')}, {gen.sql(exp.Literal.string(_pattern(e)))})"


def _spark_full_match(gen: Any, e: FullMatch) -> str:
    anchored = exp.Literal.string("^(?:" + _pattern(e) + ")\\z")
    return f"({gen.sql(e, 'this')} RLIKE {gen.sql(anchored)})"


def _duckdb_round(gen: Any, e: RoundHalfEven) -> str:
    return str(gen.sql(exp.Cast(this=e.this, to=e.args["to"])))


def _spark_round(gen: Any, e: RoundHalfEven) -> str:
    limit = exp.Literal.number(repr(_SPARK_ROUND_LIMIT))
    r = exp.Least(
        ignore_nulls=True,
        this=exp.Greatest(
            ignore_nulls=True,
            this=exp.Anonymous(this="RINT", expressions=[e.this]),
            expressions=[exp.Neg(this=limit)],
        ),
        expressions=[limit.copy()],
    )
    return str(gen.sql(exp.Cast(this=r, to=e.args["to"])))


def _duckdb_cell_text(gen: Any, e: CellText) -> str:
    return f"NULLIF(CAST({gen.sql(e, 'this')} AS VARCHAR), '')"


def _duckdb_bytes_text(gen: Any, e: BytesText) -> str:
    return f"NULLIF(try(decode({gen.sql(e, 'this')})), '')"


def _spark_cell_text(gen: Any, e: CellText) -> str:
    x = gen.sql(e, "this")
    return f"(CASE WHEN {x} <> '' AND is_valid_utf8({x}) THEN {x} END)"


def _no_bytes(gen: Any, e: BytesText) -> str:
    raise AssertionError("text as bytes is DuckDB's only")


_TYPE: Any = exp.DataType.Type

#: How the custom nodes read in DuckDB (shared with the test's reference dialect).
DUCKDB_NODES: dict[Any, Any] = {
    FullMatch: _duckdb_full_match,
    RoundHalfEven: _duckdb_round,
    CellText: _duckdb_cell_text,
    BytesText: _duckdb_bytes_text,
    exp.Not: _not_sql,
    topn.TopRows: topn.lower_duckdb,
    topn.Digest: topn.duckdb_digest,
    topn.DigestLane: topn.duckdb_digest_lane,
}

#: The types as this dialect writes them, where the plain generator writes them otherwise.
DUCKDB_TYPES: dict[Any, str] = {_TYPE.INT128: "HUGEINT", _TYPE.VARCHAR: "VARCHAR"}

_PLAIN_GENERATOR: Any = Generator


def _duckdb_xor(gen: Any, e: exp.BitwiseXor) -> str:
    """DuckDB's ``xor(a, b)``: its ``^`` is a power, not the bitwise exclusive or."""
    return str(gen.func("XOR", e.this, e.expression))


def _duckdb_list(gen: Any, e: exp.Array) -> str:
    """A DuckDB list literal ``[a, b]``: DuckDB reads ``ARRAY(…)`` as a subquery's array."""
    return f"[{gen.expressions(e, flat=True)}]"


def _duckdb_struct(gen: Any, e: exp.Struct) -> str:
    """DuckDB's struct literal ``{'name': value, …}``: the plain generator's ``STRUCT(value AS
    name)`` is not DuckDB SQL. These trees build structs of named fields only."""
    fields = []
    for field in e.expressions:
        assert isinstance(field, exp.PropertyEQ) and isinstance(field.this, exp.Identifier)
        fields.append(f"{gen.sql(exp.Literal.string(field.name))}: {gen.sql(field, 'expression')}")
    return "{" + ", ".join(fields) + "}"


class SnapDuckDB(Dialect):
    """DuckDB, as sqlglot's DuckDB dialect writes these trees, with the contract's custom
    nodes."""

    class Generator(_PLAIN_GENERATOR):  # type: ignore[misc]
        TYPE_MAPPING: ClassVar[dict[Any, str]] = {**_PLAIN_GENERATOR.TYPE_MAPPING, **DUCKDB_TYPES}
        TRANSFORMS: ClassVar[dict[Any, Any]] = {
            **_PLAIN_GENERATOR.TRANSFORMS,
            exp.IntDiv: lambda gen, e: gen.binary(e, "//"),
            exp.BitwiseXor: _duckdb_xor,
            exp.Array: _duckdb_list,
            exp.Struct: _duckdb_struct,
            **DUCKDB_NODES,
        }


_DUCKDB = SnapDuckDB()


@functools.cache
def _spark() -> Any:
    """The Spark dialect, built on first use: sqlglot's Spark dialect costs a DuckDB release
    ~20 ms of CPU to import (docs/performance.md, "Latency")."""
    from sqlglot.dialects.spark import Spark

    spark_generator: Any = Spark.Generator

    class SnapSpark(Spark):
        """Spark with ``TRY_CAST`` kept, 128-bit integers as ``DECIMAL(38, 0)`` and the custom
        nodes."""

        class Generator(spark_generator):  # type: ignore[misc]
            TYPE_MAPPING: ClassVar[dict[Any, str]] = {
                **spark_generator.TYPE_MAPPING,
                _TYPE.INT128: "DECIMAL(38, 0)",
            }
            TRANSFORMS: ClassVar[dict[Any, Any]] = {
                **{k: v for k, v in spark_generator.TRANSFORMS.items() if k is not exp.TryCast},
                FullMatch: _spark_full_match,
                RoundHalfEven: _spark_round,
                CellText: _spark_cell_text,
                BytesText: _no_bytes,
                exp.Not: _not_sql,
                topn.TopRows: topn.lower_spark,
                topn.Digest: topn.spark_digest,
                topn.DigestLane: topn.spark_digest_lane,
            }

    return SnapSpark()


def duckdb_sql(e: exp.Expression) -> str:
    """``e`` as DuckDB SQL text."""
    return str(_DUCKDB.generate(e, copy=False))


def spark_sql(e: exp.Expression) -> str:
    """``e`` as Spark SQL text (for ``spark.sql`` or ``functions.expr``)."""
    return str(_spark().generate(e, copy=False))
