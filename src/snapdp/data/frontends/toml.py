"""TOML front end: plan files and declaration files as workloads (docs/plans.md, docs/sql.md).

A plan file (``[data]``, ``[columns]``, ``[[query]]``) becomes a
:class:`~snapdp.data.model.workload.Workload` (:func:`load_workload`) or the planner's
:class:`~snapdp.data.planner.plan.Plan` (:func:`load_plan`, which keeps the file's key positions
so that the planner's later errors still name the line); a declaration file (``[data]`` and
``[columns]`` only) becomes a :class:`~snapdp.data.model.workload.Declaration`
(:func:`load_declaration`, for ``snapdp sql``). A query is written with keys (``statistic``,
``column``, ``by``, …, and ``where = "SQL condition"``) or as ``sql = "SELECT …"``, which the SQL
front end turns into one query per aggregate. Every error names the file, the line and the key;
the keys and their aliases come from the one table of names (:mod:`.names`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

from msgspec.structs import replace

from snapdp._validation import SIZE_RULE, NumberSizeError, check_epsilon, check_number_size
from snapdp.data.frontends._toml import KeyLocator, load_toml, parse_toml
from snapdp.data.model.names import Path_, PlanFileError, located, toml_keys
from snapdp.data.model.query import STATISTICS, Query
from snapdp.data.model.schema import Column, ContributionBounds, CsvOptions, NullRule, Schema
from snapdp.data.model.workload import (
    DEFAULT_CONFIDENCE,
    Declaration,
    PlannedQuery,
    Workload,
    check_delta,
    check_mode,
)
from snapdp.data.planner.plan import Plan
from snapdp.errors import ParameterError, did_you_mean

__all__ = ["load_declaration", "load_plan", "load_workload", "loads_workload"]

_DATA_KEYS: Mapping[str, tuple[str, ...]] = toml_keys("data")
_COLUMN_KEYS: Mapping[str, tuple[str, ...]] = toml_keys("columns")
_QUERY_KEYS: Mapping[str, tuple[str, ...]] = toml_keys("query", sql=True)
_SQL_KEYS = ("sql", "where")


class _Loader:
    """Turns the parsed TOML into a :class:`Plan` (or a :class:`Declaration`), naming file, line
    and key on every error."""

    def __init__(self, path: Path, data: dict[str, Any], locator: KeyLocator) -> None:
        self.path = path
        self.data = data
        self.locator = locator
        self.sizes((), data)

    def sizes(self, key: Path_, value: object) -> None:
        """Refuse any number of the file beyond the size limits (docs/data.md, "Numbers")
        before one is used: a bound of ``1e10000000`` would otherwise take minutes to expand."""
        if isinstance(value, dict):
            for k, v in value.items():
                self.sizes((*key, k), v)
        elif isinstance(value, list):  # an array of tables by index, a list of numbers as one
            for i, v in enumerate(value):
                self.sizes((*key, i) if isinstance(v, dict) else key, v)
        else:
            try:
                check_number_size(str(key[-1]) if key else "plan", value)
            except NumberSizeError as exc:
                message = f"must be a number of {SIZE_RULE}, not {exc.shown}"
                raise self.error(key, message, exc.parameter) from None

    def error(self, key: Path_, message: str, parameter: str | None = None) -> PlanFileError:
        return located(self.path, self.locator, key, message, parameter)

    def table(self, key: Path_, value: object) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.error(key, f"must be a table, not {_kind(value)}")
        return value

    def canonical(
        self, key: Path_, table: dict[str, Any], known: Mapping[str, tuple[str, ...]]
    ) -> dict[str, tuple[Any, Path_]]:
        """The table's entries under their canonical names, with each one's own key path."""
        alias = {a: name for name, aliases in known.items() for a in (name, *aliases)}
        out: dict[str, tuple[Any, Path_]] = {}
        for k, v in table.items():
            if k not in alias:
                hint = did_you_mean(k, alias)
                raise self.error(
                    (*key, k), f"unknown key {k!r}{hint} (known: {', '.join(known)})", parameter=k
                )
            name = alias[k]
            if name in out:
                raise self.error((*key, k), f"{k!r} repeats {name!r} (an alias)", parameter=k)
            out[name] = (v, (*key, k))
        return out

    def plan(self, plan_class: type[Plan] = Plan) -> Plan:
        for k in self.data:
            if k not in ("data", "columns", "query"):
                raise self.error(
                    (k,), f"unknown table {k!r}; a plan has [data], [columns] and [[query]]"
                )
        if "data" not in self.data:
            raise self.error((), "the plan has no [data] table (the source and the budget)")
        data = self.canonical(("data",), self.table(("data",), self.data["data"]), _DATA_KEYS)
        columns = self.columns()
        schema = self.schema(data, columns)
        if "query" not in self.data:
            raise self.error((), "the plan has no [[query]]")
        raw_queries = self.data["query"]
        if not isinstance(raw_queries, list):
            raise self.error(("query",), "must be an array of tables: write [[query]]")
        conf_default = DEFAULT_CONFIDENCE
        if "confidence" in data:
            conf_default = self.number(data["confidence"], float)
        size_default: int | None = None  # the planner's default
        if "group_size" in data:
            size_default = self.integer(data["group_size"])
        self.delta_default = self.delta(data)
        queries = [
            pq
            for i, q in enumerate(raw_queries)
            for pq in self.queries_of(i, q, conf_default, size_default)
        ]
        total = None
        if "total_epsilon" in data:
            value, key = data["total_epsilon"]
            total = self.wrap(key, lambda: check_epsilon("total_epsilon", value))
        source: object = None
        if "source" in data:
            value, key = data["source"]
            if not isinstance(value, str) or not value:
                raise self.error(key, f"must be a path (a string), not {_kind(value)}")
            source = value
        else:
            raise self.error(("data",), "[data] needs a `source` (a path relative to the plan)")
        consistent = self.consistent(data)
        plan: Plan = self.wrap(
            ("query",),
            lambda: plan_class(
                schema,
                queries,
                source=source,
                total_epsilon=total,
                base=self.path.parent,
                path=self.path,
                consistent=consistent,
                _locator=self.locator,
            ),
        )
        return plan

    def delta(self, entries: dict[str, tuple[Any, Path_]]) -> Fraction | None:
        """``delta`` of [data] or of a query (docs/plans.md, `delta`): δ in (0, 1), exact."""
        if "delta" not in entries:
            return None
        value, key = entries["delta"]
        text = value if isinstance(value, str) else str(self.number((value, key), str))
        d: Fraction = self.wrap(key, lambda: check_delta("delta", text))
        return d

    def consistent(self, data: dict[str, tuple[Any, Path_]]) -> bool | str:
        """``[data] consistent``: false, true or a mode (docs/data.md, "Tables that add up")."""
        if "consistent" not in data:
            return False
        value, key = data["consistent"]
        self.wrap(key, lambda: check_mode(value))
        mode: bool | str = value
        return mode

    def declaration(self) -> Declaration:
        for k in self.data:
            if k not in ("data", "columns", "query"):
                raise self.error((k,), f"unknown table {k!r}; a declaration has [data], [columns]")
        raw = self.data.get("data", {})
        data = self.canonical(("data",), self.table(("data",), raw), _DATA_KEYS)
        schema = self.schema(data, self.columns())
        kw: dict[str, Any] = {}
        if "total_epsilon" in data:
            value, key = data["total_epsilon"]
            kw["total_epsilon"] = self.wrap(key, lambda: check_epsilon("total_epsilon", value))
        if "confidence" in data:
            kw["confidence"] = self.number(data["confidence"], float)
        if "group_size" in data:
            kw["group_size"] = self.integer(data["group_size"])
        if "dataset" in data:
            value, key = data["dataset"]
            if not isinstance(value, str) or not value:
                raise self.error(key, "must be a name (a string)", "dataset")
            kw["dataset"] = value
        if "source" in data:
            value, key = data["source"]
            if not isinstance(value, str) or not value:
                raise self.error(key, "must be a path (a string)", "source")
            kw["source"] = value
        kw["consistent"] = self.consistent(data)
        kw["delta"] = self.delta(data)
        decl: Declaration = self.wrap(
            ("data",), lambda: Declaration(schema, base=self.path.parent, **kw)
        )
        return decl

    def queries_of(self, i: int, raw: object, conf: float, size: int | None) -> list[PlannedQuery]:
        """One entry's planned queries: an ``sql`` entry gives one per aggregate."""
        if not isinstance(raw, dict) or not any(k in raw for k in _SQL_KEYS):
            return [self.query(i, raw, conf, size)]
        from snapdp.data.frontends.sql import parse_predicate, parse_sql

        key: Path_ = ("query", i)
        decl = replace(self.declaration(), confidence=conf, group_size=size)
        if "sql" in raw:
            extra = [
                k
                for k in raw
                if k not in ("sql", "epsilon", "accuracy", "target", "weight", "delta")
            ]
            if extra:
                raise self.error(
                    (*key, extra[0]),
                    "an `sql` query takes only `epsilon`, `accuracy` or `weight` beside it",
                    extra[0],
                )
            how = {k: Fraction(self.number((raw[k], (*key, k)), str)) for k in
                   ("epsilon", "accuracy", "weight") if k in raw}  # fmt: skip
            if "target" in raw:
                how["accuracy"] = Fraction(self.number((raw["target"], (*key, "target")), str))
            text = raw["sql"]
            if not isinstance(text, str):
                raise self.error((*key, "sql"), "must be a SELECT (a string)", "sql")
            try:
                delta = (
                    self.delta({"delta": (raw["delta"], (*key, "delta"))})
                    if "delta" in raw
                    else None
                )
                parsed = parse_sql(text, decl, delta=delta, **how)
            except ParameterError as exc:
                raise self.error((*key, "sql"), str(exc), exc.parameter) from None
            if parsed.post.having is not None or parsed.post.order:
                raise self.error(
                    (*key, "sql"), "HAVING and ORDER BY are for `snapdp sql`, not plan files", "sql"
                )
            if parsed.workload.schema != decl.schema:
                raise self.error(
                    (*key, "sql"),
                    "a plan's SQL cannot change the declaration (OPTIONS, CLAMP): declare it in "
                    "[data] and [columns]",
                    "sql",
                )
            return list(parsed.workload.queries)
        rest = {k: v for k, v in raw.items() if k != "where"}
        text = raw["where"]
        if not isinstance(text, str):
            raise self.error((*key, "where"), "must be a SQL condition (a string)", "where")
        try:
            predicate = parse_predicate(text, decl)
        except ParameterError as exc:
            raise self.error((*key, "where"), str(exc), "where") from None
        return [
            replace(pq, query=replace(pq.query, where=predicate))
            for pq in [self.query(i, rest, conf, size)]
        ]

    def wrap(self, key: Path_, build: Callable[[], Any]) -> Any:
        try:
            return build()
        except PlanFileError:
            raise
        except ParameterError as exc:
            raise self.error(key, str(exc), exc.parameter) from None

    def number(self, entry: tuple[Any, Path_], kind: type) -> Any:
        value, key = entry
        if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
            raise self.error(key, f"must be a number, not {_kind(value)}")
        return kind(value)

    def integer(self, entry: tuple[Any, Path_]) -> int:
        value, key = entry
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise self.error(key, f"must be an integer >= 1, not {value!r}")
        return value

    def columns(self) -> list[Column]:
        raw = self.data.get("columns")
        if raw is None:
            return []
        table = self.table(("columns",), raw)
        out = []
        for name, spec in table.items():
            key: Path_ = ("columns", name)
            if isinstance(spec, str):
                spec = {"type": spec}
            entries = self.canonical(key, self.table(key, spec), _COLUMN_KEYS)
            if "type" not in entries:
                raise self.error(key, f"column {name!r} needs a `type`", "type")
            kw: dict[str, Any] = {k: v for k, (v, _) in entries.items() if k != "nulls"}
            for k in ("keys", "bins"):
                if k in kw:
                    if not isinstance(kw[k], list):
                        raise self.error(entries[k][1], f"must be a list, not {_kind(kw[k])}", k)
                    kw[k] = tuple(kw[k])
            if "nulls" in entries:
                v, _ = entries["nulls"]
                kw["nulls"] = NullRule() if v == "drop" else NullRule("impute", v)

            def build(name: str = name, kw: dict[str, Any] = kw) -> Column:
                return Column(name, **kw)

            try:
                out.append(build())
            except ParameterError as exc:
                sub = entries.get(exc.parameter or "", (None, key))[1]
                raise self.error(sub, str(exc), exc.parameter) from None
        return out

    def schema(self, data: dict[str, tuple[Any, Path_]], columns: list[Column]) -> Schema:
        bounds: dict[str, Any] = {}
        for k in ("max_rows_per_unit", "max_groups_per_unit", "max_rows_per_group"):
            if k in data:
                bounds[k] = self.integer(data[k])
        kw: dict[str, Any] = {}
        if "privacy_unit" in data:
            v, key = data["privacy_unit"]
            if not isinstance(v, str) or not v:
                raise self.error(key, f"must be a column name, not {_kind(v)}", "privacy_unit")
            kw["privacy_unit"] = v
        for k in ("max_rows", "rows"):
            if k in data:
                kw[k] = self.integer(data[k])
        if "null_units" in data:
            kw["null_units"] = data["null_units"][0]
        csv_keys = ("encoding", "delimiter", "header", "column_names", "max_line_bytes")
        csv: dict[str, Any] = {k: data[k][0] for k in csv_keys if k in data}
        if isinstance(csv.get("column_names"), list):
            csv["column_names"] = tuple(csv["column_names"])
        try:
            opts = CsvOptions(**csv)
        except (ParameterError, TypeError) as exc:
            parameter = getattr(exc, "parameter", None) or "delimiter"
            key = data.get(parameter, (None, ("data",)))[1]
            raise self.error(key, str(exc), parameter) from None
        if bounds and "privacy_unit" not in kw:
            first = next(iter(bounds))
            raise self.error(
                data[first][1],
                "contribution bounds need a `privacy_unit` column (without one, each row is a "
                "unit)",
                "privacy_unit",
            )
        try:
            return Schema(tuple(columns), bounds=ContributionBounds(**bounds), csv=opts, **kw)
        except ParameterError as exc:
            key = data.get(exc.parameter or "", (None, ("data",)))[1]
            raise self.error(key, str(exc), exc.parameter) from None

    def query(self, i: int, raw: object, conf: float, size: int | None) -> PlannedQuery:
        key: Path_ = ("query", i)
        entries = self.canonical(key, self.table(key, raw), _QUERY_KEYS)
        if "statistic" not in entries:
            raise self.error(key, f"a query needs a `statistic` ({', '.join(STATISTICS)})")
        kw: dict[str, Any] = {}
        for k in ("statistic", "column", "method", "name", "grid_counts"):
            if k in entries:
                kw[k] = entries[k][0]
        if "by" in entries:
            by, bkey = entries["by"]
            by = [by] if isinstance(by, str) else by
            if not isinstance(by, list) or not all(isinstance(b, str) for b in by):
                raise self.error(bkey, "must be a column name or a list of them", "by")
            kw["by"] = tuple(by)
        if "bins" in entries:
            bins, bkey = entries["bins"]
            if isinstance(bins, list):
                by = kw.get("by", ())
                if len(by) != 1:
                    raise self.error(
                        bkey,
                        "a list of edges needs exactly one `by` column; with several, write "
                        "bins = { column = [edges] }",
                        "bins",
                    )
                bins = {by[0]: bins}
            if not isinstance(bins, dict) or not all(isinstance(e, list) for e in bins.values()):
                raise self.error(bkey, "must be a list of edges or a table of them", "bins")
            kw["bins"] = tuple((c, tuple(self.edges(bkey, c, e))) for c, e in bins.items())
        if "quantiles" in entries:
            qs, qkey = entries["quantiles"]
            if not isinstance(qs, list) or not all(
                isinstance(x, (int, Decimal)) and not isinstance(x, bool) for x in qs
            ):
                raise self.error(qkey, "must be a list of probabilities", "quantiles")
            kw["quantiles"] = tuple(Fraction(x) for x in qs)
        if "resolution" in entries:
            kw["resolution"] = Fraction(self.number(entries["resolution"], Decimal))
        query = self.build_query(key, entries, kw)
        how: dict[str, Any] = {}
        for k in ("epsilon", "accuracy", "weight"):
            if k == "epsilon" and k in entries and isinstance(entries[k][0], str):  # "1/3"
                text, ekey = entries[k]
                how[k] = self.wrap(ekey, functools.partial(check_epsilon, "epsilon", text))
            elif k in entries:
                how[k] = Fraction(self.number(entries[k], Decimal))
        if len(how) != 1:
            raise self.error(
                key,
                "a query gives exactly one of `epsilon`, `accuracy` and `weight`, not "
                + (", ".join(how) or "none"),
                "epsilon",
            )
        if "confidence" in entries:
            conf = self.number(entries["confidence"], float)
        if "group_size" in entries:
            size = self.integer(entries["group_size"])
        delta = self.delta(entries)
        if delta is None:
            delta = getattr(self, "delta_default", None)
        try:
            sized: dict[str, Any] = {} if size is None else {"group_size": size}
            return PlannedQuery(query, confidence=conf, delta=delta, **sized, **how)
        except ParameterError as exc:
            sub = entries.get(exc.parameter or "", (None, key))[1]
            raise self.error(sub, str(exc), exc.parameter) from None

    def edges(self, key: Path_, column: str, edges: list[Any]) -> list[Fraction]:
        if not all(isinstance(e, (int, Decimal)) and not isinstance(e, bool) for e in edges):
            raise self.error(key, f"bins of {column!r} must be numbers", "bins")
        return [Fraction(e) for e in edges]

    def build_query(
        self, key: Path_, entries: dict[str, tuple[Any, Path_]], kw: dict[str, Any]
    ) -> Query:
        try:
            return Query(**kw)
        except ParameterError as exc:
            sub = entries.get(exc.parameter or "", (None, key))[1]
            raise self.error(sub, str(exc), exc.parameter) from None
        except TypeError as exc:
            raise self.error(key, f"invalid query: {exc}") from None


