"""The HTML page of the utility report (:class:`snapdp.analysis.report.UtilityReport`): tables
of the key numbers, the glossary and the embedded figures, rendered from the report's data."""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from typing import Any, Protocol

from snapdp.analysis.comparison import RATIO_METRICS


class UtilityReport(Protocol):
    """What the page reads of :class:`snapdp.analysis.report.UtilityReport` (this module does
    not import the report, which imports it)."""

    @property
    def data(self) -> dict[str, Any]:
        """Every number of the report."""
        ...

    @property
    def figures(self) -> dict[str, bytes]:
        """PNG figures by name."""
        ...

    @property
    def captions(self) -> dict[str, str]:
        """A caption per figure."""
        ...


__all__ = ["render_html"]


# -- the page ---------------------------------------------------------------------------------

_STYLE = """
body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
table{border-collapse:collapse;margin:.5rem 0 1.2rem}
td,th{border:1px solid #ccc;padding:.2rem .5rem;text-align:right}th{background:#f3f3f3}
img{max-width:100%}figure{margin:1rem 0 2rem}
figcaption{font-size:.9rem;color:#444}.warn{background:#fff4e0;border-left:4px solid #e90;
padding:.4rem .8rem}.summary{font-size:1.25rem;line-height:1.5;background:#eef6ee;
border-left:4px solid #3a3;padding:.6rem 1rem}dt{font-weight:bold}dd{margin:0 0 .4rem 1.5rem}
td:first-child,th:first-child{text-align:left}
"""

_GLOSSARY = """<dl>
<dt>ε (epsilon)</dt><dd>the privacy parameter: smaller means more private and more noise.</dd>
<dt>Δ (sensitivity)</dt><dd>the most one person can change the statistic.</dd>
<dt>λ = Δ/ε</dt><dd>the scale of the textbook Laplace noise; λ′ is the snapping mechanism's,
a hair larger because its ε′ is a hair smaller than ε.</dd>
<dt>Λ·Δ (the grid)</dt><dd>snapping rounds every output to a multiple of this width (Λ is the
smallest power of two at least λ′/Δ), so the possible outputs do not depend on the data.</dd>
<dt>quantum</dt><dd>discrete Laplace releases multiples of this step; for counts it is 1.</dd>
<dt>B, B̃</dt><dd>B is half the width of [lower, upper]; B̃ = B/Δ.</dd>
<dt>p, η = 2<sup>−p</sup></dt><dd>the working precision of the exact arithmetic, in bits.</dd>
<dt>δ</dt><dd>the probability, bounded above, of outputs outside the ε guarantee (0 unless ε is
very large).</dd>
<dt>α, a(α), ±</dt><dd>with probability at least 1 − α the release is within ±a(α) of the true
value, for every true value in the bounds: the 95% ± is a(0.05).</dd>
<dt>MAE, RMSE, bias</dt><dd>the mean absolute error, root mean squared error and mean error for
one true value.</dd>
<dt>clamp</dt><dd>outputs are forced into [lower, upper]: it caps the error at the range, and
biases values near a bound.</dd>
</dl>"""


