"""The page's JSON and the library's plan objects, both ways (docs/ui.md, "What the page sends").

Every conversion between what the page sends or shows and the library's objects lives here, so
that the page can move to another representation of a workload by changing this module alone.

The page sends a *document*: every field exactly as typed (strings), never a path and never data::

    {"data": {"privacy_unit": "pid", "max_rows_per_unit": "2", "total_epsilon": "2", ...},
     "columns": [{"name": "age", "type": "integer", "lower": "0", "upper": "100",
                  "keys": "", "bins": ""}, ...],
     "queries": [{"statistic": "count", "column": "", "by": "sex", "bins": "", "quantiles": "",
                  "how": "epsilon", "value": "0.5"}, ...]}

:func:`document_toml` writes it as the text of a plan file (numbers keep the digits typed; a
field that is not a number is written as a string, so that the plan loader rejects it with the
same message as ``snapdp plan``), with the source fixed by the command line. :func:`load_plan`
loads that text as a :class:`~snapdp.data.model.workload.Workload` with the TOML front end — the
command line's own loader and checks — and turns its error ("file, line N, key `K`: message")
into a :class:`FieldError` naming the page's field. Nothing here reads the data source.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
import tempfile
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from pathlib import Path
from typing import Any

from snapdp._rational import format_rational
from snapdp._validation import SIZE_RULE, NumberSizeError, check_number_size
from snapdp.data.api import Plan
from snapdp.data.frontends.toml import load_workload
from snapdp.data.model.codec import workload_to_dict
from snapdp.data.model.schema import CsvOptions
from snapdp.data.model.workload import Workload
from snapdp.data.plan_toml import dumps
from snapdp.data.planner.preview import PlanPreview, usefulness_flags
from snapdp.errors import ParameterError

__all__ = [
    "DATA_FIELDS",
    "FieldError",
    "blank_document",
    "digest",
    "document_from_plan",
    "document_from_toml",
    "document_from_workload",
    "document_toml",
    "load_plan",
    "preview_json",
    "results_json",
]

#: The page's fields of ``[data]`` (all optional).
DATA_FIELDS = (
    "privacy_unit",
    "max_rows_per_unit",
    "max_groups_per_unit",
    "max_rows_per_group",
    "total_epsilon",
    "confidence",
    "group_size",
    "consistent",
    # kept for a loaded plan, not shown by the page
    "max_rows",
    "rows",
    "null_units",
    "encoding",
    "delimiter",
    "header",
    "column_names",
    "max_line_bytes",
    "dataset",
)
_COLUMN_FIELDS = ("name", "type", "lower", "upper", "keys", "bins", "nulls")
_QUERY_FIELDS = (
    "statistic",
    "column",
    "by",
    "bins",
    "quantiles",
    "how",
    "value",
    # kept for a loaded plan, not shown by the page
    "name",
    "method",
    "resolution",
    "group_size",
)
_HOW = ("epsilon", "accuracy", "weight")
_INTEGER_FIELDS = (
    "max_rows_per_unit",
    "max_groups_per_unit",
    "max_rows_per_group",
    "group_size",
    "max_rows",
    "rows",
    "max_line_bytes",
)
_TEXT_FIELDS = ("privacy_unit", "null_units", "encoding", "delimiter", "dataset")
#: Whether the planner offers a fast draft for interactive pages (``presume_certified``).
_HAS_DRAFT = "presume_certified" in inspect.signature(Plan.preview).parameters
#: The source written into the plan text when the command line gave none (never opened).
NO_SOURCE = "(no source: start snapdp ui with --source)"
_LOCATION = re.compile(r"^(?:, line \d+)?(?:, key `(?P<key>[^`]*)`)?: (?P<message>.*)$", re.S)


class FieldError(ParameterError):
    """A field of the page breaks a rule: ``field`` names it (``"columns[0].lower"``,
    ``"query[2].value"``, ``"data.total_epsilon"``) or is None for the plan as a whole; the
    message is the plan loader's, without the file and line."""

    def __init__(self, message: str, *, field: str | None, parameter: str | None) -> None:
        super().__init__(message, parameter=parameter)
        self.field = field

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"message": str(self), "field": self.field, "parameter": self.parameter}


