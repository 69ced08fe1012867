"""SQL front end: a SELECT over the declared table becomes a workload (docs/sql.md).

Parsed with sqlglot into its expression tree, then checked node by node against the grammar of
docs/sql.md and the declaration; every refusal names the line and column of the offending part
and draws a caret under it, before any data is read and with nothing spent. The result is a
:class:`SqlQuery`: the :class:`~snapdp.data.model.workload.Workload` (one planned query per
aggregate expression, in SELECT order) and the post-processing the query asks of the released values
(HAVING, ORDER BY). This module computes no sensitivity and no ε beyond dividing the query's ε
equally between its aggregates.

BigQuery's ``SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(...)`` prefix and its per-aggregate
``contribution_bounds_per_group => (lo, hi)`` argument are taken out by a small pre-pass over
sqlglot's tokens (sqlglot does not parse them; comments and literals are never read as them) that
blanks them with spaces, so every position stays where it was. OPTIONS may restate the declared
privacy unit, never set or change it. Every node of the tree must be on the allow-list of
:mod:`._sqlallow`: a clause the compiler does not read is refused, never dropped.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from snapdp._validation import SIZE_RULE, NumberSizeError, exact_value
from snapdp.data.frontends._sqlallow import CLAUSES, KEYWORDS, first_refused
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
from snapdp.data.model.schema import ContributionBounds, Schema
from snapdp.data.model.workload import Declaration, PlannedQuery, Workload
from snapdp.data.output.postprocess import Output, PostProcessing
from snapdp.data.output.postprocess import apply_post_processing as _apply
from snapdp.data.output.results import QueryResult
from snapdp.errors import ParameterError

__all__ = ["SqlError", "SqlQuery", "apply_post_processing", "parse_predicate", "parse_sql"]

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
_COMPARE = {"EQ": "=", "NEQ": "<>", "LT": "<", "LTE": "<=", "GT": ">", "GTE": ">="}
_FLIP = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


@dataclass(frozen=True)
class SqlQuery:
    """A parsed query: its workload and what to do with the released values."""

    text: str
    workload: Workload
    post: PostProcessing = field(default_factory=PostProcessing)

    @property
    def queries(self) -> list[Query]:
        """The queries, one per aggregate, in SELECT order."""
        return [pq.query for pq in self.workload.queries]

    @property
    def epsilons(self) -> list[Fraction]:
        """Each query's fixed ε (None when it has a target or a weight instead)."""
        return [pq.epsilon for pq in self.workload.queries]  # type: ignore[misc]


# -- entry points ---------------------------------------------------------------------------------
def parse_sql(
    text: str,
    declaration: Declaration,
    *,
    epsilon: object = None,
    accuracy: object = None,
    weight: object = None,
) -> SqlQuery:
    """The workload of the SELECT ``text`` over ``declaration``'s table.

    ``epsilon``: the query's total ε, split equally between its aggregates (or BigQuery's
    ``OPTIONS(epsilon = …)``); or ``accuracy`` (each aggregate's target ±) or ``weight`` (shared
    equally) for a plan file. A :class:`SqlError` with a caret for anything outside docs/sql.md.
    """
    return _Parser(text, declaration).parse(epsilon, accuracy, weight)


def parse_predicate(text: str, declaration: Declaration, label: str = "where") -> Predicate:
    """A WHERE condition on its own (a plan file's ``where = "…"``, the CLI's ``--where``),
    checked like a query's; errors name it ``label``."""
    if not isinstance(text, str):
        raise ParameterError(
            f"a condition must be text, not {type(text).__name__}", parameter="where"
        )
    head = "SELECT COUNT(*) WHERE "
    parser = _Parser(head + text, declaration, display=text, prefix=len(head), label=label)
    tree = parser.tree()
    where = tree.args.get("where")
    extra = [k for k in ("group", "having", "order", "limit") if tree.args.get(k) is not None]
    if where is None or extra:
        raise parser.error(len(head), len(head) + len(text) - 1, "not one condition")
    predicate = parser.predicate(where.this)
    parser._allow_listed(tree)  # nothing after the condition is silently dropped
    return predicate


def apply_post_processing(query: SqlQuery, results: Sequence[QueryResult]) -> list[QueryResult]:
    """HAVING and ORDER BY of ``query`` over its released ``results`` (post-processing; see
    :mod:`snapdp.data.output.postprocess`)."""
    return _apply(query.post, results)


