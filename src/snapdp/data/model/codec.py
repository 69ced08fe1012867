"""The exact JSON form of a workload, its declaration, schema and row filter (docs/sql.md, "One
workload").

Every rational is written as exact decimal text (or ``p/q``), every date as ISO text, so
:func:`workload_from_dict` of :func:`workload_to_dict` gives back an equal workload; a malformed
form is a ParameterError naming the key. The page sends and receives workloads in this form.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from msgspec.structs import replace

from snapdp._rational import exact_text, shown_number
from snapdp._validation import NumberSizeError, exact_decimal, exact_value
from snapdp.data.model.keys import typed_key
from snapdp.data.model.predicate import (
    OPERATORS,
    And,
    Compare,
    InList,
    IsNull,
    LiteralValue,
    Not,
    Or,
    Predicate,
)
from snapdp.data.model.query import Query
from snapdp.data.model.schema import Column, ContributionBounds, CsvOptions, NullRule, Schema
from snapdp.data.model.workload import DEFAULT_CONFIDENCE, Declaration, PlannedQuery, Workload
from snapdp.errors import ParameterError

__all__ = [
    "FORMAT",
    "declaration_from_dict",
    "declaration_to_dict",
    "planned_from_dict",
    "planned_to_dict",
    "predicate_from_dict",
    "predicate_to_dict",
    "schema_from_dict",
    "schema_to_dict",
    "workload_from_dict",
    "workload_to_dict",
]

#: The version of the JSON form written by :func:`workload_to_dict`.
FORMAT = 1


def workload_to_dict(workload: Workload) -> dict[str, Any]:
    """A JSON-ready form (exact rationals as decimal text; see :func:`workload_from_dict`)."""
    return {
        "format": FORMAT,
        "declaration": declaration_to_dict(workload.declaration),
        "queries": [planned_to_dict(pq) for pq in workload.queries],
    }


def workload_from_dict(data: object) -> Workload:
    """The workload of :func:`workload_to_dict`'s form; a ParameterError naming the key
    otherwise."""
    d = _mapping(data, "workload")
    _known(d, ("format", "declaration", "queries"), "workload")
    if d.get("format", FORMAT) != FORMAT:
        raise ParameterError(f"unknown workload format {d.get('format')!r}", parameter="format")
    declaration = declaration_from_dict(d.get("declaration", {}))
    raw = d.get("queries")
    if not isinstance(raw, list):
        raise ParameterError("`queries` must be a list of queries", parameter="queries")
    return Workload(declaration, tuple(planned_from_dict(q, declaration) for q in raw))


# -- helpers -------------------------------------------------------------------------------
def _num(x: Fraction | int | None) -> str | None:
    return None if x is None else exact_text(Fraction(x))


def _frac(value: object, key: str) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ParameterError(
            f'`{key}` must be an exact number as text (such as "0.5"), not {shown_number(value)}',
            parameter=key,
        )
    try:
        return exact_value(value, name=key)
    except NumberSizeError:
        raise
    except ParameterError:
        raise ParameterError(
            f"`{key}` must be a number, not {shown_number(value)}", parameter=key
        ) from None


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
        return exact_text(x)
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
        **({} if d.delta is None else {"delta": _num(d.delta)}),
    }


def declaration_from_dict(data: object) -> Declaration:
    """The inverse of :func:`declaration_to_dict`."""
    d = _mapping(data, "declaration")
    keys = ("schema", "source", "total_epsilon", "confidence", "group_size", "dataset", "base",
            "consistent", "delta")  # fmt: skip
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
        None if d.get("delta") is None else _frac(d["delta"], "delta"),
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
    if q.grid_counts:
        out["grid_counts"] = True
    out[pq.how] = _num(getattr(pq, pq.how))
    out["confidence"] = repr(pq.confidence)
    if pq.group_size is not None:
        out["group_size"] = pq.group_size
    if pq.delta is not None:
        out["delta"] = _num(pq.delta)
    return out


_QUERY_KEYS = ("statistic", "column", "by", "bins", "quantiles", "method", "name", "resolution",
               "where", "epsilon", "accuracy", "weight", "confidence", "group_size",
               "grid_counts", "delta")  # fmt: skip


def planned_from_dict(data: object, declaration: Declaration | None = None) -> PlannedQuery:
    """One planned query from its JSON form; confidence and group size default to the
    declaration's."""
    d = _mapping(data, "query")
    _known(d, _QUERY_KEYS, "a query")
    kw: dict[str, Any] = {
        k: d[k] for k in ("statistic", "column", "method", "name", "grid_counts") if k in d
    }
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
    delta = decl.delta if d.get("delta") is None else _frac(d["delta"], "delta")
    return PlannedQuery(query, confidence=confidence, delta=delta, **size, **how)