# -- the page's document -> a plan ------------------------------------------------------------
def blank_document() -> dict[str, Any]:
    """A document to start from: one count query."""
    return {
        "data": {k: "" for k in DATA_FIELDS},
        "columns": [],
        "queries": [{**{k: "" for k in _QUERY_FIELDS}, "statistic": "count", "value": "1"}],
    }


def _check_shape(doc: object) -> dict[str, Any]:
    """The document with every field a string; a ParameterError on any other shape."""

    def fields(where: str, raw: object, names: tuple[str, ...]) -> dict[str, str]:
        if not isinstance(raw, dict):
            raise ParameterError(f"`{where}` must be an object", parameter="document")
        for k, v in raw.items():
            if k not in names:
                raise ParameterError(f"`{where}` has an unknown field {k!r}", parameter="document")
            if not isinstance(v, str) or len(v) > 10_000:
                raise ParameterError(
                    f"`{where}.{k}` must be a string (as typed)", parameter="document"
                )
        return {k: raw.get(k, "") for k in names}

    if not isinstance(doc, dict) or set(doc) - {"data", "columns", "queries"}:
        raise ParameterError(
            "the plan must be an object with `data`, `columns` and `queries`", parameter="document"
        )
    columns, queries = doc.get("columns", []), doc.get("queries", [])
    if not isinstance(columns, list) or not isinstance(queries, list):
        raise ParameterError("`columns` and `queries` must be lists", parameter="document")
    if len(columns) > 1000 or len(queries) > 1000:
        raise ParameterError("at most 1000 columns and 1000 queries", parameter="document")
    return {
        "data": fields("data", doc.get("data", {}), DATA_FIELDS),
        "columns": [fields(f"columns[{i}]", c, _COLUMN_FIELDS) for i, c in enumerate(columns)],
        "queries": [fields(f"queries[{i}]", q, _QUERY_FIELDS) for i, q in enumerate(queries)],
    }


def _number(text: str, field: str) -> object:
    """A typed number as a Decimal keeping its digits; anything else as the text itself (the
    loader then names the rule it breaks). A number beyond the size limits is a FieldError
    naming ``field``, before anything of its size is built (docs/data.md, "Numbers")."""
    t = text.strip()
    try:
        d = Decimal(t)
    except InvalidOperation:
        return t
    if not d.is_finite() or "_" in t:
        return t
    try:
        check_number_size(field, d, shown=t)
    except NumberSizeError as exc:
        message = f"must be a number of {SIZE_RULE}, not {exc.shown}"
        raise FieldError(message, field=field, parameter=field.rsplit(".", 1)[-1]) from None
    return d


def _integer(text: str, field: str) -> object:
    n = _number(text, field)
    if (
        isinstance(n, Decimal)
        and n == n.to_integral_value()
        and "." not in text
        and "e" not in (text.lower())
    ):
        return int(n)
    return n


def _items(text: str, field: str) -> list[str]:
    """A list field: comma-separated (each item stripped), or a JSON list of strings for items
    that hold commas or spaces at their ends (``["a, b", " c"]``)."""
    if not text.strip():
        return []
    if text.strip().startswith("["):
        try:
            items = json.loads(text)
        except ValueError:
            items = None
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise FieldError(
                'a list in brackets must be a JSON list of strings, e.g. ["a, b", "c"]',
                field=field,
                parameter=field.rsplit(".", 1)[-1],
            )
        return items
    return [p.strip() for p in text.split(",")]


def _list_text(items: list[object]) -> str:
    """A list field's text: comma-separated when that reads back the same, else JSON."""
    texts = [_text(i) for i in items]
    plain = all(t and t == t.strip() and "," not in t for t in texts)
    if plain and texts and not texts[0].startswith("["):
        return ", ".join(texts)
    return json.dumps(texts, ensure_ascii=False)


def _key_value(kind: str, text: str, field: str) -> object:
    if kind in ("integer", "decimal"):
        return _integer(text, field) if kind == "integer" else _number(text, field)
    if kind == "boolean" and text.lower() in ("true", "false"):
        return text.lower() == "true"
    return text


