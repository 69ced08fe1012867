"""The report's chart of one result, written as SVG text directly (a millisecond per chart;
matplotlib took ~0.5 s per chart and ~1 s to import): horizontal bars (points for quantiles) with
± error bars, the keys as labels, a zero line, a few gridlines (docs/plans.md, "Outputs").
Everything drawn is a function of the released values and public parameters (DESIGN §8.1)."""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence

__all__ = ["bar_chart"]

_BLUE, _DARK, _GRID, _ZERO = "#4c78a8", "#333333", "#e5e5e5", "#999999"
_WIDTH, _ROW, _TOP, _BOTTOM = 600, 20, 12, 44
_FONT = 'font-family="system-ui, sans-serif"'


def bar_chart(
    labels: Sequence[str],
    values: Sequence[float],
    below: Sequence[float],
    above: Sequence[float],
    xlabel: str,
    *,
    points: bool = False,
    limits: tuple[float, float] | None = None,
) -> str:
    """An inline ``<svg>``: one row per label, a bar from 0 (a point with ``points``) at each
    value, error bars from value − below to value + above; ``limits``: the x range to show."""
    left = min(240, 12 + 6 * max((len(s) for s in labels), default=0))
    lo, hi = limits if limits is not None else _range(values, below, above)
    pad = (hi - lo) * 0.03
    lo, hi = (lo - pad if lo < 0 else lo), hi + pad
    ticks = _ticks(lo, hi)
    span = hi - lo if hi > lo else 1.0
    inner = _WIDTH - left - 32

    def x(v: float) -> float:
        return left + inner * (min(max(v, lo), hi) - lo) / span

    height = _TOP + _ROW * len(values) + _BOTTOM
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{height}" '
        f'viewBox="0 0 {_WIDTH} {height}" role="img">'
    ]
    bottom = _TOP + _ROW * len(values)
    for t in ticks:
        out.append(f'<line x1="{x(t):.1f}" y1="{_TOP}" x2="{x(t):.1f}" y2="{bottom}" '
                   f'stroke="{_GRID}" stroke-width="0.6"/>')  # fmt: skip
        out.append(f'<text x="{x(t):.1f}" y="{bottom + 14}" font-size="10" {_FONT} '
                   f'text-anchor="middle">{_tick_text(t)}</text>')  # fmt: skip
    if lo <= 0 <= hi:
        out.append(f'<line x1="{x(0):.1f}" y1="{_TOP}" x2="{x(0):.1f}" y2="{bottom}" '
                   f'stroke="{_ZERO}" stroke-width="0.8"/>')  # fmt: skip
    for i, (label, v, b, a) in enumerate(zip(labels, values, below, above, strict=True)):
        out.extend(_row(i, label, v, b, a, x, points, left))
    out.append(f'<text x="{left + inner / 2:.1f}" y="{height - 8}" font-size="11" {_FONT} '
               f'text-anchor="middle">{html.escape(xlabel)}</text></svg>')  # fmt: skip
    return "".join(out)


def _row(
    i: int,
    label: str,
    v: float,
    b: float,
    a: float,
    x: Callable[[float], float],
    points: bool,
    left: int,
) -> list[str]:
    mid = _TOP + _ROW * i + _ROW / 2
    out = [f'<text x="{left - 6}" y="{mid + 3.5:.1f}" font-size="10" {_FONT} '
           f'text-anchor="end">{html.escape(label)}</text>']  # fmt: skip
    if not math.isfinite(v):
        return out
    if points:
        out.append(f'<circle cx="{x(v):.1f}" cy="{mid:.1f}" r="3.5" fill="{_BLUE}"/>')
    else:
        x0, x1 = sorted((x(0.0), x(v)))
        out.append(f'<rect x="{x0:.1f}" y="{mid - 7:.1f}" width="{x1 - x0:.1f}" height="14" '
                   f'fill="{_BLUE}"/>')  # fmt: skip
    if math.isfinite(a) and math.isfinite(b) and (a > 0 or b > 0):
        e0, e1 = x(v - b), x(v + a)
        caps = f"M{e0:.1f} {mid - 4:.1f}V{mid + 4:.1f}M{e1:.1f} {mid - 4:.1f}V{mid + 4:.1f}"
        out.append(f'<path d="M{e0:.1f} {mid:.1f}H{e1:.1f}{caps}" stroke="{_DARK}" fill="none"/>')
    return out


def _range(
    values: Sequence[float], below: Sequence[float], above: Sequence[float]
) -> tuple[float, float]:
    ends = [0.0]
    for v, b, a in zip(values, below, above, strict=True):
        ends += [e for e in (v - b, v + a, v) if math.isfinite(e)]
    return min(ends), max(ends)


def _ticks(lo: float, hi: float) -> list[float]:
    """Three to six round gridline values within [lo, hi]."""
    span = hi - lo
    if not span > 0 or not math.isfinite(span):
        return [lo]
    raw = span / 5
    step = 10 ** math.floor(math.log10(raw))
    step *= next(m for m in (1, 2, 5, 10) if m * step >= raw)
    first, last = math.ceil(lo / step - 1e-9), math.floor(hi / step + 1e-9)
    return [k * step for k in range(first, last + 1)]


def _tick_text(t: float) -> str:
    if t == 0:
        return "0"
    return f"{t:,.0f}" if abs(t) >= 1000 else f"{t:g}"
