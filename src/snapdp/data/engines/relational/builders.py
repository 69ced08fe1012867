"""Small sqlglot builders the relational tree is made of: columns, typed nulls and literals,
casts, numbers, CASE and the null tests (docs/architecture.md, "Engines"). Every literal is
typed or exact, so the two dialects read the same value."""

from __future__ import annotations

import datetime as _dt
import math
from fractions import Fraction

from sqlglot import exp

from snapdp.data.engines.base import INT64_MAX, INT64_MIN
from snapdp.data.engines.relational.topn import node_type
from snapdp.data.model.schema import Column
from snapdp.errors import ParameterError

__all__ = [
    "and_",
    "case",
    "cast",
    "column",
    "double",
    "is_null",
    "nearest_double",
    "not_null",
    "null",
    "num",
    "sql_type",
    "sql_type_name",
    "try_cast",
    "typed_literal",
]

_SQL_TYPES = {
    "integer": "BIGINT",
    "decimal": "DOUBLE",
    "text": "VARCHAR",
    "boolean": "BOOLEAN",
    "date": "DATE",
}


def column(name: str) -> exp.Column:
    """A quoted column reference (any name is safe)."""
    return exp.column(name, quoted=True)


def sql_type(kind: str) -> exp.DataType:
    """The SQL type of a declared column type."""
    if kind not in _SQL_TYPES:
        raise ParameterError(f"unknown column type {kind!r}", parameter="type")
    return node_type(_SQL_TYPES[kind])


def sql_type_name(kind: str) -> str:
    """The name of :func:`sql_type` as the engines' schemas give it (``VARCHAR`` for text)."""
    sql_type(kind)  # an unknown type is refused as there
    return _SQL_TYPES[kind]


def cast(e: exp.Expression, to: str) -> exp.Cast:
    return exp.Cast(this=e, to=node_type(to))


def try_cast(e: exp.Expression, to: str) -> exp.TryCast:
    return exp.TryCast(this=e, to=node_type(to))


def num(x: int | float | str) -> exp.Expression:
    text = repr(x) if isinstance(x, float) else str(x)
    if text.startswith("-"):
        return exp.Neg(this=exp.Literal.number(text[1:]))
    return exp.Literal.number(text)


def case(
    *whens: tuple[exp.Expression, exp.Expression], default: exp.Expression | None = None
) -> exp.Case:
    case = exp.Case()
    for condition, value in whens:
        case = case.when(condition, value, copy=False)
    if default is not None:
        case = case.else_(default, copy=False)
    return case


def and_(*terms: exp.Expression) -> exp.Expression:
    out = terms[0]
    for t in terms[1:]:
        out = exp.And(this=out, expression=t)
    return out


def is_null(e: exp.Expression) -> exp.Is:
    return exp.Is(this=e, expression=exp.Null())


def not_null(e: exp.Expression) -> exp.Not:
    return exp.Not(this=is_null(e))


def null(kind: str) -> exp.Cast:
    """A typed null of a declared column type."""
    return exp.Cast(this=exp.Null(), to=sql_type(kind))


def double(x: float) -> exp.Expression:
    """The double ``x`` (infinities included) as a typed literal."""
    if math.isinf(x):
        return cast(exp.Literal.string("Infinity" if x > 0 else "-Infinity"), "DOUBLE")
    return cast(exp.Literal.string(repr(x)), "DOUBLE")  # both engines parse text exactly


def nearest_double(x: Fraction | int) -> float:
    """The double nearest ``x`` (correctly rounded; ±inf past the largest double)."""
    try:
        return float(x)
    except OverflowError:
        return math.inf if x > 0 else -math.inf


# -- typed literals ------------------------------------------------------------------------
def typed_literal(col: Column, value: object) -> exp.Expression:
    """A typed key, imputed value or filter literal of ``col`` (exact for integers; decimals as
    the double nearest the value)."""
    kind = col.type
    if kind == "integer":
        assert isinstance(value, int)
        wide = "BIGINT" if INT64_MIN <= value <= INT64_MAX else "HUGEINT"
        return cast(exp.Literal.string(str(value)), wide)
    if kind == "decimal":
        assert isinstance(value, (int, Fraction))
        return double(nearest_double(value))
    if kind == "text":
        assert isinstance(value, str)
        return exp.Literal.string(value)
    if kind == "boolean":
        return exp.Boolean(this=bool(value))
    if kind == "date":
        assert isinstance(value, _dt.date)
        return cast(exp.Literal.string(value.isoformat()), "DATE")
    raise ParameterError(f"unknown column type {kind!r}", parameter="type")