def _fmt(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.6g}"
    return html.escape(str(v))


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_fmt(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def render_html(report: UtilityReport) -> str:
    d = report.data
    inp, par = d["inputs"], d["parameters"]
    acc = d["accuracy_before_spending"]
    val = d["value"]
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        "<title>snapdp utility report</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>What a release is worth: snapping, discrete Laplace and textbook Laplace</h1>",
        f"<p class='summary'>{html.escape(d['summary'])}</p>",
        _flags_html(d["flags"]),
        "<h2>The three mechanisms side by side</h2>",
        _mechanisms_html(d),
        _figure_html(report, "three_mechanisms"),
        "<h2>Do they leak? Mironov's distinguisher</h2>",
        _attacks_html(d["attacks"]),
        "<h2>Terms used below</h2>",
        _GLOSSARY,
        "<h2>Details for specialists</h2>",
        "<p>All numbers are computed exactly from the output distribution of the ideal mechanism "
        "(see docs/utility.md), not by simulation; report.json holds every number shown.</p>",
        "<h2>Parameters</h2>",
        _table(
            ["ε", "Δ", "lower", "upper", "λ = Δ/ε", "λ′·Δ", "grid Λ·Δ", "Λ·Δ/λ", "B/λ", "p", "δ"],
            [
                [
                    inp["epsilon"],
                    inp["sensitivity"],
                    inp["lower"],
                    inp["upper"],
                    par["laplace_scale"],
                    par["snapping_scale"],
                    par["grid_spacing"],
                    par["grid_over_lambda"],
                    par["b_over_lambda"],
                    par["precision"],
                    par["delta"],
                ]
            ],
        ),
        "<h2>Accuracy before spending (independent of the data)</h2>",
        "<p>With probability at least 1 − α the release is within ± a of the true value, for "
        "every value in [lower, upper] (docs/mechanism.md).</p>",
        _table(
            ["α", "snapping a(α)", "textbook Laplace −λ·ln α"],
            [
                [r["alpha"], r["snapping_accuracy_bound"], r["laplace_quantile"]]
                for r in acc["rows"]
            ],
        ),
        f"<p>To guarantee the textbook Laplace mechanism's 95% error ({_fmt(acc['laplace_q95'])})"
        f" the snapping mechanism needs ε = {_fmt(acc['epsilon_for_laplace_q95'])} "
        f"({_fmt(acc['epsilon_price'])}× the budget).</p>",
        f"<h2>Errors for the value {_fmt(inp['value'])}</h2>",
        _table(
            ["", "bias", "MAE", "RMSE", "95% error", "99% error"],
            [
                [
                    "snapping (exact)",
                    *[val["snapping"][k] for k in ("bias", "mae", "rmse", "q95", "q99")],
                ],
                ["Laplace", *[val["laplace"][k] for k in ("bias", "mae", "rmse", "q95", "q99")]],
                [
                    "Laplace clamped to bounds",
                    *[val["laplace_clamped"][k] for k in ("bias", "mae", "rmse", "q95", "q99")],
                ],
                ["ratio snapping/Laplace", "", *[val["ratios"][k] for k in RATIO_METRICS]],
            ],
        ),
        f"<p>P(clamp binds) = {_fmt(val['binding_probability'])}; the listed probabilities sum "
        f"to {val['total_probability']!r} (truncated mass {_fmt(val['truncated_mass'])}).</p>",
        "<p class='warn'>The column “GetAccuracy (true value)” below uses the true value: it is an "
        "analysis tool and must never be published beside a release.</p>",
        _table(
            [
                "α",
                "a(α) bound",
                "GetAccuracy (true value)",
                "exact quantile",
                "simulated quantile",
                "P(|err| > a(α)) exact",
                "simulated fraction",
            ],
            [
                [
                    r["alpha"],
                    r["accuracy_bound"],
                    r["getaccuracy_true_value"],
                    r["exact_quantile"],
                    r["simulated_quantile"],
                    r["achieved_failure_probability"],
                    r["simulated_failure_fraction"],
                ]
                for r in d["coverage"]["rows"]
            ],
        ),
        "<h2>Distance between snapping and textbook Laplace on one draw (docs/utility.md)</h2>",
        _distance_html(d["distance_cases"]),
        "<h2>Bounds for a binding probability γ (docs/utility.md)</h2>",
        "<p>Bounds that keep P(clamp binds) <= γ for every value in the current [lower, upper]:"
        "</p>",
        _table(
            ["γ", "lower", "upper", "exact P(bind) at the ends"],
            [
                [r["gamma"], r["lower"], r["upper"], r["exact_binding_at_ends"]]
                for r in d["binding"]["bounds_for_gamma"]
            ],
        ),
        "<h2>Figures</h2>",
    ]
    for name in report.figures:
        if name not in _INLINE_FIGURES:
            parts.append(_figure_html(report, name))
    parts.append("</body></html>")
    return "\n".join(parts)


