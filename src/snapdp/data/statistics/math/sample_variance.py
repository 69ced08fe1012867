"""Sample variance and sample standard deviation (SQL's VAR_SAMP and STDDEV_SAMP; docs/sql.md,
"Sample variance").

Both are post-processing of the three parts a population variance releases (Σw², Σw and the
count of values, :mod:`snapdp.data.statistics`): no extra ε. With ñ the noisy count and v̂ the
released population spread before any clamp (v̂ = (Â/ñ − (Ŝ/ñ)²)/4 in q's units; V = (U − L)²/4
is the largest population variance of values in [L, U]), the sample variance released is

    ŝ² = clamp(ñ/(ñ − 1) · v̂, 0, 2V)        for ñ > 1,

2V being the largest sample variance of two or more values in [L, U].

Its ± (docs/utility.md, "Variance and std"; docs/sql.md, "Sample variance") is the population
form's treatment with ñ − 1 in place of ñ: for every cell of n ≥ 2 values, exactly,

    (ñ − 1)·(ŝ² − s²) = Z_s − ñ·δ²,   Z_s = e_A − 2m·e_S + (m² − s²)·e_n

(w units, s² the sample variance of w), one combination of the three parts' errors with weights
1, |2m| ≤ 2W and |m² − s²| ≤ max(m², s²) ≤ 2W², bounded on the population form's events and
iterated from what is released (:func:`~snapdp.data.statistics.math.ratio_bound.sample_error`).
A row whose parts were clamped states the whole range 2V. Before any data is read the figure at
ñ is that bound at the public weights, (T_Z + T₁²/ñ)/(ñ − 1), capped at 2V: the iterations'
first step, so at least what a row with that ñ states (:func:`sample_accuracy`). The union-bound
figure min(c/ñ, V)·ñ/(ñ − 1) + V·a/((ñ − 1)·max(1, ñ − 1 − a)) that was once the smaller of
the two holds on another event (every part within its own ±) and no row states it, so it is no
longer a planning figure. A standard deviation's figure is :func:`root_figure` of its
variance's (|√x − √y| ≤ √|x − y|); a row states the distance from √ŝ² to the ends of √ of
[ŝ² − a, ŝ² + a], never more than that.

A cell of fewer than two values has no sample variance (DuckDB and BigQuery return NULL). The
release path cannot say which cells those are without reading the private count, so the rule
looks at the noisy count only: a cell whose ñ ≤ 1 gets V (the middle of [0, 2V]) with the whole
range 2V as its ± (for the std: √V, ± √(2V)), the same for every table.
"""

from __future__ import annotations

import math

__all__ = ["FALLBACK_NOTE", "root_figure", "sample_accuracy", "sample_value"]

FALLBACK_NOTE = (
    "sample forms divide by ñ − 1, ñ the noisy count of values (post-processing of the same "
    "released sums); a cell whose ñ is at most 1 has no sample variance and gets the middle of "
    "the possible range with the whole range as its ± (docs/sql.md, 'Sample variance')"
)


def _up(x: float) -> float:
    """x rounded up generously (a few ulps), as every stated bound."""
    return math.nextafter(x * (1 + 2**-50), math.inf)


def sample_accuracy(
    per_count: float, square: float, largest: float, n: float, *, root: bool
) -> float:
    """The planning ± of a sample variance (``root``: of a sample std) for a cell whose noisy
    count is ``n``: the combination at the public weights, (t + s/ñ)/(ñ − 1) with t =
    ``per_count`` and s = ``square`` (q's units), at most the whole range 2V (``largest`` is V;
    std: :func:`root_figure`, at most √(2V)); 2V when ñ <= 1 (module docstring)."""
    acc = 2 * largest
    if n > 1:
        acc = min(acc, _up(_up(per_count + _up(square / n)) / (n - 1)))
    if root:
        return min(_up(math.sqrt(2 * largest)), root_figure(acc))
    return acc


def root_figure(a: float) -> float:
    """The planning ± of a standard deviation whose variance's ± is ``a``: at least the ± a row
    states for every released variance v̂ (the larger distance from √v̂ to √ of the ends of
    [v̂ − a, v̂ + a], at most √a, rounded up as rows round it)."""
    if not a > 0:
        return 0.0
    root = math.sqrt(a)
    return _up(_up(max(root, a / root)) * (1 + 2**-40))


def sample_value(population: float, n: float, largest: float, *, root: bool) -> float:
    """The released sample variance (``root``: std) from the released population spread
    ``population`` (Â/ñ − (Ŝ/ñ)² in values squared: clamped or not, as the clamp into [0, 2V]
    comes last) and the noisy count ``n`` (module docstring)."""
    var = min(max(population * n / (n - 1), 0.0), 2 * largest) if n > 1 else largest
    return math.sqrt(var) if root else var