def _kind(value: object) -> str:
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "a list"
    return repr(value)


def load_declaration(path: str | Path) -> Declaration:
    """A declaration file: a plan file's ``[data]`` and ``[columns]`` (queries are ignored)."""
    p = Path(path)
    data, locator = load_toml(p)
    data = {k: v for k, v in data.items() if k != "query"}
    return _Loader(p, data, locator).declaration()


def load_plan(path: str | Path, plan_class: type[Plan] = Plan) -> Plan:
    """A plan file as the planner's :class:`~snapdp.data.planner.plan.Plan` (SQL keys included);
    ``plan_class``: a subclass to build instead (:class:`snapdp.data.Plan`)."""
    p = Path(path)
    data, locator = load_toml(p)
    return _Loader(p, data, locator).plan(plan_class)


def load_workload(path: str | Path) -> Workload:
    """A plan file as a :class:`~snapdp.data.model.workload.Workload`."""
    p = Path(path)
    data, locator = load_toml(p)
    return _workload(p, data, locator)


def loads_workload(text: str, name: Path, source: str | None = None) -> Workload:
    """The text of a plan file as a :class:`~snapdp.data.model.workload.Workload`; errors name
    ``name`` (what the text is called; relative sources resolve against its folder) and the
    line. ``source``: one that replaces the text's own (the page's, fixed on its command line)."""
    data, locator = parse_toml(text, name)
    if source is not None and isinstance(data.get("data"), dict):
        for alias in ("source", "path", "file"):
            data["data"].pop(alias, None)
        data["data"] = {"source": source, **data["data"]}
    return _workload(name, data, locator)


def _workload(p: Path, data: dict[str, Any], locator: KeyLocator) -> Workload:
    loader = _Loader(p, data, locator)
    plan = loader.plan()
    dataset = data.get("data", {}).get("dataset") or data.get("data", {}).get("name")
    workload = plan.to_workload(dataset if isinstance(dataset, str) else None)
    confidence = plan.queries[0].confidence if plan.queries else DEFAULT_CONFIDENCE
    return replace(workload, declaration=replace(workload.declaration, confidence=confidence))
