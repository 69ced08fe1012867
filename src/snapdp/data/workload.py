"""The workload: the one object every front end produces (docs/sql.md, "One workload").

CLI flags, TOML plan files, SQL text and the page's JSON each produce a :class:`Workload` and
nothing else; the planner, the statistics compiler, the engines, the ledger and the writers read
only it. A workload is

* a :class:`Declaration`: the public :class:`~snapdp.data.schema.Schema`, the source, the total
  budget (``total_epsilon``), the release's ``confidence``, the reference ``group_size`` of the
  ± of ratio statistics (if declared) and the ``dataset`` name the budget is kept under; and
* a tuple of :class:`~snapdp.data.plan.PlannedQuery`: each a
  :class:`~snapdp.data.query.Query` (statistic, column, groupings, bins, quantiles, row filter)
  with either a fixed ε, a target ± or a weight.

A front end never computes a sensitivity or an ε: :meth:`Workload.plan` hands the workload to the
planner (:class:`~snapdp.data.plan.Plan`). :meth:`Workload.to_dict` / :meth:`Workload.from_dict`
give a JSON form that round-trips exactly (every rational as exact decimal text, or ``p/q``).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from snapdp._validation import NumberSizeError, check_count, check_epsilon, exact_value
from snapdp.data.consistency import check_mode
from snapdp.data.plan import DEFAULT_CONFIDENCE, Plan, PlannedQuery, resolved_source
from snapdp.data.predicate import predicate_from_dict, predicate_to_dict
from snapdp.data.query import Query
from snapdp.data.results import _fraction_text
from snapdp.data.schema import Column, ContributionBounds, CsvOptions, NullRule, Schema
from snapdp.errors import ParameterError

__all__ = ["Declaration", "Workload", "table_name"]

#: The version of the JSON form written by :meth:`Workload.to_dict`.
FORMAT = 1
#: The reference group size a planned query takes when none is declared (the planner's).
_PLANNER_GROUP_SIZE = next(f.default for f in fields(PlannedQuery) if f.name == "group_size")


@dataclass(frozen=True)
class Declaration:
    """What is public about one table and its budget: a plan file's ``[data]`` and ``[columns]``.

    ``source``: a path (relative ones resolve against ``base``) or any data
    :class:`~snapdp.data.release.PrivateTable` accepts. ``total_epsilon``: the budget (None: the
    ledger's, or the workload's total). ``confidence``: of every stated ±. ``group_size``: the
    reference group size of the ± of means, variances and quantiles (None: the planner's
    default). ``dataset``: the name the budget is kept under, and the table's name in SQL.
    """

    schema: Schema = field(default_factory=Schema)
    source: object = None
    total_epsilon: Fraction | None = None
    confidence: float = DEFAULT_CONFIDENCE
    group_size: int | None = None
    dataset: str | None = None
    base: Path | None = None
    consistent: bool | str = False

    def __post_init__(self) -> None:
        if not isinstance(self.schema, Schema):
            raise ParameterError(
                f"`schema` must be a Schema, not {self.schema!r}", parameter="schema"
            )
        if self.total_epsilon is not None:
            object.__setattr__(
                self, "total_epsilon", check_epsilon("total_epsilon", self.total_epsilon)
            )
        c = self.confidence
        if isinstance(c, bool) or not isinstance(c, (int, float, Fraction)) or not 0 < c < 1:
            raise ParameterError(
                f"`confidence` must be a number in (0, 1), not {c!r}", parameter="confidence"
            )
        object.__setattr__(self, "confidence", float(c))
        if self.group_size is not None:
            check_count("group_size", self.group_size)
        check_mode(self.consistent)

    @property
    def table(self) -> str | None:
        """The table's name in SQL: ``dataset``, else the source file's stem (None: no name)."""
        return table_name(self.dataset, self.source)

    def source_path(self) -> object:
        """The source, a relative path resolved against ``base``."""
        return resolved_source(self.source, self.base)

    def planned(
        self,
        query: Query,
        *,
        epsilon: object = None,
        accuracy: object = None,
        weight: object = None,
    ) -> PlannedQuery:
        """``query`` with exactly one of a fixed ε, a target ± or a weight, stated at this
        declaration's confidence and group size."""
        size = {} if self.group_size is None else {"group_size": self.group_size}
        return PlannedQuery(
            query,
            epsilon=None if epsilon is None else exact_value(epsilon, name="epsilon"),
            accuracy=None if accuracy is None else exact_value(accuracy, name="accuracy"),
            weight=None if weight is None else exact_value(weight, name="weight"),
            confidence=self.confidence,
            **size,
        )


