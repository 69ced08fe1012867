"""SQL terms: column references, aggregates, WHERE conditions and literals (docs/sql.md).

:class:`SqlTerms` reads the expressions of one SELECT against a declaration: a column reference
becomes a declared column's name, an aggregate call a :class:`~snapdp.data.model.query.Query`, a
WHERE condition a checked :class:`~snapdp.data.model.predicate.Predicate`, a literal a typed value.
Anything outside the grammar of docs/sql.md raises a :class:`~._sqltext.SqlError` with a caret.
The statement around the terms (clauses, OPTIONS, ε) is read by :mod:`.sql`; HAVING and ORDER BY
by :mod:`._sqlpost`.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from msgspec.structs import replace

from snapdp.data.frontends._sqltext import SqlError, SqlText
from snapdp.data.model.predicate import (
    And,
    Compare,
    InList,
    IsNull,
    LiteralValue,
    Not,
    Or,
    Predicate,
    check_predicate,
)
from snapdp.data.model.query import Query
from snapdp.data.model.workload import Declaration
from snapdp.errors import ParameterError, did_you_mean, not_declared

__all__ = ["COMPARE", "FLIP", "SqlTerms", "canonical", "describe"]

_STATISTIC_OF = {
    "Count": "count",
    "Sum": "sum",
    "Avg": "mean",
    "VariancePop": "variance",
    "Variance": "var_samp",  # DuckDB's VARIANCE is the sample form, as BigQuery's
    "VarianceSamp": "var_samp",
    "StddevPop": "std",
    "Stddev": "std_samp",
    "StddevSamp": "std_samp",
    "PercentileCont": "quantiles",
    "Median": "quantiles",
}
_ANONYMOUS = {"QUANTILE_CONT": "quantiles", "VAR_SAMP": "var_samp", "VAR_POP": "variance"}
COMPARE = {"EQ": "=", "NEQ": "<>", "LT": "<", "LTE": "<=", "GT": ">", "GTE": ">="}
FLIP = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_LIST = (
    "COUNT(*), COUNT(col), SUM, AVG, VAR_POP, VAR_SAMP, STDDEV_POP, STDDEV_SAMP, "
    "PERCENTILE_CONT(col, p), QUANTILE_CONT(col, p), MEDIAN(col)"
)
#: the aggregate functions' names, for "did you mean" (the grammar's words, never data)
_FUNCTIONS = (
    "COUNT", "SUM", "AVG", "VAR_POP", "VAR_SAMP", "VARIANCE", "STDDEV_POP", "STDDEV_SAMP",
    "STDDEV", "PERCENTILE_CONT", "QUANTILE_CONT", "MEDIAN",
)  # fmt: skip


class SqlTerms(SqlText):
    """The terms of docs/sql.md's grammar over the tree of :class:`SqlText`, against a
    declaration."""

    def __init__(
        self,
        text: str,
        declaration: Declaration,
        display: str | None = None,
        prefix: int = 0,
        label: str = "query",
    ) -> None:
        super().__init__(text, display, prefix, label)
        self.declaration = declaration
        self.schema = declaration.schema
        self.qualifiers: set[str] = set()  # what a column may be qualified with (FROM, alias)
        self.owner: dict[int, tuple[Fraction, Fraction]] = {}

    def column_name(self, node: Any) -> str:
        """A declared column's name (a qualifier must be the declared table's)."""
        from sqlglot import exp

        table = node.args.get("table")
        known = self.qualifiers or {(self.declaration.table or str(table)).lower()}
        if table is not None and table.name.lower() not in known:
            raise self.at(table, f"{table.name!r} is not the declared table")
        name = str(node.name)
        names = [c.name for c in self.schema.columns]
        quoted = isinstance(node.this, exp.Identifier) and node.this.args.get("quoted")
        if name not in names and not quoted:  # an unquoted name ignores case, as in SQL
            same = [n for n in names if n.lower() == name.lower()]
            name = same[0] if len(same) == 1 else name
        if name not in names:
            raise self.at(node, not_declared(name, names))
        return name

    # -- aggregates ------------------------------------------------------------------------
    def aggregate(
        self, node: Any, by: tuple[str, ...], where: Predicate | None, alias: str | None
    ) -> Query:
        from sqlglot import exp

        kind = type(node).__name__
        probability: Fraction | None = None
        if isinstance(node, exp.WithinGroup):  # PERCENTILE_CONT(p) WITHIN GROUP (ORDER BY col)
            inner, order = node.this, node.expression
            if not isinstance(inner, exp.PercentileCont) or not order.expressions:
                raise self.at(node, "WITHIN GROUP is accepted for PERCENTILE_CONT only")
            probability = self.number(inner.this)
            target = order.expressions[0].this
            kind, args = "PercentileCont", [target]
        elif isinstance(node, exp.Anonymous):
            name = str(node.this).upper()
            if name not in _ANONYMOUS:
                hint = did_you_mean(name, _FUNCTIONS)
                raise self.at(node, f"function {name} is not accepted here{hint} ({_LIST})")
            kind, args = name, list(node.expressions)
        elif kind in _STATISTIC_OF:
            args = [a for a in (node.this, node.args.get("expression")) if a is not None]
            if isinstance(node.this, exp.Distinct):
                raise self.at(node, "DISTINCT in an aggregate is refused")
        else:
            raise self.at(node, f"{describe(node)} is not accepted in SELECT ({_LIST})")
        statistic = _STATISTIC_OF.get(kind) or _ANONYMOUS[kind]
        if kind == "Median":
            probability = Fraction(1, 2)
        elif statistic == "quantiles" and probability is None:
            if len(args) != 2:
                raise self.at(node, "PERCENTILE_CONT takes (column, probability)")
            probability = self.number(args[1])
            args = args[:1]
        if probability is not None and not 0 < probability < 1:
            raise self.at(node, "a percentile's probability must lie strictly between 0 and 1")
        if kind == "Count" and isinstance(node.this, (exp.Star, exp.Literal)):  # COUNT(1)
            return Query("count", by=by, where=where, name=alias)
        if len(args) != 1:
            raise self.at(node, f"{kind.upper()} takes one column")
        column, bounds = self.value_column(args[0], node)
        if kind == "Count":  # COUNT(col): the rows where col is not null
            extra: Predicate = Not(IsNull(column))
            where = extra if where is None else And((where, extra))
            return Query("count", by=by, where=where, name=alias)
        if bounds is not None:
            self._bounded(column, bounds, node)
        quantiles = (probability,) if probability is not None else ()
        try:
            return Query(statistic, column, by, quantiles=quantiles, where=where,  # type: ignore[arg-type]
                         name=alias)  # fmt: skip
        except ParameterError as exc:
            raise self.at(node, str(exc), exc.parameter or "query") from None

    def value_column(self, arg: Any, node: Any) -> tuple[str, tuple[Fraction, Fraction] | None]:
        from sqlglot import exp

        bounds = self.owner.get(id(node))
        if isinstance(arg, exp.Anonymous) and str(arg.this).upper() == "CLAMP":
            if len(arg.expressions) != 3 or not isinstance(arg.expressions[0], exp.Column):
                raise self.at(arg, "CLAMP takes (column, lower, upper)")
            col, lo, hi = arg.expressions
            return self.column_name(col), (self.number(lo), self.number(hi))
        if not isinstance(arg, exp.Column):
            raise self.at(arg, "an aggregate takes a declared column (or CLAMP(column, lo, hi))")
        return self.column_name(arg), bounds

    def _bounded(self, column: str, bounds: tuple[Fraction, Fraction], node: Any) -> None:
        declared = self.schema.column(column)
        if declared.lower is not None and (declared.lower, declared.upper) != bounds:
            raise self.at(
                node,
                f"column {column!r} is declared with bounds [{declared.lower}, {declared.upper}]; "
                "per-aggregate bounds must match them (or leave them out of the declaration)",
            )
        try:
            new = replace(declared, lower=bounds[0], upper=bounds[1])
        except ParameterError as exc:
            raise self.at(node, str(exc), exc.parameter or "query") from None
        self.schema = self.schema.with_columns([new])

    def number(self, node: Any) -> Fraction:
        from sqlglot import exp

        sign = 1
        if isinstance(node, exp.Neg):
            sign, node = -1, node.this
        if isinstance(node, exp.Literal) and not node.is_string:
            return sign * self.exact(node)
        raise self.at(node, "a number is expected here")

    # -- WHERE -----------------------------------------------------------------------------
    def predicate(self, node: Any) -> Predicate:
        from sqlglot import exp

        if isinstance(node, exp.Paren):
            return self.predicate(node.this)
        if isinstance(node, exp.And):
            return And((self.predicate(node.this), self.predicate(node.expression)))
        if isinstance(node, exp.Or):
            return Or((self.predicate(node.this), self.predicate(node.expression)))
        if isinstance(node, exp.Not):
            return Not(self.predicate(node.this))
        if isinstance(node, exp.Is):
            if not isinstance(node.expression, exp.Null):
                raise self.at(node.expression, "IS takes NULL (IS NULL, IS NOT NULL)")
            return self._checked(node.this, lambda c: IsNull(c))
        if isinstance(node, exp.Between):
            low, high = node.args["low"], node.args["high"]
            return self._checked(
                node.this,
                lambda c: And(
                    (Compare(c, ">=", self.literal(low)), Compare(c, "<=", self.literal(high)))
                ),
            )
        if isinstance(node, exp.In):
            if node.args.get("query") is not None:
                raise self.at(node, "subqueries are refused: IN takes a list of literals")
            values = tuple(self.literal(v) for v in node.expressions)
            return self._checked(node.this, lambda c: InList(c, values))
        kind = type(node).__name__
        if kind in COMPARE:
            op = COMPARE[kind]
            left, right = node.this, node.expression
            if not isinstance(left, exp.Column) and isinstance(right, exp.Column):
                left, right, op = right, left, FLIP[op]
            if isinstance(right, exp.Null):
                raise self.at(left, "a comparison with NULL is never true: write IS NULL")
            value = self.literal(right)
            return self._checked(left, lambda c: Compare(c, op, value))  # type: ignore[arg-type]
        raise self.at(
            node,
            f"{describe(node)} is not accepted in WHERE (comparisons of a declared column with "
            "literals, BETWEEN, IN, IS [NOT] NULL, AND, OR, NOT)",
        )

    def _checked(self, column: Any, build: Callable[[str], Predicate]) -> Predicate:
        from sqlglot import exp

        if not isinstance(column, exp.Column):
            raise self.at(column, "WHERE compares a declared column with literals")
        name = self.column_name(column)
        try:
            return check_predicate(build(name), self.schema)
        except SqlError:  # a literal of the predicate, already located in the text
            raise
        except ParameterError as exc:
            raise self.at(column, str(exc), "where") from None

    def literal(self, node: Any) -> LiteralValue:
        from sqlglot import exp

        if isinstance(node, exp.Paren):
            return self.literal(node.this)
        if isinstance(node, exp.Boolean):
            return bool(node.this)
        if isinstance(node, exp.Null):
            raise self.at(node, "a comparison with NULL is never true: write IS NULL")
        if (
            isinstance(node, exp.Cast)
            and isinstance(node.this, exp.Literal)
            and node.to.is_type("date")
            and node.this.is_string
        ):
            try:
                return _dt.date.fromisoformat(str(node.this.this))
            except ValueError:
                raise self.at(node.this, "not a date (YYYY-MM-DD)") from None
        if isinstance(node, exp.Literal):
            if node.is_string:
                return str(node.this)
            text = str(node.this)
            value = self.exact(node)
            return int(value) if re.fullmatch(r"[+-]?[0-9]+", text) else value
        if isinstance(node, exp.Neg):
            inner = self.literal(node.this)
            if isinstance(inner, (int, Fraction)) and not isinstance(inner, bool):
                return -inner
        raise self.at(node, f"{describe(node)} is not a literal")


def describe(node: Any) -> str:
    from sqlglot import exp

    if isinstance(node, exp.Anonymous):
        return f"function {str(node.this).upper()}"
    if isinstance(node, exp.Func):
        return f"function {node.sql_name()}"
    return node.key.upper() if hasattr(node, "key") else type(node).__name__


def canonical(node: Any) -> str:
    return str(node.sql()).upper()
