"""How the source is read, as its owner said (docs/ui.md, "How the source is read").

The CSV options — ``header``, ``delimiter``, ``encoding``, ``column_names``, ``max_line_bytes`` —
decide what the header call sends and which lines a run counts as records, so they come from the
data owner only: the flags of ``snapdp ui`` over the plan file it started with. The page shows
them read-only; whatever its document says about them is replaced by the owner's before it is
planned, run, exported or answered (a page that claimed ``header = true`` for a headerless file
would otherwise get its first record back as column names).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from msgspec.structs import replace

from snapdp.data.model.schema import CsvOptions
from snapdp.ui._document import list_text, text_of

__all__ = ["CSV_FIELDS", "csv_json", "owner_csv", "with_owner_csv"]

#: The page document's ``data`` fields that only the owner sets.
CSV_FIELDS = ("encoding", "delimiter", "header", "column_names", "max_line_bytes")


def owner_csv(base: CsvOptions, given: Mapping[str, Any]) -> CsvOptions:
    """``base`` (the plan file's options, else the defaults) with the command line's ``given``
    over it; ``--header`` alone drops the plan's ``column_names`` (a header names the columns).
    A ParameterError naming the option when they do not fit together."""
    kw = dict(given)
    if kw.get("header") is True and "column_names" not in kw:
        kw["column_names"] = None
    return replace(base, **kw)


def _texts(options: CsvOptions) -> dict[str, str]:
    """The page's text of each option that differs from the default ("" for a default)."""
    default = CsvOptions()
    out = dict.fromkeys(CSV_FIELDS, "")
    for key in CSV_FIELDS:
        value = getattr(options, key)
        if value != getattr(default, key):
            out[key] = list_text(list(value)) if isinstance(value, tuple) else text_of(value)
    return out


def with_owner_csv(doc: object, options: CsvOptions) -> object:
    """The page's document with the owner's CSV options in place of its own (anything that is
    not a document with a ``data`` object is returned as it is, for the shape check to refuse)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), dict):
        return doc
    return {**doc, "data": {**doc["data"], **_texts(options)}}


def csv_json(options: CsvOptions) -> dict[str, Any]:
    """The owner's options, for the page to show read-only."""
    return {
        "header": options.header,
        "delimiter": options.delimiter,
        "encoding": options.encoding,
        "column_names": None if options.column_names is None else list(options.column_names),
    }