def table_name(dataset: str | None, source: object) -> str | None:
    """``dataset``, else the stem of a path ``source`` ("pums" for "data/pums.csv")."""
    if dataset:
        return dataset
    if isinstance(source, (str, Path)) and str(source):
        name = Path(str(source)).name
        for suffix in (".gz", ".zst"):
            name = name.removesuffix(suffix)
        return Path(name).stem or None
    return None


@dataclass(frozen=True)
class Workload:
    """A declaration and its queries, each with a fixed ε, a target ± or a weight."""

    declaration: Declaration
    queries: tuple[PlannedQuery, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.declaration, Declaration):
            raise ParameterError(
                f"`declaration` must be a Declaration, not {self.declaration!r}",
                parameter="declaration",
            )
        object.__setattr__(self, "queries", tuple(self.queries))
        if not self.queries:
            raise ParameterError("a workload needs at least one query", parameter="query")
        for pq in self.queries:
            if not isinstance(pq, PlannedQuery):
                raise ParameterError(
                    f"a workload's queries must be PlannedQuery objects, not {pq!r}",
                    parameter="query",
                )

    # -- the declaration's parts, by their usual names -------------------------------------------
    @property
    def schema(self) -> Schema:
        """The declaration's schema."""
        return self.declaration.schema

    @property
    def source(self) -> object:
        """The declaration's source."""
        return self.declaration.source

    @property
    def total_epsilon(self) -> Fraction | None:
        """The declaration's total budget."""
        return self.declaration.total_epsilon

    @property
    def confidence(self) -> float:
        """The release's confidence."""
        return self.declaration.confidence

    @property
    def dataset(self) -> str | None:
        """The declaration's dataset name."""
        return self.declaration.dataset

    # -- to the planner ----------------------------------------------------------------------
    def plan(self) -> Plan:
        """The planner's view of this workload (:class:`~snapdp.data.plan.Plan`)."""
        d = self.declaration
        return Plan(d.schema, self.queries, source=d.source, total_epsilon=d.total_epsilon,
                    base=d.base, consistent=d.consistent)  # fmt: skip

    @classmethod
    def from_plan(cls, plan: Plan, dataset: str | None = None) -> Workload:
        """The workload a :class:`~snapdp.data.plan.Plan` holds."""
        confidence = plan.queries[0].confidence if plan.queries else DEFAULT_CONFIDENCE
        sizes = {pq.group_size for pq in plan.queries}
        size = next(iter(sizes)) if len(sizes) == 1 else None
        declaration = Declaration(
            plan.schema,
            plan.source,
            plan.total_epsilon,
            confidence,
            None if size == _PLANNER_GROUP_SIZE else size,
            dataset,
            plan.base,
            plan.consistent,
        )
        return cls(declaration, tuple(plan.queries))

    def with_queries(self, queries: Sequence[PlannedQuery]) -> Workload:
        """The same declaration with other queries."""
        return replace(self, queries=tuple(queries))

    # -- JSON --------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (exact rationals as decimal text; see :meth:`from_dict`)."""
        return {
            "format": FORMAT,
            "declaration": declaration_to_dict(self.declaration),
            "queries": [planned_to_dict(pq) for pq in self.queries],
        }

    @classmethod
    def from_dict(cls, data: object) -> Workload:
        """The workload of :meth:`to_dict`'s form; a ParameterError naming the key otherwise."""
        d = _mapping(data, "workload")
        _known(d, ("format", "declaration", "queries"), "workload")
        if d.get("format", FORMAT) != FORMAT:
            raise ParameterError(f"unknown workload format {d.get('format')!r}", parameter="format")
        declaration = declaration_from_dict(d.get("declaration", {}))
        raw = d.get("queries")
        if not isinstance(raw, list):
            raise ParameterError("`queries` must be a list of queries", parameter="queries")
        return cls(declaration, tuple(planned_from_dict(q, declaration) for q in raw))


# -- JSON helpers -------------------------------------------------------------------------------
def _num(x: Fraction | int | None) -> str | None:
    return None if x is None else _fraction_text(Fraction(x))


def _frac(value: object, key: str) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ParameterError(
            f'`{key}` must be an exact number as text (such as "0.5"), not {value!r}',
            parameter=key,
        )
    try:
        return exact_value(value, name=key)
    except NumberSizeError:
        raise
    except ParameterError:
        raise ParameterError(f"`{key}` must be a number, not {value!r}", parameter=key) from None


