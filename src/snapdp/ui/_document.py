"""The page's document: its fields, its shape and how a typed field reads (docs/ui.md, "What the
page sends").

The page sends a *document*: every field exactly as typed (strings), never a path and never data::

    {"data": {"privacy_unit": "pid", "max_rows_per_unit": "2", "total_epsilon": "2", ...},
     "columns": [{"name": "age", "type": "integer", "lower": "0", "upper": "100",
                  "keys": "", "bins": ""}, ...],
     "queries": [{"statistic": "count", "column": "", "by": "sex", "bins": "", "quantiles": "",
                  "where": "", "how": "epsilon", "value": "0.5"}, ...]}

A number keeps the digits typed (a :class:`~decimal.Decimal`); a field that is not a number stays
text, so that the check that refuses it names it with the same words as ``snapdp plan``. Nothing
here reads the data source.
"""

from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

from snapdp._rational import format_rational
from snapdp._validation import SIZE_RULE, NumberSizeError, check_number_size
from snapdp.errors import ParameterError

__all__ = [
    "COLUMN_FIELDS",
    "DATA_FIELDS",
    "HOW",
    "QUERY_FIELDS",
    "FieldError",
    "blank_document",
    "check_shape",
    "integer",
    "items",
    "list_text",
    "number",
    "text_of",
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
    # kept for a loaded plan, not shown by the page (the CSV options: the owner's)
    "max_rows",
    "rows",
    "null_units",
    "encoding",
    "delimiter",
    "header",
    "column_names",
    "max_line_bytes",
    "dataset",
    "delta",  # groups from the data (docs/sql.md); kept, not shown by the page
)
COLUMN_FIELDS = ("name", "type", "lower", "upper", "keys", "bins", "nulls")
QUERY_FIELDS = (
    "statistic",
    "column",
    "by",
    "bins",
    "quantiles",
    "where",
    "how",
    "value",
    "group_size",
    "grid_counts",  # "true": a count keeps its grid value (docs/utility.md, "Integer counts")
    # kept for a loaded plan, not shown by the page
    "name",
    "method",
    "resolution",
)
HOW = ("epsilon", "accuracy", "weight")
INTEGER_FIELDS = (
    "max_rows_per_unit",
    "max_groups_per_unit",
    "max_rows_per_group",
    "group_size",
    "max_rows",
    "rows",
    "max_line_bytes",
)
TEXT_FIELDS = ("privacy_unit", "null_units", "encoding", "delimiter", "dataset")


class FieldError(ParameterError):
    """A field of the page breaks a rule: ``field`` names it (``"columns[0].lower"``,
    ``"query[2].value"``, ``"data.total_epsilon"``) or is None for the plan as a whole; the
    message is the plan loader's, without a file and line."""

    def __init__(self, message: str, *, field: str | None, parameter: str | None) -> None:
        super().__init__(message, parameter=parameter)
        self.field = field

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"message": str(self), "field": self.field, "parameter": self.parameter}


def blank_document() -> dict[str, Any]:
    """A document to start from: one count query."""
    return {
        "data": {k: "" for k in DATA_FIELDS},
        "columns": [],
        "queries": [{**{k: "" for k in QUERY_FIELDS}, "statistic": "count", "value": "1"}],
    }


def check_shape(doc: object) -> dict[str, Any]:
    """The document with every field a string (missing ones empty); a ParameterError on any
    other shape."""

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
        "columns": [fields(f"columns[{i}]", c, COLUMN_FIELDS) for i, c in enumerate(columns)],
        "queries": [fields(f"queries[{i}]", q, QUERY_FIELDS) for i, q in enumerate(queries)],
    }


def number(text: str, field: str) -> object:
    """A typed number as a Decimal keeping its digits; anything else as the text itself (the
    check it breaks then names the rule). A number beyond the size limits is a FieldError
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


def integer(text: str, field: str) -> object:
    """A typed whole number as an int (else as :func:`number` reads it)."""
    n = number(text, field)
    if (
        isinstance(n, Decimal)
        and n == n.to_integral_value()
        and "." not in text
        and "e" not in text.lower()
    ):
        return int(n)
    return n


def items(text: str, field: str) -> list[str]:
    """A list field: comma-separated (each item stripped), or a JSON list of strings for items
    that hold commas or spaces at their ends (``["a, b", " c"]``)."""
    if not text.strip():
        return []
    if text.strip().startswith("["):
        try:
            got = json.loads(text)
        except ValueError:
            got = None
        if not isinstance(got, list) or not all(isinstance(i, str) for i in got):
            raise FieldError(
                'a list in brackets must be a JSON list of strings, e.g. ["a, b", "c"]',
                field=field,
                parameter=field.rsplit(".", 1)[-1],
            )
        return got
    return [p.strip() for p in text.split(",")]


def text_of(x: object) -> str:
    """A value as the page shows it in a field."""
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, Fraction):
        return format_rational(x, max_digits=None)
    if hasattr(x, "isoformat"):
        return str(x.isoformat())
    return str(x)


def list_text(values: list[object]) -> str:
    """A list field's text: comma-separated when that reads back the same, else JSON."""
    texts = [text_of(i) for i in values]
    plain = all(t and t == t.strip() and "," not in t for t in texts)
    if plain and texts and not texts[0].startswith("["):
        return ", ".join(texts)
    return json.dumps(texts, ensure_ascii=False)