_INLINE_FIGURES = ("three_mechanisms",)  # shown next to their tables, not under "Figures"


def _figure_html(report: UtilityReport, name: str) -> str:
    if name not in report.figures:
        return ""
    b64 = base64.b64encode(report.figures[name]).decode("ascii")
    caption = html.escape(report.captions.get(name, name))
    return (
        f"<figure><img alt='{html.escape(name)}' src='data:image/png;base64,{b64}'>"
        f"<figcaption>{caption}</figcaption></figure>"
    )


def _flags_html(flags: Sequence[dict[str, Any]]) -> str:
    if not flags:
        return "<p>No warnings: the release is informative at these parameters.</p>"
    items = "".join(f"<li>{html.escape(f['message'])}</li>" for f in flags)
    return f"<div class='warn'><strong>Warnings</strong><ul>{items}</ul></div>"


_MECHANISM_NAMES = (
    ("snapping", "snapping (this library)"),
    ("discrete_laplace", "discrete Laplace"),
    ("textbook_laplace", "textbook Laplace (floating point)"),
)


def _mechanisms_html(d: dict[str, Any]) -> str:
    mech = d["mechanisms"]
    leaks = {a["mechanism"]: a["leaks"] for a in d["attacks"]}
    keys = {"snapping": "snapping", "discrete_laplace": "discrete Laplace"}
    rows = []
    for key, name in _MECHANISM_NAMES:
        m = mech[key]
        v = m["value_metrics"]
        leak = leaks.get(keys.get(key, "textbook Laplace"))
        rows.append(
            [
                name,
                m["accuracy95"],
                m["accuracy99"],
                v["mae"],
                v["q95"],
                v["q99"],
                "yes" if leak else "no",
            ]
        )
    disc = mech["discrete_laplace"]
    kind = "an integer-valued statistic" if disc["integer_valued"] else "a real-valued statistic"
    return (
        "<p>The ± holds for every true value in the bounds (shown before any budget is spent); "
        f"MAE and the 95%/99% errors are for the true value {_fmt(d['inputs']['value'])}. All "
        "three are clamped to the bounds. Discrete Laplace is computed for "
        f"{kind} on multiples of {_fmt(disc['quantum'])}.</p>"
        + _table(
            ["mechanism", "95% ±", "99% ±", "MAE", "95% error", "99% error", "leaks"],
            rows,
        )
    )


def _attacks_html(attacks: Sequence[dict[str, Any]]) -> str:
    rows = [
        [a["mechanism"], a["input0"], a["input1"], a["rate0"], a["rate1"], a["samples"]]
        for a in attacks
    ]
    return (
        "<p>From one output, the attacker asks “could the input have been x0?”. If some "
        "outputs of x1 are impossible under x0, the output itself reveals the input. Rates are "
        "the fraction of outputs that pass the test (seeded simulation, reproducible).</p>"
        + _table(["mechanism", "x0", "x1", "pass rate, x0", "pass rate, x1", "releases"], rows)
    )


def _distance_html(cases: dict[str, Any]) -> str:
    rows = []
    for entry in cases.values():
        for c in entry["cases"]:
            tail = ", ".join(f"{k}λ: {_fmt(v)}" for k, v in c["tail"].items())
            rows.append(
                [
                    entry["true_value"],
                    c["case"],
                    c["probability"],
                    c["expected_distance"],
                    c["seed_bound"],
                    c["seed_claim"],
                    c["supremum"],
                    tail,
                ]
            )
    return _table(
        [
            "true value",
            "case",
            "P(case)",
            "E[dist | case]",
            "published bound (Λ/2 form)",
            "published claim (λ form)",
            "exact sup",
            "P(dist > a | case)",
        ],
        rows,
    )
