"""Writing a release plan as a TOML plan file (docs/plans.md, "The plan file"; docs/ui.md).

:func:`plan_to_toml` writes a :class:`~snapdp.data.planner.plan.Plan` so that ``Plan.load`` of the
text gives the same declaration, queries, source and budget (tested with hypothesis).
:func:`dumps` writes the plan file's structure — ``{"data": {...}, "columns": {name: {...}},
"query": [{...}, ...]}`` — from Python values: ``Decimal`` numbers are written as their own
digits (``Decimal("0.50")`` stays ``0.50``: decimals exactly as typed), ``Fraction`` numbers as
exact decimals (a Fraction with no finite decimal, such as 1/3, is refused: a plan file cannot
hold it exactly), dates as TOML dates.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from snapdp._rational import exact_text
from snapdp._records import field_defaults
from snapdp.data.model.schema import DEFAULT_MAX_ROWS, Column, CsvOptions
from snapdp.data.model.workload import DEFAULT_CONFIDENCE
from snapdp.errors import ParameterError

if TYPE_CHECKING:
    from snapdp.data.planner.plan import Plan

__all__ = ["dumps", "plan_document", "plan_to_toml"]

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_SHORT_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r", "\b": "\\b", "\f": "\\f"}


def plan_to_toml(plan: Plan) -> str:
    """The plan as the text of a plan file (``Plan.load`` reads it back to an equal plan)."""
    return dumps(plan_document(plan))


def plan_document(plan: Plan) -> dict[str, Any]:
    """The plan file's structure of ``plan`` (see :func:`dumps`); a ParameterError when the plan
    holds something a plan file cannot (a source that is not a path, a non-decimal number)."""
    from snapdp.data.planner import plan as _plan

    schema = plan.schema
    _known_fields(schema, _SCHEMA_FIELDS)
    for c in schema.columns:
        _known_fields(c, _COLUMN_FIELDS)
    for pq in plan.queries:
        _known_fields(pq, _PLANNED_FIELDS)
        _known_fields(pq.query, _QUERY_FIELDS)
    data: dict[str, Any] = {}
    source = plan.source
    if source is not None:
        if not isinstance(source, str):
            source = getattr(source, "__fspath__", lambda: None)()
        if not isinstance(source, str):
            raise ParameterError(
                "only a plan whose source is a path can be written as a plan file",
                parameter="source",
            )
        data["source"] = source
    if schema.privacy_unit is not None:
        data["privacy_unit"] = schema.privacy_unit
    bounds = schema.bounds
    for key in ("max_rows_per_unit", "max_groups_per_unit", "max_rows_per_group"):
        if getattr(bounds, key) is not None:
            data[key] = getattr(bounds, key)
    if plan.total_epsilon is not None:
        data["total_epsilon"] = plan.total_epsilon
    if plan.consistent:
        data["consistent"] = plan.consistent
    confidences = {pq.confidence for pq in plan.queries}
    if confidences != {DEFAULT_CONFIDENCE}:
        data["confidence"] = Decimal(repr(next(iter(confidences))))
    if schema.max_rows != DEFAULT_MAX_ROWS:
        data["max_rows"] = schema.max_rows
    if schema.rows is not None:
        data["rows"] = schema.rows
    if schema.null_units != "drop":
        data["null_units"] = schema.null_units
    default_csv = CsvOptions()
    for key in ("encoding", "delimiter", "header", "column_names", "max_line_bytes"):
        value = getattr(schema.csv, key)
        if value != getattr(default_csv, key):
            data[key] = list(value) if isinstance(value, tuple) else value
    columns = {c.name: _column(c) for c in schema.columns}
    default_size = getattr(_plan, "DEFAULT_GROUP_SIZE", None)
    queries = []
    for pq in plan.queries:
        q = pq.query
        entry: dict[str, Any] = {"statistic": q.statistic}
        if q.name is not None:
            entry["name"] = q.name
        if q.column is not None:
            entry["column"] = q.column
        if q.by:
            entry["by"] = list(q.by)
        if q.bins:
            entry["bins"] = {c: list(edges) for c, edges in q.bins}
        if q.quantiles:
            entry["quantiles"] = list(q.quantiles)
        if q.resolution is not None:
            entry["resolution"] = q.resolution
        if q.method != "ratio":
            entry["method"] = q.method
        if q.grid_counts:
            entry["grid_counts"] = True
        entry[pq.how] = getattr(pq, pq.how)
        size = getattr(pq, "group_size", None)
        if size is not None and size != default_size:
            entry["group_size"] = size
        if pq.delta is not None:  # groups from the data (docs/sql.md); [data] delta is each one's
            entry["delta"] = pq.delta
        queries.append(entry)
    return {"data": data, "columns": columns, "query": queries}


#: The fields this writer writes; a field it does not know, set to other than its default, is
#: refused (never dropped).
_SCHEMA_FIELDS = ("columns", "privacy_unit", "null_units", "bounds", "max_rows", "rows", "csv")
_COLUMN_FIELDS = ("name", "type", "lower", "upper", "keys", "bins", "nulls")
_PLANNED_FIELDS = ("query", "epsilon", "accuracy", "weight", "confidence", "group_size", "delta")
_QUERY_FIELDS = (
    "statistic",
    "column",
    "by",
    "bins",
    "quantiles",
    "method",
    "name",
    "resolution",
    "grid_counts",
)


def _known_fields(obj: Struct, known: tuple[str, ...]) -> None:
    for name, make_default in field_defaults(obj):
        if name in known:
            continue
        value = getattr(obj, name)
        default = object() if make_default is None else make_default()
        if value != default:
            raise ParameterError(
                f"the plan-file writer does not know `{name}` = {value!r} of "
                f"{type(obj).__name__}; nothing was written",
                parameter=name,
            )


def _column(c: Column) -> dict[str, Any]:
    out: dict[str, Any] = {"type": c.type}
    if c.lower is not None:
        out["lower"] = c.lower
        out["upper"] = c.upper
    if c.keys is not None:
        out["keys"] = list(c.keys)
    if c.bins is not None:
        out["bins"] = list(c.bins)
    if c.nulls.action == "impute":
        out["nulls"] = c.nulls.value
    return out


# -- the TOML text ----------------------------------------------------------------------------
def dumps(document: Mapping[str, Any]) -> str:
    """TOML text of a plan file's structure: each top-level mapping is a ``[table]`` (its
    mapping values written inline), each top-level list of mappings an array of tables
    ``[[name]]``. Values: str, bool, int, Decimal, Fraction (exact decimals only), dates, lists
    and mappings of these."""
    parts: list[str] = []
    for name, value in document.items():
        if isinstance(value, Mapping):
            lines = [f"[{_key(name)}]"]
            lines += [f"{_key(k)} = {_value(v, k)}" for k, v in value.items()]
            parts.append("\n".join(lines))
        elif isinstance(value, Sequence) and not isinstance(value, str):
            for item in value:
                if not isinstance(item, Mapping):
                    raise ParameterError(
                        f"`{name}` must be a list of tables, not {item!r}", parameter=name
                    )
                lines = [f"[[{_key(name)}]]"]
                lines += [f"{_key(k)} = {_value(v, k)}" for k, v in item.items()]
                parts.append("\n".join(lines))
        else:
            raise ParameterError(f"`{name}` must be a table, not {value!r}", parameter=name)
    return "\n\n".join(parts) + "\n"


def _key(name: object) -> str:
    if not isinstance(name, str) or not name:
        raise ParameterError(f"a key must be a non-empty string, not {name!r}", parameter="key")
    return name if _BARE_KEY.fullmatch(name) else _string(name)


def _string(text: str) -> str:
    out = ['"']
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _value(value: object, key: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ParameterError(f"`{key}` must be a finite number, not {value}", parameter=None)
        return str(value)
    if isinstance(value, Fraction):
        text = exact_text(value)
        if "/" in text:
            raise ParameterError(
                f"`{key}` = {text} has no exact decimal form; a plan file cannot hold it",
                parameter=str(key),
            )
        return text
    if isinstance(value, _dt.datetime):
        raise ParameterError(f"`{key}` must be a date, not a date and time", parameter=str(key))
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, Mapping):
        inner = ", ".join(f"{_key(k)} = {_value(v, k)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v, key) for v in value) + "]"
    raise ParameterError(f"`{key}` cannot be written to a plan file: {value!r}", parameter=None)