def _toml_structure(doc: dict[str, Any], source: str) -> dict[str, Any]:
    raw = doc["data"]
    data: dict[str, Any] = {"source": source}
    for k in DATA_FIELDS:
        text = raw[k]
        if k in _TEXT_FIELDS:  # as typed ("" is absent; a tab is a delimiter)
            if text != "":
                data[k] = text
            continue
        if not text.strip():
            continue
        if k in ("header", "consistent"):  # a mode of `consistent` stays text
            data[k] = {"true": True, "false": False}.get(text.strip().lower(), text.strip())
        elif k == "column_names":
            data[k] = _items(text, f"data.{k}")
        else:
            field = f"data.{k}"
            data[k] = _integer(text, field) if k in _INTEGER_FIELDS else _number(text, field)
    columns: dict[str, Any] = {}
    for i, c in enumerate(doc["columns"]):
        name = c["name"]
        if name == "":
            if any(c[k].strip() for k in _COLUMN_FIELDS if k != "type"):
                raise FieldError(
                    "a column needs a name", field=f"columns[{i}].name", parameter="name"
                )
            continue
        if name in columns:
            raise FieldError(
                f"column {name!r} is declared twice", field=f"columns[{i}].name", parameter="name"
            )
        entry: dict[str, Any] = {}
        if c["type"].strip():
            entry["type"] = c["type"].strip()
        kind = entry.get("type", "")
        for k in ("lower", "upper"):
            if c[k].strip():
                field = f"columns[{i}].{k}"
                entry[k] = _integer(c[k], field) if kind == "integer" else _number(c[k], field)
        if c["keys"].strip():
            items = _items(c["keys"], f"columns[{i}].keys")
            entry["keys"] = [_key_value(kind, v, f"columns[{i}].keys") for v in items]
        if c["bins"].strip():
            field = f"columns[{i}].bins"
            entry["bins"] = [_number(v, field) for v in _items(c["bins"], field)]
        if c["nulls"].strip():
            nulls = c["nulls"]
            field = f"columns[{i}].nulls"
            entry["nulls"] = "drop" if nulls.strip() == "drop" else _key_value(kind, nulls, field)
        columns[name] = entry
    queries = []
    for i, q in enumerate(doc["queries"]):
        where = f"query[{i + 1}]."
        entry = {}
        if q["statistic"].strip():
            entry["statistic"] = q["statistic"].strip()
        for k in ("name", "column", "method"):
            if q[k] != "":
                entry[k] = q[k]
        if q["by"].strip():
            entry["by"] = _items(q["by"], where + "by")
        for k in ("bins", "quantiles"):
            if q[k].strip():
                entry[k] = [_number(v, where + k) for v in _items(q[k], where + k)]
        if q["resolution"].strip():
            entry["resolution"] = _number(q["resolution"], where + "resolution")
        if q["group_size"].strip():
            entry["group_size"] = _integer(q["group_size"], where + "group_size")
        how = q["how"].strip()
        if q["value"].strip():
            if how not in _HOW:
                raise FieldError(
                    f"`how` must be one of {', '.join(_HOW)}, not {how!r}",
                    field=where + "how",
                    parameter="how",
                )
            entry[how] = _number(q["value"], where + "value")
        queries.append(entry)
    return {"data": data, "columns": columns, "query": queries}


def document_toml(doc: object, source: str | None) -> str:
    """The text of a plan file for the page's document ``doc`` (checked for shape only), with
    ``source`` as its source (a placeholder when None)."""
    return dumps(_toml_structure(_check_shape(doc), source or NO_SOURCE))


def load_plan(doc: object, source: str | None, workdir: Path) -> tuple[Workload, str]:
    """The workload of the page's document and its plan-file text, loaded by the TOML front
    end (``snapdp plan``'s loader) from a file in ``workdir``; a :class:`FieldError` naming the
    field when a rule is broken."""
    checked = _check_shape(doc)
    text = dumps(_toml_structure(checked, source or NO_SOURCE))
    return _load_text(text, workdir, _field_map(checked)), text


def describe_key(path: tuple[str | int, ...]) -> str:
    """A plan-file key as error messages write it: ``query[2].accuracy`` for ("query", 1,
    "accuracy") (indices 1-based), ``columns.age.lower``."""
    out = ""
    for part in path:
        out += f"[{part + 1}]" if isinstance(part, int) else ("." if out else "") + part
    return out


def _write(text: str, workdir: Path) -> Path:
    with tempfile.NamedTemporaryFile(
        "w", suffix=".toml", dir=workdir, delete=False, encoding="utf-8"
    ) as f:
        f.write(text)
        return Path(f.name)


