"""The page's JSON as a workload, and the planner's answer as JSON (docs/ui.md, "What the page
sends").

:func:`workload_from_document` is the page's front end: it builds the
:class:`~snapdp.data.model.workload.Workload` straight from the page's document (see
:mod:`snapdp.ui._document`) with the model's own constructors and checks — the ones the TOML
front end calls for ``snapdp plan`` — and keeps an :class:`Origins` map from each key of the
workload (``("columns", "age", "lower")``, ``("query", 1, "by")``) to the page's field
(``columns[0].lower``, ``query[2].by``). Every refusal, its own or the planner's (a
:class:`~snapdp.data.model.names.KeyedError` carries its key), is a :class:`FieldError` placed on
that field. No file is written and nothing reads the data source.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any, TypeVar

from msgspec.structs import replace

from snapdp._rational import format_rational, shown_number
from snapdp._validation import check_epsilon
from snapdp.data.api import Plan
from snapdp.data.model.codec import workload_to_dict
from snapdp.data.model.names import KeyedError, Path_
from snapdp.data.model.observed import DATA_KEY_TYPES, undeclared
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
from snapdp.data.output.notes_plain import plain_notes
from snapdp.data.planner.preview import PlanPreview, usefulness_flags
from snapdp.errors import ParameterError
from snapdp.ui._document import (
    DATA_FIELDS,
    HOW,
    INTEGER_FIELDS,
    QUERY_FIELDS,
    TEXT_FIELDS,
    FieldError,
    check_shape,
    integer,
    items,
    number,
)

__all__ = [
    "NO_SOURCE",
    "Origins",
    "digest",
    "load_plan",
    "plan_and_preview",
    "preview",
    "preview_json",
    "results_json",
    "workload_from_document",
]

#: The source of a workload when the command line gave none (never opened).
NO_SOURCE = "(no source: start snapdp ui with --source)"
_T = TypeVar("_T")


def typed_data(raw: Mapping[str, str], keys: Iterable[str]) -> dict[str, object]:
    """The page's ``[data]`` fields ``keys`` of ``raw`` as typed: text as typed ("" is absent; a
    tab is a delimiter), flags as booleans, column names as a tuple, numbers exactly (a number
    as a Decimal, an integer as an int); an empty field is absent."""
    out: dict[str, object] = {}
    for k in keys:
        text = raw[k]
        if k in TEXT_FIELDS:
            if text != "":
                out[k] = text
        elif not text.strip():
            continue
        elif k in ("header", "consistent"):  # a mode of `consistent` stays text
            out[k] = {"true": True, "false": False}.get(text.strip().lower(), text.strip())
        elif k == "column_names":
            out[k] = tuple(items(text, f"data.{k}"))
        else:
            out[k] = (integer if k in INTEGER_FIELDS else number)(text, f"data.{k}")
    return out


class Origins:
    """Where each key of a workload came from on the page: key path → the page's field."""

    def __init__(self) -> None:
        self._fields: dict[Path_, str] = {}

    def add(self, key: Path_, field: str) -> None:
        """``key`` came from ``field`` (the first one given wins)."""
        self._fields.setdefault(key, field)

    def field(self, key: Path_, parameter: str | None) -> str | None:
        """The page's field of ``key`` (or of its nearest parent that has one), refined by the
        rule's ``parameter`` where a whole query or column was named (its ε field, its bound)."""
        for end in range(len(key), 0, -1):
            found = self._fields.get(key[:end])
            if found is None:
                continue
            if end == 2 and key[0] == "query" and parameter in HOW:
                return self._fields.get((*key[:2], "value"), found)
            if end == 2 and key[0] == "columns" and parameter in ("lower", "upper", "keys", "bins"):
                return self._fields.get((*key[:2], parameter), found)
            return found
        if parameter in DATA_FIELDS:  # a rule of the plan as a whole, by its parameter
            return f"data.{parameter}"
        return None

    def error(self, key: Path_, message: str, parameter: str | None) -> FieldError:
        """``message`` as a FieldError on the field of ``key``."""
        return FieldError(message, field=self.field(key, parameter), parameter=parameter)

    def placed(self, exc: ParameterError, key: Path_ = ()) -> FieldError:
        """A refusal placed by its own key (a :class:`KeyedError`), else by ``key``."""
        if isinstance(exc, FieldError):
            return exc
        where = exc.key if isinstance(exc, KeyedError) and exc.key else key
        return self.error(where, str(exc), exc.parameter)


