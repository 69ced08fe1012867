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
The terms (aggregates, WHERE) are read by :mod:`._sqlterms`, HAVING and ORDER BY by
:mod:`._sqlpost`.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from msgspec import Struct, field
from msgspec.structs import replace

from snapdp._validation import SIZE_RULE, NumberSizeError, exact_value
from snapdp.data.frontends._sqlallow import CLAUSES, KEYWORDS, first_refused
from snapdp.data.frontends._sqlpost import SqlPostTerms
from snapdp.data.frontends._sqlterms import canonical
from snapdp.data.frontends._sqltext import SqlError
from snapdp.data.model.observed import DATA_KEY_TYPES
from snapdp.data.model.predicate import Predicate
from snapdp.data.model.query import Query
from snapdp.data.model.schema import ContributionBounds, Schema
from snapdp.data.model.workload import Declaration, PlannedQuery, Workload, check_delta
from snapdp.data.output.postprocess import Output, PostProcessing
from snapdp.data.output.postprocess import apply_post_processing as _apply
from snapdp.data.output.results import QueryResult
from snapdp.errors import ParameterError, did_you_mean, not_declared

__all__ = ["SqlError", "SqlQuery", "apply_post_processing", "parse_predicate", "parse_sql"]


class SqlQuery(Struct, frozen=True):
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
    delta: object = None,
) -> SqlQuery:
    """The workload of the SELECT ``text`` over ``declaration``'s table.

    ``epsilon``: the query's total ε, split equally between its aggregates (or BigQuery's
    ``OPTIONS(epsilon = …)``); or ``accuracy`` (each aggregate's target ±) or ``weight`` (shared
    equally) for a plan file. ``delta`` (or ``OPTIONS(delta = …)``): lets GROUP BY take columns
    without declared keys (docs/sql.md, "Groups from the data"). A :class:`SqlError` with a caret
    for anything outside docs/sql.md.
    """
    return _Parser(text, declaration).parse(epsilon, accuracy, weight, delta)


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
class _Parser(SqlPostTerms):
    """The statement of docs/sql.md (clauses, OPTIONS, ε) over the terms of
    :class:`~._sqlpost.SqlPostTerms`."""

    def parse(
        self, epsilon: object, accuracy: object, weight: object, delta: object = None
    ) -> SqlQuery:
        from sqlglot import exp

        tree = self.tree()
        self.delta = self._option_delta(delta)
        if self.delta is None:
            self.delta = self.declaration.delta  # a plan's [data] delta
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
            names[canonical(node)] = len(queries)
            output = Output(alias or query.label, aggregate=len(queries))
            outputs.append(self._unique(output, outputs, item))
            queries.append(query)
        if not queries:
            raise self.at(tree, "the SELECT has no aggregate (COUNT, SUM, AVG, …)")
        queries = self._grid_counts(queries)
        having = None
        if tree.args.get("having") is not None:
            having = self._post(tree.args["having"].this, outputs, names, groups, "HAVING")
        order = self._order(tree, outputs, names, groups)
        self._allow_listed(tree)
        declaration = replace(declaration, schema=self.schema)  # with any CLAMP bounds
        planned = self._planned(declaration, queries, epsilon, accuracy, weight)
        if self.delta is not None:
            planned = [replace(pq, delta=self.delta) for pq in planned]
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
                f"FROM names {name!r}"
                + (did_you_mean(name, [table]) or f", but the declared table is {table!r}")
                + " ([data] name, or the source file's name)",
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
            if key in ("epsilon", "delta", "grid_counts"):
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
            first = next(k for k in self.options if k not in ("epsilon", "delta", "privacy_unit"))
            raise self.option_error(first, self.words(str(exc)), exc.parameter) from None
        return replace(d, schema=new)

    def _restated_unit(self, text: str) -> None:
        """``OPTIONS(privacy_unit_column = text)`` may only name the declared unit: a new or
        different unit would change the neighbouring datasets the ε is stated for."""
        unit = self.schema.privacy_unit
        names = [c.name for c in self.schema.columns] + ([unit] if unit else [])
        if text not in names:
            declared = (c.name for c in self.schema.columns)
            raise self.option_error(
                "privacy_unit", f"privacy_unit_column: {not_declared(text, declared)}"
            )
        if text == unit:
            return
        whose = (f"the declared privacy unit is {unit}" if unit is not None else
                 "the declaration has no privacy unit (each row is protected)")  # fmt: skip
        raise self.option_error(
            "privacy_unit",
            f"privacy_unit_column = {text} is refused: {whose}, and the unit is set in the "
            "declaration ([data] privacy_unit), not in a query; OPTIONS may only repeat it",
        )

    def _grid_counts(self, queries: list[Query]) -> list[Query]:
        """``OPTIONS(grid_counts = true)``: every COUNT keeps its grid value (docs/sql.md)."""
        if "grid_counts" not in self.options:
            return queries
        text = str(self.options["grid_counts"][0]).lower()
        if text not in ("true", "false"):
            raise self.option_error("grid_counts", f"grid_counts must be true or false, not {text}")
        if text == "false":
            return queries
        if not any(q.statistic == "count" for q in queries):
            raise self.option_error("grid_counts", "grid_counts is for counts: the SELECT has none")
        return [replace(q, grid_counts=True) if q.statistic == "count" else q for q in queries]

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
            if not col.is_grouping and (col.type not in DATA_KEY_TYPES or self.delta is None):
                raise self.at(node, _no_keys(name, col.type))
            if name in out:
                raise self.at(node, f"GROUP BY repeats {name!r}")
            out.append(name)
        return out

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

    def _option_delta(self, given: object) -> Fraction | None:
        """``OPTIONS(delta = …)`` or the δ given beside the query (they must agree)."""
        if "delta" not in self.options:
            return None if given is None else check_delta("delta", given)
        text = str(self.options["delta"][0])
        try:
            option = check_delta("delta", text)
        except ParameterError as exc:
            raise self.option_error("delta", self.words(str(exc)), "delta") from None
        if given is not None and check_delta("delta", given) != option:
            raise self.option_error(
                "delta", f"OPTIONS(delta = {text}) differs from the δ given ({given})", "delta"
            )
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


def _no_keys(name: str, kind: str) -> str:
    """Why GROUP BY refuses a column without declared keys, and what to add."""
    if kind not in DATA_KEY_TYPES:
        return (
            f"GROUP BY {name!r}: the column has no declared keys or bins, and a {kind} column "
            "needs them"
        )
    return (
        f"GROUP BY {name!r}: the column has no declared keys or bins, so its groups would come "
        "from the data: add a δ (--delta 1e-6 or OPTIONS(delta = 1e-6)) to choose them privately "
        "(docs/sql.md, 'Groups from the data')"
    )