def _load_text(text: str, workdir: Path, fields: Mapping[str, str]) -> Workload:
    path = _write(text, workdir)
    try:
        return load_workload(path)
    except ParameterError as exc:  # a PlanFileError: "file, line N, key `K`: message"
        raise _field_error(str(exc), str(path), exc.parameter, fields) from None
    finally:
        path.unlink(missing_ok=True)


def preview(
    plan: Plan, fields: Mapping[str, str] | None = None, *, draft: bool = False
) -> PlanPreview:
    """``plan.preview()``, its errors as :class:`FieldError`. ``draft``: the planner's fast
    draft for the page (certificates presumed) where the planner offers one; a run always
    plans with the certified one."""
    try:
        if draft and _HAS_DRAFT:
            return plan.preview(presume_certified=True)  # type: ignore[call-arg,unused-ignore]
        return plan.preview()
    except ParameterError as exc:
        path = "" if plan.path is None else str(plan.path)
        raise _field_error(str(exc), path, exc.parameter, fields or {}) from None


def plan_and_preview(
    doc: object, source: str | None, workdir: Path, *, draft: bool = False
) -> tuple[Plan, PlanPreview, str]:
    """The planner's view of the page's workload, its preview (a draft: see :func:`preview`)
    and the digest of the previewed workload (see :func:`digest`); reads no data."""
    checked = _check_shape(doc)
    text = dumps(_toml_structure(checked, source or NO_SOURCE))
    fields = _field_map(checked)
    workload = _load_text(text, workdir, fields)
    plan = Plan.from_workload(workload)
    planned = preview(plan, fields, draft=draft)
    return plan, planned, digest(workload, planned)


def _field_map(doc: dict[str, Any]) -> dict[str, str]:
    """Plan-file key (as error messages write it) -> the page's field."""
    out: dict[str, str] = {f"data.{k}": f"data.{k}" for k in DATA_FIELDS}
    for i, c in enumerate(doc["columns"]):
        name = c["name"]
        if name == "":
            continue
        out.setdefault(describe_key(("columns", name)), f"columns[{i}].name")
        for k in ("type", "lower", "upper", "keys", "bins"):
            out.setdefault(describe_key(("columns", name, k)), f"columns[{i}].{k}")
    for i in range(len(doc["queries"])):
        out[describe_key(("query", i))] = f"query[{i + 1}].statistic"
        for k in _QUERY_FIELDS:
            out[describe_key(("query", i, k))] = f"query[{i + 1}].{k}"
        for k in _HOW:
            out[describe_key(("query", i, k))] = f"query[{i + 1}].value"
    return out


def _field_error(
    text: str, path: str, parameter: str | None, fields: Mapping[str, str]
) -> FieldError:
    rest = text[len(path) :] if path and text.startswith(path) else text
    m = _LOCATION.match(rest) if path else None
    if m is None:  # an error of the planner, not of the file: placed by its parameter
        return FieldError(text, field=fields.get(f"data.{parameter}"), parameter=parameter)
    key, message = m.group("key"), m.group("message")
    field = None
    if key is not None:
        field = fields.get(key)
        whole_query = key.startswith("query[") and "." not in key and parameter in _HOW
        column_bound = field is not None and parameter in ("lower", "upper", "keys", "bins")
        if whole_query or column_bound:
            field = fields.get(f"{key}.{parameter}", field)
    return FieldError(message, field=field, parameter=parameter)


# -- a plan -> the page's document ------------------------------------------------------------
def _text(x: object) -> str:
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, Fraction):
        return format_rational(x, max_digits=None)
    if hasattr(x, "isoformat"):
        return str(x.isoformat())
    return str(x)


def document_from_workload(workload: Workload) -> dict[str, Any]:
    """The page's document of ``workload`` (its source is not part of it)."""
    doc = document_from_plan(Plan.from_workload(workload))
    if workload.dataset is not None:
        doc["data"]["dataset"] = workload.dataset
    return doc