# -- the parser -----------------------------------------------------------------------------------
class _Parser(SqlText):
    """The grammar of docs/sql.md over the tree of :class:`SqlText`, against a declaration."""

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

    def parse(self, epsilon: object, accuracy: object, weight: object) -> SqlQuery:
        from sqlglot import exp

        tree = self.tree()
        self._refuse_structure(tree)
        self._allow_listed(tree, CLAUSES)
        declaration = self._declaration()
        self.schema = declaration.schema
        self._check_from(tree)
        self._assign_bounds(tree)
        where = None
        if tree.args.get("where") is not None:
            where = self.predicate(tree.args["where"].this)
        groups = self._groups(tree)
        outputs: list[Output] = []
        queries: list[Query] = []
        names: dict[str, int] = {}
        for item in tree.expressions:
            alias = None
            node = item
            if isinstance(item, exp.Alias):
                alias, node = item.alias, item.this
            if isinstance(node, exp.Column):
                name = self.column_name(node)
                if name not in groups:
                    raise self.at(
                        node, f"column {name!r} is selected but not in GROUP BY: aggregate it"
                    )
                outputs.append(self._unique(Output(alias or name, column=name), outputs, item))
                continue
            if isinstance(node, exp.Star):
                raise self.at(node, "SELECT * is refused: name the aggregates")
            query = self.aggregate(node, tuple(groups), where, alias)
            names[_canonical(node)] = len(queries)
            output = Output(alias or query.label, aggregate=len(queries))
            outputs.append(self._unique(output, outputs, item))
            queries.append(query)
        if not queries:
            raise self.at(tree, "the SELECT has no aggregate (COUNT, SUM, AVG, …)")
        having = None
        if tree.args.get("having") is not None:
            having = self._post(tree.args["having"].this, outputs, names, groups, "HAVING")
        order = self._order(tree, outputs, names, groups)
        self._allow_listed(tree)
        declaration = replace(declaration, schema=self.schema)  # with any CLAMP bounds
        planned = self._planned(declaration, queries, epsilon, accuracy, weight)
        workload = Workload(declaration, tuple(planned))
        post = PostProcessing(tuple(outputs), having, order)
        return SqlQuery(self.original, workload, post)

    def _refuse_structure(self, tree: Any) -> None:
        from sqlglot import exp

        if tree.args.get("joins"):  # JOIN, or a comma after FROM: search from FROM on
            after = self.keyword(("FROM",))[1]
            raise self.refuse_keyword(
                "join", "JOIN is refused: a query reads one declared table", after
            )
        if tree.args.get("distinct") is not None or tree.find(exp.Distinct) is not None:
            raise self.refuse_keyword("distinct", "DISTINCT is refused")
        for key in ("limit", "offset", "fetch"):
            if tree.args.get(key) is not None:
                raise self.refuse_keyword(
                    "limit", f"{key.upper()} is refused: every group is released"
                )
        if tree.find(exp.Window) is not None:
            raise self.refuse_keyword("window", "window functions (OVER) are refused")
        for node in tree.walk():
            if node is not tree and isinstance(node, (exp.Select, exp.Subquery)):
                start, _ = self.keyword(("SELECT",), 1)
                raise self.error(start, start + 5, "subqueries are refused: one SELECT only")
        from_ = tree.args.get("from") or tree.args.get("from_")
        if from_ is not None and len(from_.expressions or []) > 0:
            start, _ = self.keyword(("FROM",))
            raise self.refuse_keyword(
                "join", "several tables in FROM are refused (a join)", after=start
            )

    def _unique(self, output: Output, outputs: list[Output], item: Any) -> Output:
        """``output``, refused when an earlier SELECT item has its name (names ignore case):
        HAVING and ORDER BY could not tell which one they name."""
        from sqlglot import exp

        for other in outputs:
            if other.name.lower() == output.name.lower():
                what = (f"the output name {item.alias}" if isinstance(item, exp.Alias)
                        else "this item's output name")  # fmt: skip
                raise self.at(
                    item, f"{what} is used twice in SELECT: give each item its own alias (AS)"
                )
        return output

    def _allow_listed(self, tree: Any, kinds: frozenset[str] | None = None) -> None:
        """Refuse any part of the tree outside the grammar's allow-list (:mod:`._sqlallow`):
        a clause the compiler does not read would be silently dropped from the release.
        ``kinds``: check only nodes of these types (the clauses, before the compiler's own
        messages about the expressions)."""
        found = first_refused(tree, kinds)
        if found is None:
            return
        node, word = found
        start, end = self.span(node)
        if word in KEYWORDS:
            for token in self.tokens():
                if token.text.upper() in KEYWORDS[word]:
                    start, end = token.start, token.end
                    if token.text.upper() == "USING":
                        word = "USING SAMPLE"
                    break
        raise self.error(
            start, end, f"{word} is refused: snapdp does not apply it, so the release would not "
            "be what the query says",
        )  # fmt: skip

    def _check_from(self, tree: Any) -> None:
        from sqlglot import exp

        from_ = tree.args.get("from") or tree.args.get("from_")
        table = self.declaration.table
        if from_ is None:
            return  # FROM may be left out: the declared table
        node = from_.this
        if not isinstance(node, exp.Table):
            raise self.at(node, "FROM must name the declared table")
        name = node.name
        if table is not None and name.lower() != table.lower():  # names ignore case, as in SQL
            raise self.at(
                node.this if node.this is not None else node,
                f"FROM names {name!r}, but the declared table is {table!r} ([data] name, or the "
                "source file's name)",
            )
        self.qualifiers = {name.lower()} | ({node.alias.lower()} if node.alias else set())

    def _declaration(self) -> Declaration:
        """The declaration with BigQuery's OPTIONS applied (contribution bounds; the privacy unit
        may only be restated: it is the data owner's, docs/sql.md "OPTIONS")."""
        d = self.declaration
        schema = d.schema
        bounds = schema.bounds
        for key, (value, where) in self.options.items():
            text = str(value)
            if key == "epsilon":
                continue
            if key == "privacy_unit":
                self._restated_unit(text)
                continue
            if text.isdigit():
                self.exact_span(text, where, where)  # its size, before int() reads it
            if not text.isdigit() or int(text) < 1:
                raise self.option_error(key, f"{self.option_words[key]} must be an integer >= 1, "
                                        f"not {text}")  # fmt: skip
            bounds = replace(bounds, **{key: int(text)})
        if bounds == schema.bounds:
            return d
        try:
            new = Schema(schema.columns, schema.privacy_unit, schema.null_units,
                         ContributionBounds(bounds.max_rows_per_unit, bounds.max_groups_per_unit,
                                            bounds.max_rows_per_group),
                         schema.max_rows, schema.rows, schema.csv)  # fmt: skip
        except ParameterError as exc:
            first = next(k for k in self.options if k not in ("epsilon", "privacy_unit"))
            raise self.option_error(first, self.words(str(exc)), exc.parameter) from None
        return replace(d, schema=new)

    def _restated_unit(self, text: str) -> None:
        """``OPTIONS(privacy_unit_column = text)`` may only name the declared unit: a new or
        different unit would change the neighbouring datasets the ε is stated for."""
        unit = self.schema.privacy_unit
        names = [c.name for c in self.schema.columns] + ([unit] if unit else [])
        if text not in names:
            declared = ", ".join(c.name for c in self.schema.columns) or "none"
            raise self.option_error(
                "privacy_unit", f"privacy_unit_column: column {text} is not declared (declared: "
                f"{declared})",
            )  # fmt: skip
        if text == unit:
            return
        whose = (f"the declared privacy unit is {unit}" if unit is not None else
                 "the declaration has no privacy unit (each row is protected)")  # fmt: skip
        raise self.option_error(
            "privacy_unit",
            f"privacy_unit_column = {text} is refused: {whose}, and the unit is set in the "
            "declaration ([data] privacy_unit), not in a query; OPTIONS may only repeat it",
        )

    def option_error(self, key: str, message: str, parameter: str | None = None) -> SqlError:
        """An error with a caret under ``name = value`` of the OPTIONS item ``key``."""
        start, end = self.option_spans[key]
        return self.error(start, end, message, parameter or "query")

    def _groups(self, tree: Any) -> list[str]:
        from sqlglot import exp

        group = tree.args.get("group")
        out: list[str] = []
        if group is None:
            return out
        for node in group.expressions:
            if not isinstance(node, exp.Column):
                raise self.at(node, "GROUP BY takes declared columns only")
            name = self.column_name(node)
            col = self.schema.column(name)
            if not col.is_grouping:
                raise self.at(
                    node,
                    f"GROUP BY {name!r}: the column has no declared keys or bins, so its groups "
                    "would come from the data",
                )
            if name in out:
                raise self.at(node, f"GROUP BY repeats {name!r}")
            out.append(name)
        return out

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
            declared = ", ".join(names) or "none"
            raise self.at(node, f"column {name!r} is not declared (declared: {declared})")
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
                raise self.at(node, f"function {name} is not accepted here ({_LIST})")
            kind, args = name, list(node.expressions)
        elif kind in _STATISTIC_OF:
            args = [a for a in (node.this, node.args.get("expression")) if a is not None]
            if isinstance(node.this, exp.Distinct):
                raise self.at(node, "DISTINCT in an aggregate is refused")
        else:
            raise self.at(node, f"{_describe(node)} is not accepted in SELECT ({_LIST})")
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
        if kind in _COMPARE:
            op = _COMPARE[kind]
            left, right = node.this, node.expression
            if not isinstance(left, exp.Column) and isinstance(right, exp.Column):
                left, right, op = right, left, _FLIP[op]
            if isinstance(right, exp.Null):
                raise self.at(left, "a comparison with NULL is never true: write IS NULL")
            value = self.literal(right)
            return self._checked(left, lambda c: Compare(c, op, value))  # type: ignore[arg-type]
        raise self.at(
            node,
            f"{_describe(node)} is not accepted in WHERE (comparisons of a declared column with "
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
        raise self.at(node, f"{_describe(node)} is not a literal")

    # -- HAVING and ORDER BY ---------------------------------------------------------------
    def _ref(
        self, node: Any, outputs: list[Output], names: dict[str, int], groups: list[str],
        clause: str,
    ) -> tuple[str, str | None]:  # fmt: skip
        """The output a HAVING/ORDER BY term names, and its grouping column (None: an
        aggregate)."""
        from sqlglot import exp

        if isinstance(node, exp.Column) and not node.args.get("table"):
            name = str(node.name)
            for o in outputs:
                if o.name == name:
                    return (name, o.column)
            if name in groups:
                return (name, name)
        key = _canonical(node)
        if key in names:
            return (f"#{names[key]}", None)
        raise self.at(
            node,
            f"{clause} may use only the selected aggregates, their aliases and the GROUP BY "
            "columns (anything else would need its own release)",
        )

    def _post(
        self, node: Any, outputs: list[Output], names: dict[str, int], groups: list[str],
        clause: str,
    ) -> Predicate:  # fmt: skip
        """HAVING as a predicate over output names (post-processing of released values)."""
        from sqlglot import exp

        def again(n: Any) -> Predicate:
            return self._post(n, outputs, names, groups, clause)

        if isinstance(node, exp.Paren):
            return again(node.this)
        if isinstance(node, exp.And):
            return And((again(node.this), again(node.expression)))
        if isinstance(node, exp.Or):
            return Or((again(node.this), again(node.expression)))
        if isinstance(node, exp.Not):
            return Not(again(node.this))
        kind = type(node).__name__
        if not (isinstance(node, (exp.Between, exp.In)) or kind in _COMPARE):
            raise self.at(node, f"{_describe(node)} is not accepted in {clause}")
        left, right = node.this, node.args.get("expression")
        op = _COMPARE.get(kind, "=")
        if kind in _COMPARE and isinstance(left, (exp.Literal, exp.Neg)):
            left, right, op = right, left, _FLIP[op]
        ref, column = self._ref(left, outputs, names, groups, clause)
        if column is not None:  # a grouping column: its keys are typed values
            if self.schema.column(column).keys is None:
                raise self.at(left, f"{clause} on a binned column is refused (its groups are bins)")
            return self.predicate(_renamed(node, ref, column))
        if isinstance(node, exp.Between):
            lo, hi = node.args["low"], node.args["high"]
            return And((Compare(ref, ">=", self._number_literal(lo)),
                        Compare(ref, "<=", self._number_literal(hi))))  # fmt: skip
        if isinstance(node, exp.In):
            return InList(ref, tuple(self._number_literal(v) for v in node.expressions))
        return Compare(ref, op, self._number_literal(right))  # type: ignore[arg-type]

    def _number_literal(self, node: Any) -> Fraction:
        """A released value is a number: it is compared with numbers only."""
        value = self.literal(node)
        if isinstance(value, bool) or not isinstance(value, (int, Fraction)):
            raise self.at(node, "a released value is compared with a number")
        return Fraction(value)

    def _order(self, tree: Any, outputs: list[Output], names: dict[str, int],
               groups: list[str]) -> tuple[tuple[str, bool], ...]:  # fmt: skip
        from sqlglot import exp

        order = tree.args.get("order")
        if order is None:
            return ()
        out = []
        for item in order.expressions:
            node = item.this if isinstance(item, exp.Ordered) else item
            if isinstance(node, exp.Literal) and not node.is_string:
                position = self.exact(node)
                index = int(position) - 1 if position.denominator == 1 else -1
                if not 0 <= index < len(outputs):
                    raise self.at(node, "ORDER BY position is not a SELECT item")
                name = outputs[index].name
            else:
                name = self._ref(node, outputs, names, groups, "ORDER BY")[0]
            out.append((name, bool(item.args.get("desc"))))
        return tuple(out)

    # -- ε ---------------------------------------------------------------------------------
    def _planned(
        self,
        declaration: Declaration,
        queries: list[Query],
        epsilon: object,
        accuracy: object,
        weight: object,
    ) -> list[PlannedQuery]:
        if "epsilon" in self.options:
            epsilon = self._option_epsilon(epsilon)
        given = [k for k, v in (("epsilon", epsilon), ("accuracy", accuracy), ("weight", weight))
                 if v is not None]  # fmt: skip
        if len(given) != 1:
            raise ParameterError(
                "a SQL query takes exactly one of an ε (--epsilon, or OPTIONS(epsilon = …)), a "
                f"target accuracy and a weight, not {', '.join(given) or 'none'}",
                parameter="epsilon",
            )
        n = len(queries)
        out = []
        for q in queries:
            if epsilon is not None:
                out.append(declaration.planned(q, epsilon=exact_value(epsilon, name="epsilon") / n))
            elif accuracy is not None:
                out.append(declaration.planned(q, accuracy=accuracy))
            else:
                out.append(declaration.planned(q, weight=exact_value(weight, name="weight") / n))
        return out

    def _option_epsilon(self, given: object) -> Fraction:
        """``OPTIONS(epsilon = …)``: a number > 0, the same as an ε given beside it."""
        text = str(self.options["epsilon"][0])
        try:
            option = exact_value(text, name="epsilon")
        except NumberSizeError:
            raise self.option_error(
                "epsilon", f"epsilon must have {SIZE_RULE}", "epsilon"
            ) from None
        except (ParameterError, ValueError, ZeroDivisionError):
            raise self.option_error("epsilon", f"epsilon must be a number, not {text}") from None
        if option <= 0:
            raise self.option_error("epsilon", f"epsilon must be > 0, not {text}", "epsilon")
        if given is not None and exact_value(given, name="epsilon") != option:
            raise self.option_error(
                "epsilon", f"OPTIONS(epsilon = {text}) differs from the ε given ({given})",
                "epsilon",
            )  # fmt: skip
        return option

    def _assign_bounds(self, tree: Any) -> None:
        """Each ``contribution_bounds_per_group`` to the aggregate it was written in: the last
        function that starts before it."""
        from sqlglot import exp

        funcs = []
        for item in tree.expressions:
            for node in item.walk():
                if isinstance(node, exp.Func) and "start" in (node.meta or {}):
                    funcs.append((int(node.meta["start"]), node))
        for at, lo, hi in self.bounds_at:
            before = [(s, n) for s, n in funcs if s < at]
            if not before:
                raise self.error(at, at, "contribution_bounds_per_group belongs in an aggregate")
            self.owner[id(max(before, key=lambda x: x[0])[1])] = (lo, hi)


_LIST = (
    "COUNT(*), COUNT(col), SUM, AVG, VAR_POP, VAR_SAMP, STDDEV_POP, STDDEV_SAMP, "
    "PERCENTILE_CONT(col, p), QUANTILE_CONT(col, p), MEDIAN(col)"
)


def _describe(node: Any) -> str:
    from sqlglot import exp

    if isinstance(node, exp.Anonymous):
        return f"function {str(node.this).upper()}"
    if isinstance(node, exp.Func):
        return f"function {node.sql_name()}"
    return node.key.upper() if hasattr(node, "key") else type(node).__name__


def _canonical(node: Any) -> str:
    return str(node.sql()).upper()


def _renamed(node: Any, alias: str, column: str) -> Any:
    """A copy of ``node`` with the grouping ``column`` where its ``alias`` was written (positions
    of the other parts kept)."""
    from sqlglot import exp

    copy = node.copy()
    for ref in list(copy.find_all(exp.Column)):
        if ref.name == alias and not ref.args.get("table"):
            new = exp.column(column)
            new.meta.update(ref.meta)
            ref.replace(new)
    return copy