def _mapping(data: object, key: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise ParameterError(f"`{key}` must be an object, not {data!r}", parameter=key)
    return data


def _known(d: Mapping[str, Any], keys: Sequence[str], where: str) -> None:
    for k in d:
        if k not in keys:
            raise ParameterError(
                f"unknown key {k!r} in {where}; known: {', '.join(keys)}", parameter=str(k)
            )


def _key_json(x: object) -> object:
    if isinstance(x, Fraction):
        return _fraction_text(x)
    if isinstance(x, _dt.date):
        return x.isoformat()
    return x


def _column_to_dict(c: Column) -> dict[str, Any]:
    out: dict[str, Any] = {"type": c.type}
    if c.lower is not None:
        out["lower"], out["upper"] = _num(c.lower), _num(c.upper)
    if c.keys is not None:
        out["keys"] = [_key_json(k) for k in c.keys]
    if c.bins is not None:
        out["bins"] = [_num(e) for e in c.bins]
    if c.nulls.action == "impute":
        out["nulls"] = {"impute": _key_json(c.nulls.value)}
    return out


def _column_from_dict(name: str, data: object) -> Column:
    d = _mapping(data, f"columns.{name}")
    _known(d, ("type", "lower", "upper", "keys", "bins", "nulls"), f"column {name!r}")
    kw: dict[str, Any] = {"type": d.get("type")}
    for k in ("lower", "upper"):
        if d.get(k) is not None:
            kw[k] = _frac(d[k], k)
    if d.get("keys") is not None:
        if not isinstance(d["keys"], list):
            raise ParameterError(f"column {name!r}: `keys` must be a list", parameter="keys")
        kw["keys"] = tuple(d["keys"])  # typed by the column's type (strings parsed)
    if d.get("bins") is not None:
        if not isinstance(d["bins"], list):
            raise ParameterError(f"column {name!r}: `bins` must be a list", parameter="bins")
        kw["bins"] = tuple(_frac(e, "bins") for e in d["bins"])
    nulls = d.get("nulls")
    if nulls is not None:
        n = _mapping(nulls, "nulls")
        _known(n, ("impute",), "nulls")
        kw["nulls"] = NullRule("impute", n.get("impute"))
    column = Column(name, **kw)
    if column.nulls.action == "impute":  # the imputed value typed like a key
        from snapdp.data.schema import typed_key

        value = column.nulls.value
        if column.type == "decimal" and isinstance(value, str):
            value = _frac(value, "nulls")
        column = replace(column, nulls=NullRule("impute", typed_key(column.type, value, name)))
    return column


def schema_to_dict(schema: Schema) -> dict[str, Any]:
    """The schema's JSON form."""
    b = schema.bounds
    return {
        "columns": {c.name: _column_to_dict(c) for c in schema.columns},
        "privacy_unit": schema.privacy_unit,
        "null_units": schema.null_units,
        "max_rows_per_unit": b.max_rows_per_unit,
        "max_groups_per_unit": b.max_groups_per_unit,
        "max_rows_per_group": b.max_rows_per_group,
        "max_rows": schema.max_rows,
        "rows": schema.rows,
        "csv": {
            "encoding": schema.csv.encoding,
            "delimiter": schema.csv.delimiter,
            "header": schema.csv.header,
            "column_names": None
            if schema.csv.column_names is None
            else list(schema.csv.column_names),
            "max_line_bytes": schema.csv.max_line_bytes,
        },
    }


def schema_from_dict(data: object) -> Schema:
    """The inverse of :func:`schema_to_dict` (absent keys take their defaults)."""
    d = _mapping(data, "schema")
    keys = ("columns", "privacy_unit", "null_units", "max_rows_per_unit", "max_groups_per_unit",
            "max_rows_per_group", "max_rows", "rows", "csv")  # fmt: skip
    _known(d, keys, "schema")
    columns = _mapping(d.get("columns", {}), "columns")
    bounds = ContributionBounds(**{k: d[k] for k in keys[3:6] if d.get(k) is not None})
    csv_kw = dict(_mapping(d.get("csv", {}), "csv"))
    if isinstance(csv_kw.get("column_names"), list):
        csv_kw["column_names"] = tuple(csv_kw["column_names"])
    csv = CsvOptions(**csv_kw)
    kw: dict[str, Any] = {k: d[k] for k in ("privacy_unit", "max_rows", "rows") if d.get(k)}
    if d.get("null_units") is not None:
        kw["null_units"] = d["null_units"]
    return Schema(
        tuple(_column_from_dict(str(n), c) for n, c in columns.items()),
        bounds=bounds,
        csv=csv,
        **kw,
    )


def declaration_to_dict(d: Declaration) -> dict[str, Any]:
    """The declaration's JSON form (a source that is not a path is left out)."""
    source = str(d.source) if isinstance(d.source, (str, Path)) else None
    return {
        "schema": schema_to_dict(d.schema),
        "source": source,
        "total_epsilon": _num(d.total_epsilon),
        "confidence": repr(d.confidence),
        "group_size": d.group_size,
        "dataset": d.dataset,
        "base": None if d.base is None else str(d.base),
        "consistent": d.consistent,
    }


def declaration_from_dict(data: object) -> Declaration:
    """The inverse of :func:`declaration_to_dict`."""
    d = _mapping(data, "declaration")
    keys = ("schema", "source", "total_epsilon", "confidence", "group_size", "dataset", "base",
            "consistent")  # fmt: skip
    _known(d, keys, "declaration")
    total = d.get("total_epsilon")
    confidence = d.get("confidence")
    return Declaration(
        schema_from_dict(d.get("schema", {})),
        d.get("source"),
        None if total is None else _frac(total, "total_epsilon"),
        DEFAULT_CONFIDENCE if confidence is None else float(_frac(confidence, "confidence")),
        d.get("group_size"),
        d.get("dataset"),
        None if d.get("base") is None else Path(d["base"]),
        d.get("consistent", False),
    )


def planned_to_dict(pq: PlannedQuery) -> dict[str, Any]:
    """One planned query's JSON form."""
    q = pq.query
    out: dict[str, Any] = {"statistic": q.statistic}
    if q.column is not None:
        out["column"] = q.column
    if q.by:
        out["by"] = list(q.by)
    if q.bins:
        out["bins"] = {c: [_num(e) for e in edges] for c, edges in q.bins}
    if q.quantiles:
        out["quantiles"] = [_num(p) for p in q.quantiles]
    if q.method != "ratio":
        out["method"] = q.method
    if q.name is not None:
        out["name"] = q.name
    if q.resolution is not None:
        out["resolution"] = _num(q.resolution)
    if q.where is not None:
        out["where"] = predicate_to_dict(q.where)
    out[pq.how] = _num(getattr(pq, pq.how))
    out["confidence"] = repr(pq.confidence)
    if pq.group_size is not None:
        out["group_size"] = pq.group_size
    return out


_QUERY_KEYS = ("statistic", "column", "by", "bins", "quantiles", "method", "name", "resolution",
               "where", "epsilon", "accuracy", "weight", "confidence", "group_size")  # fmt: skip


def planned_from_dict(data: object, declaration: Declaration | None = None) -> PlannedQuery:
    """One planned query from its JSON form; confidence and group size default to the
    declaration's."""
    d = _mapping(data, "query")
    _known(d, _QUERY_KEYS, "a query")
    kw: dict[str, Any] = {k: d[k] for k in ("statistic", "column", "method", "name") if k in d}
    if "by" in d:
        by = d["by"]
        kw["by"] = (by,) if isinstance(by, str) else tuple(by)
    if "bins" in d:
        bins = _mapping(d["bins"], "bins")
        kw["bins"] = tuple((c, tuple(_frac(e, "bins") for e in es)) for c, es in bins.items())
    if "quantiles" in d:
        kw["quantiles"] = tuple(_frac(p, "quantiles") for p in d["quantiles"])
    if "resolution" in d:
        kw["resolution"] = _frac(d["resolution"], "resolution")
    if "where" in d:
        kw["where"] = predicate_from_dict(d["where"])
    query = Query(**kw)
    how: dict[str, Any] = {
        k: _frac(d[k], k) for k in ("epsilon", "accuracy", "weight") if d.get(k) is not None
    }
    decl = declaration or Declaration()
    confidence = decl.confidence
    if d.get("confidence") is not None:
        confidence = float(_frac(d["confidence"], "confidence"))
    size: dict[str, Any] = {}
    if d.get("group_size") is not None:
        size["group_size"] = d["group_size"]
    elif decl.group_size is not None:
        size["group_size"] = decl.group_size
    return PlannedQuery(query, confidence=confidence, **size, **how)