# -- the page's document -> a workload --------------------------------------------------------
class _Builder:
    """Builds the workload of one checked document, recording every key's field."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.origins = Origins()
        for k in DATA_FIELDS:
            self.origins.add(("data", k), f"data.{k}")

    def guard(self, key: Path_, build: Callable[[], _T]) -> _T:
        try:
            return build()
        except ParameterError as exc:
            raise self.origins.placed(exc, key) from None

    def data(self) -> dict[str, object]:
        """``[data]``'s values as typed (a number as a Decimal, an integer as an int); an
        empty field is absent."""
        return typed_data(self.doc["data"], self.doc["data"])

    def count(self, key: Path_, value: object, text: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise self.origins.error(
                key, f"must be an integer >= 1, not {text.strip()}", str(key[-1])
            )
        return value

    def a_number(self, key: Path_, value: object) -> Decimal | int:
        if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
            raise self.origins.error(
                key, f"must be a number, not {shown_number(value)}", str(key[-1])
            )
        return value

    def schema(self, data: dict[str, object]) -> Schema:
        raw = self.doc["data"]
        bounds = {
            k: self.count(("data", k), data[k], raw[k])
            for k in ("max_rows_per_unit", "max_groups_per_unit", "max_rows_per_group")
            if k in data
        }
        kw: dict[str, Any] = {k: self.count(("data", k), data[k], raw[k])
                              for k in ("max_rows", "rows") if k in data}  # fmt: skip
        for k in ("privacy_unit", "null_units"):
            if k in data:
                kw[k] = data[k]
        csv_keys = ("encoding", "delimiter", "header", "column_names", "max_line_bytes")
        csv: dict[str, Any] = {k: data[k] for k in csv_keys if k in data}
        opts = self.guard(("data", "delimiter"), lambda: CsvOptions(**csv))
        if bounds and "privacy_unit" not in kw:
            raise self.origins.error(
                ("data", next(iter(bounds))),
                "contribution bounds need a `privacy_unit` column (without one, each row is a "
                "unit)",
                "privacy_unit",
            )
        columns = self.columns()
        return self.guard(
            ("data",),
            lambda: Schema(columns, bounds=ContributionBounds(**bounds), csv=opts, **kw),
        )

    def columns(self) -> tuple[Column, ...]:
        out: dict[str, Column] = {}
        for i, c in enumerate(self.doc["columns"]):
            name = c["name"]
            if name == "":
                if any(v.strip() for k, v in c.items() if k != "type"):
                    raise FieldError(
                        "a column needs a name", field=f"columns[{i}].name", parameter="name"
                    )
                continue
            if name in out:
                raise FieldError(
                    f"column {name!r} is declared twice",
                    field=f"columns[{i}].name",
                    parameter="name",
                )
            key: Path_ = ("columns", name)
            self.origins.add(key, f"columns[{i}].name")
            for k in c:
                self.origins.add((*key, k), f"columns[{i}].{k}")
            out[name] = self.column(i, key, c)
        return tuple(out.values())

    def column(self, i: int, key: Path_, c: dict[str, str]) -> Column:
        kind = c["type"].strip()
        if not kind:
            raise self.origins.error(key, f"column {key[1]!r} needs a `type`", "type")
        kw: dict[str, Any] = {"type": kind}
        read = integer if kind == "integer" else number
        for k in ("lower", "upper"):
            if c[k].strip():
                kw[k] = read(c[k], f"columns[{i}].{k}")
        if c["keys"].strip():
            field = f"columns[{i}].keys"
            kw["keys"] = tuple(_key_value(kind, v, field) for v in items(c["keys"], field))
        if c["bins"].strip():
            field = f"columns[{i}].bins"
            edges = [number(v, field) for v in items(c["bins"], field)]
            kw["bins"] = tuple(self.edges((*key, "bins"), str(key[1]), edges))
        if c["nulls"].strip():
            v = c["nulls"]
            rule: Any = (
                "drop" if v.strip() == "drop" else _key_value(kind, v, f"columns[{i}].nulls")
            )
            kw["nulls"] = NullRule() if rule == "drop" else NullRule("impute", rule)

        def build() -> Column:
            return Column(str(key[1]), **kw)

        try:
            return build()
        except ParameterError as exc:
            sub = (*key, exc.parameter) if exc.parameter in kw else key
            raise self.origins.error(sub, str(exc), exc.parameter) from None

    def edges(self, key: Path_, column: str, edges: list[object]) -> list[Fraction]:
        return self.fractions(key, edges, f"bins of {column!r} must be numbers")

    def fractions(self, key: Path_, values: list[object], message: str) -> list[Fraction]:
        out = [Fraction(v) for v in values if isinstance(v, Decimal)]
        if len(out) != len(values):
            raise self.origins.error(key, message, str(key[-1]))
        return out

    def queries(self, decl: Declaration, size: int | None) -> list[PlannedQuery]:
        return [self.query(i, q, decl, size) for i, q in enumerate(self.doc["queries"])]

    def query(self, i: int, q: dict[str, str], decl: Declaration, size: int | None) -> PlannedQuery:
        key: Path_ = ("query", i)
        self.origins.add(key, f"query[{i + 1}].statistic")
        for k in QUERY_FIELDS:
            self.origins.add((*key, k), f"query[{i + 1}].{k}")
        for k in HOW:
            self.origins.add((*key, k), f"query[{i + 1}].value")
        if not q["statistic"].strip():
            raise self.origins.error(key, f"a query needs a `statistic` ({', '.join(STATISTICS)})",
                                     "statistic")  # fmt: skip
        kw: dict[str, Any] = {"statistic": q["statistic"].strip()}
        for k in ("name", "column", "method"):
            if q[k] != "":
                kw[k] = q[k]
        where = f"query[{i + 1}]."
        if q["by"].strip():
            kw["by"] = tuple(items(q["by"], where + "by"))
        if q["bins"].strip():
            kw["bins"] = self.bins(key, q["bins"], kw.get("by", ()))
        if q["quantiles"].strip():
            field = where + "quantiles"
            qs = [number(v, field) for v in items(q["quantiles"], field)]
            message = "must be a list of probabilities"
            kw["quantiles"] = tuple(self.fractions((*key, "quantiles"), qs, message))
        if q["resolution"].strip():
            res = self.a_number((*key, "resolution"), number(q["resolution"], where + "resolution"))
            kw["resolution"] = Fraction(res)
        if q["where"].strip():
            kw["where"] = self.where(key, q["where"], decl)
        if q["grid_counts"].strip() not in ("", "false"):
            kw["grid_counts"] = q["grid_counts"].strip() == "true" or q["grid_counts"]
        query = self.build_query(key, kw)
        self.needs_delta(i, query, decl)
        how = q["how"].strip()
        if not q["value"].strip():
            raise self.origins.error(
                key, "a query gives exactly one of `epsilon`, `accuracy` and `weight`, not none",
                "epsilon",
            )  # fmt: skip
        if how not in HOW:
            raise FieldError(f"`how` must be one of {', '.join(HOW)}, not {how!r}",
                             field=where + "how", parameter="how")  # fmt: skip
        value = Fraction(self.a_number((*key, how), number(q["value"], where + "value")))
        if q["group_size"].strip():
            own = integer(q["group_size"], where + "group_size")
            size = self.count((*key, "group_size"), own, q["group_size"])
        kw = {how: value} if size is None else {how: value, "group_size": size}
        return self.guard(
            key, lambda: PlannedQuery(query, confidence=decl.confidence, delta=decl.delta, **kw)
        )

    def needs_delta(self, i: int, query: Query, decl: Declaration) -> None:
        """Without a δ, a query grouping by a column without declared keys is refused on the
        page's δ field, which then shows (docs/ui.md, "Groups from the data")."""
        names = undeclared(query, decl.schema)
        if decl.delta is not None or not names:
            return
        if decl.schema.column(names[0]).type not in DATA_KEY_TYPES:
            return  # refused by the release's own rule: it needs declared keys or bins
        raise FieldError(
            f"query {i + 1} groups by `{names[0]}`, which has no declared keys: its groups would "
            "come from the data; give δ (such as 1e-6) to choose them privately, or declare its "
            'keys or bins (docs/ui.md, "Groups from the data")',
            field="data.delta",
            parameter="delta",
        )

    def bins(self, key: Path_, text: str, by: tuple[str, ...]) -> tuple[Any, ...]:
        """A query's bins: edges for its one ``by`` column, or ``column: edges; column: edges``
        for some of several."""
        field = self.origins.field((*key, "bins"), "bins") or "bins"
        if ":" not in text:
            if len(by) != 1:
                raise self.origins.error(
                    (*key, "bins"),
                    "a list of edges needs exactly one `by` column; with several, write "
                    "`column: edges; column: edges`",
                    "bins",
                )
            parts = [(by[0], text)]
        else:
            parts = [tuple(p.split(":", 1)) for p in text.split(";") if p.strip()]  # type: ignore[misc]
        out = []
        for column, edges_text in parts:
            edges = [number(v, field) for v in items(edges_text, field)]
            out.append((column.strip(), tuple(self.edges((*key, "bins"), column.strip(), edges))))
        return tuple(out)

    def where(self, key: Path_, text: str, decl: Declaration) -> Any:
        from snapdp.data.frontends.sql import parse_predicate

        return self.guard((*key, "where"), lambda: parse_predicate(text, decl))

    def build_query(self, key: Path_, kw: dict[str, Any]) -> Query:
        try:
            return Query(**kw)
        except ParameterError as exc:
            sub = (*key, exc.parameter) if exc.parameter in kw else key
            raise self.origins.error(sub, str(exc), exc.parameter) from None

    def workload(self, source: str, base: Path) -> Workload:
        data = self.data()
        schema = self.schema(data)
        raw = self.doc["data"]
        total = None
        if "total_epsilon" in data:
            budget = data["total_epsilon"]
            total = self.guard(
                ("data", "total_epsilon"), lambda: check_epsilon("total_epsilon", budget)
            )
        confidence: float = DEFAULT_CONFIDENCE
        if "confidence" in data:
            confidence = float(self.a_number(("data", "confidence"), data["confidence"]))
        size = None
        if "group_size" in data:
            size = self.count(("data", "group_size"), data["group_size"], raw["group_size"])
        consistent: Any = data.get("consistent", False)
        self.guard(("data", "consistent"), lambda: check_mode(consistent))
        dataset = data.get("dataset")
        delta = None
        if "delta" in data:  # groups from the data: the δ of every query (docs/sql.md)
            self.origins.add(("data", "delta"), "data.delta")
            delta = self.guard(("data", "delta"), lambda: check_delta("delta", data["delta"]))
        decl = self.guard(("data",), lambda: Declaration(
            schema, source, total, confidence, None, dataset if isinstance(dataset, str) else None,
            base, consistent, delta))  # fmt: skip
        queries = self.queries(replace(decl, group_size=size), size)
        sizes = {pq.group_size for pq in queries}
        common = next(iter(sizes)) if len(sizes) == 1 else None
        decl = replace(decl, group_size=common)
        return self.guard(("query",), lambda: Workload(decl, tuple(queries)))


