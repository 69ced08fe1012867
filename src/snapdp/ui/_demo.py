"""The demo table on the page: ``snapdp ui --demo`` opens snapdp's built-in synthetic table
(:mod:`snapdp.data.frontends.demo`: 100,000 made-up people, not real ones) without a source,
with its public facts declared and a few queries to start from (docs/ui.md, "Try it without
data")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from snapdp.data.frontends.demo import DEMO_BOUNDS, DEMO_KEYS, DEMO_ROWS, demo_table
from snapdp.ui._document import COLUMN_FIELDS, blank_document

__all__ = ["demo_document", "write_demo"]


def write_demo(folder: Path) -> Path:
    """The demo table as a Parquet file in ``folder`` (the server's private folder)."""
    import pyarrow.parquet as pq

    path = folder / "demo.parquet"
    pq.write_table(demo_table(), path)
    return path


def _column(name: str, kind: str, **fields: str) -> dict[str, str]:
    return {**{k: "" for k in COLUMN_FIELDS}, "name": name, "type": kind, **fields}


def demo_document() -> dict[str, Any]:
    """The demo's declaration (row count, bounds, keys: public facts of the synthetic table) and
    three queries: a count by sex, a mean income by region with a target ±, a median age."""
    doc = blank_document()
    doc["data"].update(total_epsilon="1", rows=str(DEMO_ROWS))
    lo, hi = DEMO_BOUNDS["age"]
    ilo, ihi = DEMO_BOUNDS["income"]
    doc["columns"] = [
        _column("age", "integer", lower=str(int(lo)), upper=str(int(hi))),
        _column("sex", "integer", keys=", ".join(DEMO_KEYS["sex"])),
        _column("income", "decimal", lower=str(int(ilo)), upper=str(int(ihi))),
        _column("region", "text", keys=", ".join(DEMO_KEYS["region"])),
    ]
    blank = doc["queries"][0]
    doc["queries"] = [
        {**blank, "statistic": "count", "by": "sex", "how": "epsilon", "value": "0.25"},
        {**blank, "statistic": "mean", "column": "income", "by": "region", "how": "accuracy",
         "value": "5000"},
        {**blank, "statistic": "quantiles", "column": "age", "quantiles": "0.5", "how": "weight",
         "value": "1"},
    ]  # fmt: skip
    return doc