# -- the row filter ------------------------------------------------------------------------------
def predicate_to_dict(predicate: Predicate) -> dict[str, Any]:
    """A JSON-ready form; literals keep their type (decimals as exact text, dates as ISO)."""
    if isinstance(predicate, Compare):
        return {
            "op": predicate.op,
            "column": predicate.column,
            "value": _literal_to_json(predicate.value),
        }
    if isinstance(predicate, InList):
        return {
            "op": "in",
            "column": predicate.column,
            "values": [_literal_to_json(v) for v in predicate.values],
        }
    if isinstance(predicate, IsNull):
        return {"op": "is_null", "column": predicate.column}
    if isinstance(predicate, Not):
        return {"op": "not", "term": predicate_to_dict(predicate.term)}
    op = "and" if isinstance(predicate, And) else "or"
    return {"op": op, "terms": [predicate_to_dict(t) for t in predicate.terms]}


def predicate_from_dict(data: object) -> Predicate:
    """The inverse of :func:`predicate_to_dict`; a ParameterError (``where``) when malformed."""
    if not isinstance(data, dict) or "op" not in data:
        raise ParameterError(
            f"a filter must be an object with an 'op', not {data!r}", parameter="where"
        )
    op = data["op"]
    try:
        if op in OPERATORS:
            return Compare(str(data["column"]), op, _literal_from_json(data["value"]))
        if op == "in":
            return InList(str(data["column"]), tuple(_literal_from_json(v) for v in data["values"]))
        if op == "is_null":
            return IsNull(str(data["column"]))
        if op == "not":
            return Not(predicate_from_dict(data["term"]))
        if op in ("and", "or"):
            terms = tuple(predicate_from_dict(t) for t in data["terms"])
            return And(terms) if op == "and" else Or(terms)
    except NumberSizeError:  # a ParameterError, so a TypeError too: named as it is
        raise
    except (KeyError, TypeError):
        raise ParameterError(f"a malformed filter: {data!r}", parameter="where") from None
    raise ParameterError(f"unknown filter operator {op!r}", parameter="where")


def _literal_to_json(value: LiteralValue) -> dict[str, str | bool]:
    if isinstance(value, bool):
        return {"boolean": value}
    if isinstance(value, int):
        return {"integer": str(value)}
    if isinstance(value, Fraction):
        return {"decimal": exact_text(value)}
    if isinstance(value, _dt.date):
        return {"date": value.isoformat()}
    return {"text": value}


def _literal_from_json(data: object) -> LiteralValue:
    if not isinstance(data, dict) or len(data) != 1:
        raise ParameterError(f"a malformed literal: {data!r}", parameter="where")
    ((kind, value),) = data.items()
    if kind == "boolean" and isinstance(value, bool):
        return value
    if kind == "text" and isinstance(value, str):
        return value
    if kind in ("integer", "decimal", "date") and isinstance(value, str):
        try:
            if kind in ("integer", "decimal"):
                number = exact_decimal(value, name="where", rational=True)
                if kind == "decimal":
                    return number
                if number.denominator == 1 and value.strip().lstrip("+-").isdigit():
                    return int(number)
                raise ValueError(value)
            return _dt.date.fromisoformat(value)
        except NumberSizeError:
            raise
        except (ValueError, ParameterError):
            pass
    raise ParameterError(f"a malformed literal: {data!r}", parameter="where")