def _key_value(kind: str, text: str, field: str) -> object:
    if kind in ("integer", "decimal"):
        return integer(text, field) if kind == "integer" else number(text, field)
    if kind == "boolean" and text.lower() in ("true", "false"):
        return text.lower() == "true"
    return text


def workload_from_document(doc: object, source: str | None, base: Path) -> tuple[Workload, Origins]:
    """The workload of the page's document (``source`` fixed by the command line; relative
    paths resolve against ``base``) and its origin map; a :class:`FieldError` on the field of
    the first broken rule."""
    builder = _Builder(check_shape(doc))
    return builder.workload(source or NO_SOURCE, base), builder.origins


def load_plan(doc: object, source: str | None, base: Path) -> tuple[Plan, Origins]:
    """The planner's view of the page's document, with its origin map: every check of
    ``snapdp plan`` but the planning, each refusal a :class:`FieldError` on its field."""
    workload, origins = workload_from_document(doc, source, base)
    try:
        return Plan.from_workload(workload), origins
    except ParameterError as exc:
        raise origins.placed(exc, ("query",)) from None


def preview(plan: Plan, origins: Origins, *, draft: bool = False) -> PlanPreview:
    """``plan.preview()``, its refusals as :class:`FieldError`. ``draft``: the planner's fast
    draft for the page (certificates presumed); a run always plans with the certified one."""
    try:
        return plan.preview(presume_certified=draft)
    except ParameterError as exc:
        raise origins.placed(exc) from None


