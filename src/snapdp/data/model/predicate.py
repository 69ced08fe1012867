"""Row filters: a small typed predicate over declared columns (docs/sql.md, "WHERE").

A query may keep only the rows a predicate holds for (SQL's ``WHERE``). The predicate is a tree
of :class:`Compare` (``column op literal``), :class:`InList`, :class:`IsNull`, :class:`And`,
:class:`Or` and :class:`Not`; ``BETWEEN`` is the conjunction of two comparisons, and ``NOT IN``,
``IS NOT NULL``, ``NOT BETWEEN`` are :class:`Not` of the positive form. Every engine evaluates it
the same way, on each column's value after the engine contract's cast (step 2 of
:mod:`snapdp.data.engines.base`) and before any null rule:

* three-valued logic as in SQL: a comparison with a null is unknown, ``NOT`` of unknown is
  unknown, ``AND``/``OR`` follow Kleene's tables; a row is kept only when the predicate is true;
* integers are compared exactly with any numeric literal (``age > 30.5`` is ``age >= 31``,
  ``age = 30.5`` holds for no value: :func:`check_predicate` rewrites such a literal into an
  integer one before any engine sees it); decimal columns hold
  doubles, and a decimal literal is compared as the double nearest to it (``income > 0.1`` keeps
  a cell that reads ``0.1`` out, as in every SQL engine); text by Unicode code points (byte order
  of UTF-8); booleans with false < true; dates by the calendar.

A filter is applied to each row on its own, before contribution bounding: it can only remove a
unit's rows, so every contribution bound, and so every sensitivity, stays as it is.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from fractions import Fraction
from typing import Any, Literal, TypeAlias

from msgspec import Struct
from msgspec.structs import force_setattr

from snapdp._rational import shown_rational
from snapdp._validation import check_number_size
from snapdp.data.model.keys import typed_key
from snapdp.data.model.schema import Schema
from snapdp.errors import ParameterError, not_declared

__all__ = [
    "OPERATORS",
    "And",
    "Compare",
    "InList",
    "IsNull",
    "LiteralValue",
    "Not",
    "Or",
    "Predicate",
    "between",
    "check_predicate",
    "columns_of",
    "evaluate",
    "to_sql",
]

Operator: TypeAlias = Literal["=", "<>", "<", "<=", ">", ">="]
OPERATORS: tuple[str, ...] = ("=", "<>", "<", "<=", ">", ">=")
LiteralValue: TypeAlias = int | Fraction | str | bool | _dt.date
_I64 = 1 << 63


class Compare(Struct, frozen=True):
    """``column op value``."""

    column: str
    op: Operator
    value: LiteralValue

    def __post_init__(self) -> None:
        if self.op not in OPERATORS:
            raise ParameterError(
                f"a comparison's operator must be one of {', '.join(OPERATORS)}, not {self.op!r}",
                parameter="where",
            )


class InList(Struct, frozen=True):
    """``column IN (v1, v2, …)``."""

    column: str
    values: tuple[LiteralValue, ...]

    def __post_init__(self) -> None:
        force_setattr(self, "values", tuple(self.values))
        if not self.values:
            raise ParameterError("IN needs at least one value", parameter="where")


class IsNull(Struct, frozen=True):
    """``column IS NULL``."""

    column: str


class And(Struct, frozen=True):
    """All of ``terms``."""

    terms: tuple[Predicate, ...]

    def __post_init__(self) -> None:
        force_setattr(self, "terms", tuple(self.terms))
        if len(self.terms) < 2:
            raise ParameterError("AND needs at least two terms", parameter="where")


class Or(Struct, frozen=True):
    """Any of ``terms``."""

    terms: tuple[Predicate, ...]

    def __post_init__(self) -> None:
        force_setattr(self, "terms", tuple(self.terms))
        if len(self.terms) < 2:
            raise ParameterError("OR needs at least two terms", parameter="where")


class Not(Struct, frozen=True):
    """``NOT term``."""

    term: Predicate


Predicate: TypeAlias = Compare | InList | IsNull | And | Or | Not


def between(column: str, low: LiteralValue, high: LiteralValue) -> Predicate:
    """``column BETWEEN low AND high`` (both ends included)."""
    return And((Compare(column, ">=", low), Compare(column, "<=", high)))


def columns_of(predicate: Predicate) -> list[str]:
    """The columns ``predicate`` reads, once each, in order of appearance."""
    out: list[str] = []

    def walk(p: Predicate) -> None:
        if isinstance(p, (Compare, InList, IsNull)):
            if p.column not in out:
                out.append(p.column)
        elif isinstance(p, Not):
            walk(p.term)
        else:
            for t in p.terms:
                walk(t)

    walk(predicate)
    return out


# -- checking against the declaration ---------------------------------------------------------
def check_predicate(predicate: Predicate, schema: Schema) -> Predicate:
    """``predicate`` with every literal typed as its column is declared (an integer literal of a
    decimal column becomes an exact rational, a text literal of a date column a date); a
    ParameterError (parameter ``where``) for an undeclared column or a literal that is not a
    value of its column's type."""
    if isinstance(predicate, (Compare, InList, IsNull)):
        name = predicate.column
        declared = [c.name for c in schema.columns]
        if name not in declared:
            raise ParameterError(
                f"the filter: {not_declared(name, declared)}; declare it with a type "
                "(docs/sql.md, 'WHERE')",
                parameter="where",
            )
        kind = schema.column(name).type
        if kind == "integer" and isinstance(predicate, Compare):
            exact = _rational(predicate.value)
            if exact is not None and not _is_int64(exact):
                return _integer_compare(name, predicate.op, exact)
            if exact is not None:
                return Compare(name, predicate.op, int(exact))
        if kind == "integer" and isinstance(predicate, InList):
            exact_values = [_rational(v) for v in predicate.values]
            if all(x is not None for x in exact_values):
                kept = tuple(int(x) for x in exact_values if x is not None and _is_int64(x))
                if not kept:
                    return _never(name)
                return InList(name, kept)
        if isinstance(predicate, Compare):
            return Compare(name, predicate.op, _literal(kind, predicate.value, name))
        if isinstance(predicate, InList):
            return InList(name, tuple(_literal(kind, v, name) for v in predicate.values))
        return predicate
    if isinstance(predicate, Not):
        return Not(check_predicate(predicate.term, schema))
    if isinstance(predicate, (And, Or)):
        return type(predicate)(tuple(check_predicate(t, schema) for t in predicate.terms))
    raise ParameterError(f"not a filter: {predicate!r}", parameter="where")


