"""The page's document as a plan file and back (docs/ui.md, "Save and load a plan").

:func:`document_toml` writes the document as the text of a plan file — numbers keep the digits
typed, a field that is not a number is written as a string (so that ``snapdp plan`` refuses it
with the page's words) — with the source fixed by the command line. :func:`document_from_toml`
reads a plan file's text with the TOML front end (``snapdp plan``'s loader, its own `source`
replaced by the command line's) and :func:`document_from_workload` shows a workload as the
page's document. Nothing here reads the data source.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from msgspec.structs import replace

from snapdp.data.api import Plan
from snapdp.data.frontends.toml import loads_workload
from snapdp.data.frontends.toml_writer import dumps, plan_document
from snapdp.data.model.predicate import to_sql
from snapdp.data.model.workload import Workload
from snapdp.errors import ParameterError
from snapdp.ui._document import (
    DATA_FIELDS,
    HOW,
    QUERY_FIELDS,
    FieldError,
    blank_document,
    check_shape,
    integer,
    items,
    list_text,
    number,
    text_of,
)
from snapdp.ui._workload_json import NO_SOURCE, typed_data

__all__ = ["document_from_plan", "document_from_toml", "document_from_workload", "document_toml"]


# -- the page's document -> a plan file -------------------------------------------------------
def document_toml(doc: object, source: str | None) -> str:
    """The text of a plan file for the page's document ``doc`` (checked for shape only), with
    ``source`` as its source (a placeholder when None)."""
    return dumps(_structure(check_shape(doc), source or NO_SOURCE))


def _data(raw: dict[str, str], source: str) -> dict[str, Any]:
    data: dict[str, Any] = {"source": source}
    for k, v in typed_data(raw, DATA_FIELDS).items():
        data[k] = list(v) if isinstance(v, tuple) else v  # a TOML array
    return data


def _column(i: int, c: dict[str, str]) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    kind = c["type"].strip()
    if kind:
        entry["type"] = kind
    read = integer if kind == "integer" else number
    for k in ("lower", "upper"):
        if c[k].strip():
            entry[k] = read(c[k], f"columns[{i}].{k}")
    if c["keys"].strip():
        field = f"columns[{i}].keys"
        entry["keys"] = [v if kind not in ("integer", "decimal") else read(v, field)
                         for v in items(c["keys"], field)]  # fmt: skip
    if c["bins"].strip():
        field = f"columns[{i}].bins"
        entry["bins"] = [number(v, field) for v in items(c["bins"], field)]
    if c["nulls"].strip():
        nulls = c["nulls"]
        field = f"columns[{i}].nulls"
        entry["nulls"] = nulls if nulls.strip() == "drop" or kind not in ("integer", "decimal") \
            else read(nulls, field)  # fmt: skip
    return entry


def _query(i: int, q: dict[str, str]) -> dict[str, Any]:
    where = f"query[{i + 1}]."
    entry: dict[str, Any] = {}
    if q["statistic"].strip():
        entry["statistic"] = q["statistic"].strip()
    for k in ("name", "column", "method"):
        if q[k] != "":
            entry[k] = q[k]
    if q["by"].strip():
        entry["by"] = items(q["by"], where + "by")
    if q["bins"].strip():
        text = q["bins"]
        if ":" in text:  # `column: edges; column: edges`
            parts = [p.split(":", 1) for p in text.split(";") if p.strip()]
            field = where + "bins"
            entry["bins"] = {c.strip(): [number(v, field) for v in items(e, field)]
                             for c, e in parts}  # fmt: skip
        else:
            entry["bins"] = [number(v, where + "bins") for v in items(text, where + "bins")]
    if q["quantiles"].strip():
        entry["quantiles"] = [number(v, where + "quantiles")
                              for v in items(q["quantiles"], where + "quantiles")]  # fmt: skip
    if q["resolution"].strip():
        entry["resolution"] = number(q["resolution"], where + "resolution")
    if q["group_size"].strip():
        entry["group_size"] = integer(q["group_size"], where + "group_size")
    if q["where"].strip():
        entry["where"] = q["where"]
    if q["grid_counts"].strip() == "true":
        entry["grid_counts"] = True
    how = q["how"].strip()
    if q["value"].strip():
        if how not in HOW:
            raise FieldError(f"`how` must be one of {', '.join(HOW)}, not {how!r}",
                             field=where + "how", parameter="how")  # fmt: skip
        entry[how] = number(q["value"], where + "value")
    return entry


def _structure(doc: dict[str, Any], source: str) -> dict[str, Any]:
    columns: dict[str, Any] = {}
    for i, c in enumerate(doc["columns"]):
        if c["name"] != "" and c["name"] not in columns:
            columns[c["name"]] = _column(i, c)
    queries = [_query(i, q) for i, q in enumerate(doc["queries"])]
    return {"data": _data(doc["data"], source), "columns": columns, "query": queries}


# -- a plan -> the page's document ------------------------------------------------------------
def document_from_workload(workload: Workload) -> dict[str, Any]:
    """The page's document of ``workload`` (its source is not part of it)."""
    wheres = [pq.query.where for pq in workload.queries]
    bare = workload.with_queries(
        [replace(pq, query=replace(pq.query, where=None)) for pq in workload.queries]
    )
    doc = document_from_plan(Plan.from_workload(bare))
    for row, w in zip(doc["queries"], wheres, strict=True):
        if w is not None:
            row["where"] = to_sql(w)
    if workload.dataset is not None:
        doc["data"]["dataset"] = workload.dataset
    return doc