def plan_and_preview(
    doc: object, source: str | None, base: Path, *, draft: bool = False
) -> tuple[Plan, PlanPreview, str]:
    """The planner's view of the page's workload, its preview (a draft: see :func:`preview`)
    and the digest of the previewed workload (see :func:`digest`); reads no data."""
    workload, origins = workload_from_document(doc, source, base)
    try:
        plan = Plan.from_workload(workload)
    except ParameterError as exc:
        raise origins.placed(exc, ("query",)) from None
    planned = preview(plan, origins, draft=draft)
    return plan, planned, digest(workload, planned)


# -- the planner's answer and the results, for the page ---------------------------------------
def digest(workload: Workload, planned: PlanPreview) -> str:
    """The digest of a previewed workload: its exact JSON form (declaration, source, queries)
    and what it would spend — every query's exact ε and the total."""
    spend = [format_rational(e, max_digits=None) for e in planned.epsilons]
    body = json.dumps(
        [workload_to_dict(workload), spend, format_rational(planned.total, max_digits=None)],
        sort_keys=True,
    )
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def preview_json(plan: Plan, planned: PlanPreview) -> dict[str, Any]:
    """The planner's answer for the page: :meth:`PlanPreview.as_dict` with each query's
    usefulness warnings (``flags``) and, where there are any, the grouping columns whose groups
    come from the data (``from_data``: chosen privately with the plan's δ). Public parameters
    only: no data is read."""
    out = planned.as_dict()
    shown = out.get("queries", [])
    if len(shown) == len(planned.allocations):  # one entry per query, in plan order
        for entry, allocation in zip(shown, planned.allocations, strict=True):
            entry["flags"] = usefulness_flags(plan.schema, allocation)
            observed = undeclared(allocation.planned.query, plan.schema)
            if observed:
                entry["from_data"] = list(observed)
    return out


def results_json(results: Any, schema: Schema) -> list[dict[str, Any]]:
    """The released results (after a run) as the page shows them: each with its notes in
    plain words and, where there are any, the grouping columns whose groups came from the data
    (``from_data``; the result is then (ε, δ)-DP), a function of the plan alone."""
    out = []
    for r in results:
        shown = {**r.as_dict(), "plain_notes": plain_notes(r.notes)}
        observed = undeclared(r.query, schema)
        if observed:
            shown["from_data"] = list(observed)
        out.append(shown)
    return out
