"""The HTML report of a release: one self-contained file (docs/plans.md, "Outputs").

Each query gets a heading, its ε, confidence and notes, a table of its released values with ±,
and a bar chart with error bars (±) as inline SVG text (:mod:`snapdp.data.output.svg_chart`: no
matplotlib, no network). Everything shown is a function of the results (DESIGN §8.1).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Protocol

from snapdp._rational import exact_text
from snapdp.data.model.schema import Schema
from snapdp.data.output.results import QueryResult, _json_value
from snapdp.data.output.svg_chart import bar_chart
from snapdp.data.output.writers import _atomic


class PlanPreview(Protocol):
    """What the report reads of a plan's preview: the assumptions it printed (the planner's
    :class:`~snapdp.data.planner.preview.PlanPreview` is one; the report does not import the
    planner)."""

    @property
    def assumptions(self) -> Sequence[str]:
        """One sentence per assumption."""
        ...


__all__ = ["render_report", "write_report"]

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 1100px; color: #1d1d1f; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.92em; }
th, td { padding: 0.25em 0.8em; border-bottom: 1px solid #eee; text-align: right; }
th { background: #f4f5f7; } td.k, th.k { text-align: left; }
.meta { color: #555; font-size: 0.92em; } .notes { color: #555; font-size: 0.88em; }
.query { display: flex; gap: 2em; align-items: flex-start; flex-wrap: wrap; }
.chart svg { max-width: 560px; height: auto; }
"""


def _num(x: float | None) -> str:
    if x is None:
        return ""
    return f"{x:,.2f}" if abs(x) < 1e15 else f"{x:.4g}"


def _key_text(k: object) -> str:
    return str(_json_value(k))


def _labels(result: QueryResult) -> list[str]:
    out = []
    for row in result.rows:
        parts = [f"{c}={_key_text(k)}" for c, k in zip(result.key_columns, row.keys, strict=True)]
        if row.quantile is not None:
            parts.append(f"q={float(row.quantile):g}")
        out.append(", ".join(parts) or result.query.statistic)
    return out


def _chart(result: QueryResult, bounds: tuple[float, float] | None = None) -> str:
    """A horizontal bar chart of the values with ± error bars (points for quantiles), as inline
    SVG; ``bounds``: the value column's declared [L, U], where the error bars are cut (the true
    value lies in them)."""
    labels = _labels(result)
    values = [r.value for r in result.rows]
    below = [r.accuracy for r in result.rows]
    above = list(below)
    if bounds is not None:
        below = [max(0.0, min(e, v - bounds[0])) for e, v in zip(below, values, strict=True)]
        above = [max(0.0, min(e, bounds[1] - v)) for e, v in zip(above, values, strict=True)]
    quantiles = result.query.statistic == "quantiles"
    return bar_chart(
        labels, values, below, above,
        f"{result.query.statistic} (± at {result.confidence:g} confidence)",
        points=quantiles, limits=bounds if quantiles else None,
    )  # fmt: skip


def _table(result: QueryResult) -> str:
    quantiles = any(r.quantile is not None for r in result.rows)
    head = "".join(f'<th class="k">{html.escape(c)}</th>' for c in result.key_columns)
    if quantiles:
        head += '<th class="k">quantile</th>'
    head += "<th>value</th><th>±</th>"
    body = []
    for r in result.rows:
        cells = "".join(f'<td class="k">{html.escape(_key_text(k))}</td>' for k in r.keys)
        if quantiles:
            cells += f'<td class="k">{"" if r.quantile is None else f"{float(r.quantile):g}"}</td>'
        cells += f"<td>{_num(r.value)}</td><td>{_num(r.accuracy)}</td>"
        body.append(f"<tr>{cells}</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def render_report(
    results: Sequence[QueryResult],
    preview: PlanPreview | None = None,
    schema: Schema | None = None,
) -> str:
    """The report as one HTML document (styles and charts inline). With ``schema``, error bars
    of means and quantiles are cut at the value column's declared bounds."""
    total = sum((r.epsilon for r in results), Fraction(0))
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>snapdp release report</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>Release report</h1>",
        f'<p class="meta">{len(results)} queries, total ε spent = {exact_text(total)} '
        "(one ledger entry). Every value is within ± of the true value (after the declared "
        "clamping and contribution bounds) with the stated confidence. See docs/plans.md.</p>",
    ]
    if preview is not None and preview.assumptions:
        items = "".join(f"<li>{html.escape(a)}</li>" for a in preview.assumptions)
        parts.append(f'<p class="meta">The plan assumed:</p><ul class="meta">{items}</ul>')
    for i, r in enumerate(results, start=1):
        meta = f"ε = {exact_text(r.epsilon)}, confidence {r.confidence:g}"
        if r.delta:
            meta += f", δ = {r.delta:.3g}"
        if r.target_note is not None:
            meta += f" — <strong>{html.escape(r.target_note)}</strong>"
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in r.notes)
        parts += [
            f"<h2>{i}. {html.escape(r.label)}</h2>",
            f'<p class="meta">{meta}</p>',
            '<div class="query">',
            _table(r),
            f'<div class="chart">{_chart(r, _bounds(r, schema))}</div>',
            "</div>",
            f'<ul class="notes">{notes}</ul>' if notes else "",
        ]
    parts.append("</body></html>")
    return "\n".join(parts)


def _bounds(result: QueryResult, schema: Schema | None) -> tuple[float, float] | None:
    q = result.query
    if schema is None or q.column is None or q.statistic not in ("mean", "quantiles"):
        return None
    col = schema.column(q.column)
    if col.lower is None or col.upper is None:
        return None
    return float(col.lower), float(col.upper)


def write_report(
    results: Sequence[QueryResult],
    folder: str | Path,
    preview: PlanPreview | None = None,
    schema: Schema | None = None,
) -> Path:
    """Write ``report.html`` into ``folder`` (whole or not at all); returns its path."""
    html_text = render_report(results, preview, schema)
    return _atomic(Path(folder) / "report.html", html_text.encode("utf-8"))