def _rational(value: object) -> Fraction | None:
    """A numeric literal as an exact rational (None: not a number)."""
    if isinstance(value, bool) or not isinstance(value, (int, Fraction)):
        return None
    check_number_size("where", value)
    return Fraction(value)


def _is_int64(x: Fraction) -> bool:
    return x.denominator == 1 and -_I64 <= x.numerator < _I64


def _never(column: str) -> Predicate:
    """False for every value of ``column``, unknown for a null (as ``column = 0.5`` is)."""
    return And((Compare(column, "<", 0), Compare(column, ">", 0)))


def _always(column: str) -> Predicate:
    """True for every value of ``column``, unknown for a null (as ``column <> 0.5`` is)."""
    return Or((Compare(column, "<", 0), Compare(column, ">=", 0)))


def _integer_compare(column: str, op: str, x: Fraction) -> Predicate:
    """``column op x`` for an integer (int64) column and a literal that is not an int64 (a
    fraction such as 30.5, or beyond ±2^63): the same rows, with integer literals only."""
    import math

    if op == "=":
        return _never(column)
    if op == "<>":
        return _always(column)
    # v < x ⟺ v ≤ ⌈x⌉ − 1; v ≤ x ⟺ v ≤ ⌊x⌋; v > x ⟺ v ≥ ⌊x⌋ + 1; v ≥ x ⟺ v ≥ ⌈x⌉
    if op in ("<", "<="):
        k = math.ceil(x) - 1 if op == "<" else math.floor(x)
        if k >= _I64 - 1:
            return _always(column)
        return _never(column) if k < -_I64 else Compare(column, "<=", k)
    k = math.floor(x) + 1 if op == ">" else math.ceil(x)
    if k <= -_I64:
        return _always(column)
    return _never(column) if k >= _I64 else Compare(column, ">=", k)


