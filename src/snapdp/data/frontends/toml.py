"""TOML front end: a plan file's ``[data]`` and ``[columns]`` as a
:class:`~snapdp.data.workload.Declaration` (for ``snapdp sql --declaration``), and plan files as
workloads, with ``[[query]] sql = "…"`` and ``where = "…"`` (docs/plans.md, docs/sql.md).

Errors name the file, the line and the key. The loader itself still lives beside the planner in
:mod:`snapdp.data.plan` (``_Loader``); this module extends it with the SQL keys.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from snapdp._validation import check_epsilon
from snapdp.data._toml import Path_, load_toml
from snapdp.data.plan import DEFAULT_CONFIDENCE, Plan, PlannedQuery, _Loader
from snapdp.data.workload import Declaration, Workload
from snapdp.errors import ParameterError

__all__ = ["load_declaration", "load_plan", "load_workload"]

_SQL_KEYS = ("sql", "where")


class _SqlLoader(_Loader):
    """The plan loader, with the SQL keys of a query."""

    def declaration(self) -> Declaration:
        for k in self.data:
            if k not in ("data", "columns", "query"):
                raise self.error((k,), f"unknown table {k!r}; a declaration has [data], [columns]")
        raw = self.data.get("data", {})
        data = self.canonical(("data",), self.table(("data",), raw), _data_keys())
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
        decl: Declaration = self.wrap(
            ("data",), lambda: Declaration(schema, base=self.path.parent, **kw)
        )
        return decl

    def queries_of(self, i: int, raw: object, conf: float, size: int) -> list[PlannedQuery]:
        """One entry's planned queries: an ``sql`` entry gives one per aggregate."""
        if not isinstance(raw, dict) or not any(k in raw for k in _SQL_KEYS):
            return super().queries_of(i, raw, conf, size)
        from snapdp.data.frontends.sql import parse_predicate, parse_sql

        key: Path_ = ("query", i)
        decl = replace(self.declaration(), confidence=conf, group_size=size)
        if "sql" in raw:
            extra = [k for k in raw if k not in ("sql", "epsilon", "accuracy", "target", "weight")]
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
                parsed = parse_sql(text, decl, **how)
            except ParameterError as exc:
                raise self.error((*key, "sql"), str(exc), exc.parameter) from None
            if parsed.having is not None or parsed.order:
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
            for pq in super().queries_of(i, rest, conf, size)
        ]


def _data_keys() -> Any:
    from snapdp.data.plan import _DATA_KEYS

    return _DATA_KEYS


def load_declaration(path: str | Path) -> Declaration:
    """A declaration file: a plan file's ``[data]`` and ``[columns]`` (queries are ignored)."""
    p = Path(path)
    data, locator = load_toml(p)
    data = {k: v for k, v in data.items() if k != "query"}
    return _SqlLoader(p, data, locator).declaration()


def load_plan(path: str | Path) -> Plan:
    """A plan file as the planner's :class:`~snapdp.data.plan.Plan` (SQL keys included)."""
    p = Path(path)
    data, locator = load_toml(p)
    return _SqlLoader(p, data, locator).plan()


def load_workload(path: str | Path) -> Workload:
    """A plan file as a :class:`~snapdp.data.workload.Workload`."""
    p = Path(path)
    data, locator = load_toml(p)
    loader = _SqlLoader(p, data, locator)
    plan = loader.plan()
    dataset = data.get("data", {}).get("dataset") or data.get("data", {}).get("name")
    workload = Workload.from_plan(plan, dataset=dataset if isinstance(dataset, str) else None)
    confidence = plan.queries[0].confidence if plan.queries else DEFAULT_CONFIDENCE
    return replace(workload, declaration=replace(workload.declaration, confidence=confidence))