def document_from_plan(plan: Plan) -> dict[str, Any]:
    """The page's document of ``plan`` (its source is not part of it); writing it back with
    :func:`document_toml` gives the same plan (tested)."""
    from snapdp.data.plan_toml import plan_document

    structure = plan_document(plan)
    data = structure["data"]
    doc = blank_document()
    for k in DATA_FIELDS:
        if k in data:
            value = data[k]
            doc["data"][k] = _list_text(value) if isinstance(value, list) else _text(value)
    queries = structure["query"]
    sizes = [q.get("group_size") for q in queries]
    if sizes and sizes[0] is not None and all(n == sizes[0] for n in sizes):
        doc["data"]["group_size"] = _text(sizes[0])  # one reference group size for all
        queries = [{k: v for k, v in q.items() if k != "group_size"} for q in queries]
    doc["columns"] = [
        {
            "name": name,
            "type": c["type"],
            "lower": _text(c["lower"]) if "lower" in c else "",
            "upper": _text(c["upper"]) if "upper" in c else "",
            "keys": _list_text(c["keys"]) if "keys" in c else "",
            "bins": _list_text(c["bins"]) if "bins" in c else "",
            "nulls": _text(c["nulls"]) if "nulls" in c else "",
        }
        for name, c in structure["columns"].items()
    ]
    doc["queries"] = []
    for q in queries:
        how = next(h for h in _HOW if h in q)
        bins = q.get("bins", {})
        if bins and list(bins) != q.get("by"):
            raise ParameterError(
                "the page edits the bins of a query grouped by one column; this plan bins "
                f"{', '.join(map(repr, bins))} of {len(q.get('by', []))} `by` columns (edit it "
                "as a file: docs/plans.md)",
                parameter="bins",
            )
        row = {k: "" for k in _QUERY_FIELDS}
        row.update(
            statistic=q["statistic"],
            how=how,
            value=_text(q[how]),
            bins=_list_text([e for edges in bins.values() for e in edges]) if bins else "",
        )
        for k in ("column", "name", "method", "resolution", "group_size"):
            if k in q:
                row[k] = _text(q[k])
        for k in ("by", "quantiles"):
            if k in q:
                row[k] = _list_text(q[k])
        doc["queries"].append(row)
    return doc


def document_from_toml(text: str, source: str | None, workdir: Path) -> dict[str, Any]:
    """The page's document of a plan file's text (its own `source` is ignored: the command line
    fixes it); a :class:`FieldError` (field None) naming the key when the file breaks a rule."""
    import importlib

    tomllib: Any = importlib.import_module("tomllib")  # Python 3.11+, as plan files need
    try:
        raw = tomllib.loads(text, parse_float=Decimal)
    except tomllib.TOMLDecodeError as exc:
        raise FieldError(f"not valid TOML: {exc}", field=None, parameter="plan") from None
    data = raw.get("data")
    if isinstance(data, dict):
        for alias in ("source", "path", "file"):
            data.pop(alias, None)
        raw["data"] = {"source": source or NO_SOURCE, **data}
    try:
        rewritten = dumps(raw)
    except ParameterError as exc:
        raise FieldError(str(exc), field=None, parameter=exc.parameter) from None
    return document_from_workload(_load_text(rewritten, workdir, {}))


def csv_options(doc: object) -> CsvOptions:
    """The CSV options (header, delimiter, encoding) of the page's document (defaults when it
    sends none)."""
    if doc is None:
        return CsvOptions()
    data = _check_shape(doc)["data"]
    kw: dict[str, Any] = {}
    if data["header"].strip():
        header = {"true": True, "false": False}.get(data["header"].strip().lower())
        if header is None:
            raise FieldError(
                f"`header` must be true or false, not {data['header']!r}",
                field="data.header",
                parameter="header",
            )
        kw["header"] = header
    for k in ("delimiter", "encoding"):
        if data[k] != "":
            kw[k] = data[k]
    if data["column_names"].strip():
        kw["column_names"] = tuple(_items(data["column_names"], "data.column_names"))
    try:
        return CsvOptions(**kw)
    except ParameterError as exc:
        raise FieldError(str(exc), field=f"data.{exc.parameter}", parameter=exc.parameter) from None


# -- results for the page ---------------------------------------------------------------------
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
    usefulness warnings (``flags``). Public parameters only: no data is read."""
    out = planned.as_dict()
    shown = out.get("queries", [])
    if len(shown) == len(planned.allocations):  # one entry per query, in plan order
        for entry, allocation in zip(shown, planned.allocations, strict=True):
            entry["flags"] = usefulness_flags(plan.schema, allocation)
    return out


def results_json(results: Any) -> list[dict[str, Any]]:
    """The released results (after a run) as the page shows them."""
    return [r.as_dict() for r in results]