def _literal(kind: str, value: object, column: str) -> LiteralValue:
    if value is None:
        raise ParameterError(
            f"column {column!r} is compared with NULL, which is never true; write IS NULL",
            parameter="where",
        )
    if kind == "text" and not isinstance(value, str):
        raise ParameterError(
            f"column {column!r} is text: compare it with a quoted string, not {value!r}",
            parameter="where",
        )
    if kind in ("integer", "decimal") and isinstance(value, str):
        raise ParameterError(
            f"column {column!r} is {kind}: compare it with a number, not the string {value!r}",
            parameter="where",
        )
    if kind == "decimal" and isinstance(value, float):
        raise ParameterError(
            f"column {column!r}: give the literal as an exact number (int, Fraction or decimal "
            f"text), not the float {value!r}",
            parameter="where",
        )
    try:
        typed = typed_key(kind, value, column)
    except ParameterError as exc:
        raise ParameterError(str(exc).replace("a key", "a literal"), parameter="where") from None
    if kind == "integer" and not -_I64 <= int(typed) < _I64:  # type: ignore[arg-type]
        raise ParameterError(
            f"column {column!r} is an int64 integer; {value!r} is outside its range",
            parameter="where",
        )
    return typed


# -- evaluation (the definition every engine reproduces) ----------------------------------------
def evaluate(predicate: Predicate, row: Mapping[str, object]) -> bool | None:
    """The predicate on one row of cast values (None: null); True, False or None (unknown).
    Decimal columns' values are doubles, compared with the double nearest each literal."""
    if isinstance(predicate, Compare):
        v = row.get(predicate.column)
        if v is None:
            return None
        return _compare(v, predicate.op, _engine_value(predicate.value, v))
    if isinstance(predicate, InList):
        v = row.get(predicate.column)
        if v is None:
            return None
        return any(_compare(v, "=", _engine_value(x, v)) for x in predicate.values)
    if isinstance(predicate, IsNull):
        return row.get(predicate.column) is None
    if isinstance(predicate, Not):
        inner = evaluate(predicate.term, row)
        return None if inner is None else not inner
    values = [evaluate(t, row) for t in predicate.terms]
    if isinstance(predicate, And):
        if any(x is False for x in values):
            return False
        return None if any(x is None for x in values) else True
    if any(x is True for x in values):
        return True
    return None if any(x is None for x in values) else False


def _engine_value(literal: LiteralValue, value: object) -> object:
    if isinstance(value, float) and isinstance(literal, (int, Fraction)):
        try:
            return float(literal)  # correctly rounded
        except OverflowError:
            return float("inf") if literal > 0 else float("-inf")
    return literal


def _compare(a: Any, op: str, b: Any) -> bool:
    if op == "=":
        return bool(a == b)
    if op == "<>":
        return bool(a != b)
    if op == "<":
        return bool(a < b)
    if op == "<=":
        return bool(a <= b)
    if op == ">":
        return bool(a > b)
    return bool(a >= b)


def to_sql(predicate: Predicate) -> str:
    """Readable SQL for labels and messages: ``age >= 18 AND sex IN ('1', '2')``."""
    return _readable(predicate, top=True)


def _ident(name: str) -> str:
    if name.isidentifier() and name.isascii():
        return name
    return '"' + name.replace('"', '""') + '"'


def _lit_text(value: LiteralValue) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, _dt.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, Fraction):  # for labels and messages: capped in length
        return shown_rational(value)
    return str(value)


def _readable(p: Predicate, top: bool = False) -> str:
    if isinstance(p, Compare):
        return f"{_ident(p.column)} {p.op} {_lit_text(p.value)}"
    if isinstance(p, InList):
        return f"{_ident(p.column)} IN ({', '.join(_lit_text(v) for v in p.values)})"
    if isinstance(p, IsNull):
        return f"{_ident(p.column)} IS NULL"
    if isinstance(p, Not):
        t = p.term
        if isinstance(t, IsNull):
            return f"{_ident(t.column)} IS NOT NULL"
        if isinstance(t, InList):
            return _readable(t).replace(" IN (", " NOT IN (", 1)
        return f"NOT {_readable(t)}"
    word = " AND " if isinstance(p, And) else " OR "
    text = word.join(_readable(t) for t in p.terms)
    return text if top else f"({text})"