def document_from_plan(plan: Plan) -> dict[str, Any]:
    """The page's document of ``plan`` (its source is not part of it); writing it back with
    :func:`document_toml` gives the same plan (tested)."""
    structure = plan_document(plan)
    data = structure["data"]
    doc = blank_document()
    for k in DATA_FIELDS:
        if k in data:
            value = data[k]
            doc["data"][k] = list_text(value) if isinstance(value, list) else text_of(value)
    queries = structure["query"]
    # groups from the data: the page keeps one δ for every query, as `[data] delta` gives
    deltas = {q.get("delta") for q in queries}
    if len(deltas) > 1:
        raise FieldError(
            "the page keeps one δ for every query (a plan file's [data] delta), and this plan's "
            "queries have different ones: give them one δ in the plan file (docs/sql.md, "
            '"Groups from the data")',
            field="data.delta",
            parameter=None,  # a rule of the page, not of a flag
        )
    if queries and (delta := next(iter(deltas))) is not None:
        doc["data"]["delta"] = text_of(delta)
    queries = [{k: v for k, v in q.items() if k != "delta"} for q in queries]
    sizes = [q.get("group_size") for q in queries]
    if sizes and sizes[0] is not None and all(n == sizes[0] for n in sizes):
        doc["data"]["group_size"] = text_of(sizes[0])  # one reference group size for all
        queries = [{k: v for k, v in q.items() if k != "group_size"} for q in queries]
    doc["columns"] = [
        {
            "name": name,
            "type": c["type"],
            "lower": text_of(c["lower"]) if "lower" in c else "",
            "upper": text_of(c["upper"]) if "upper" in c else "",
            "keys": list_text(c["keys"]) if "keys" in c else "",
            "bins": list_text(c["bins"]) if "bins" in c else "",
            "nulls": text_of(c["nulls"]) if "nulls" in c else "",
        }
        for name, c in structure["columns"].items()
    ]
    doc["queries"] = [_query_row(q) for q in queries]
    return doc


def _query_row(q: dict[str, Any]) -> dict[str, str]:
    how = next(h for h in HOW if h in q)
    row = {k: "" for k in QUERY_FIELDS}
    row.update(statistic=q["statistic"], how=how, value=text_of(q[how]))
    bins: dict[str, list[object]] = q.get("bins", {})
    if bins and list(bins) == q.get("by"):
        row["bins"] = list_text([e for edges in bins.values() for e in edges])
    elif bins:  # some of several `by` columns
        row["bins"] = "; ".join(f"{c}: {list_text(e)}" for c, e in bins.items())
    for k in ("column", "name", "method", "resolution", "group_size"):
        if k in q:
            row[k] = text_of(q[k])
    for k in ("by", "quantiles"):
        if k in q:
            row[k] = list_text(q[k])
    if q.get("grid_counts"):
        row["grid_counts"] = "true"
    return row


def document_from_toml(text: str, source: str | None) -> dict[str, Any]:
    """The page's document of a plan file's text (its own `source` is ignored: the command line
    fixes it); a :class:`FieldError` (field None) naming the line and key when the file breaks a
    rule."""
    try:
        workload = loads_workload(text, Path("plan.toml"), source or NO_SOURCE)
        return document_from_workload(workload)
    except ParameterError as exc:
        raise FieldError(str(exc), field=None, parameter=exc.parameter) from None
