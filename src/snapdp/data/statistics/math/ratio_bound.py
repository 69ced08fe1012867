"""The ± of a released ratio mean and population variance from the combined error of their parts
(docs/utility.md, "Means: deviations from the centre" and "Variance and std").

Units are those of the parts: w = 2q − L_q − U_q in [−W, W] per value (q in quanta), the parts
S = Σw (and A = Σw² for a variance) and the count n, each released by its own snapping mechanism
with an independent error e (never clamped: a part released at one of its bounds gets the whole
range instead, :func:`unclamped`). With ñ > 0 the noisy count:

* mean: m̂ − m = (e_S − m·e_n)/ñ for m = S/n, m̂ = Ŝ/ñ; the ± is T(M)/ñ, with T(c) the bound of
  :func:`~snapdp.data.statistics.math.sum_bound.combination_accuracy` for e_S + c·e_n at α
  (nondecreasing in c) and M >= |m| found from the released m̂ (below);
* variance: 4ñ(v̂ − v) = Z − ñ·δ², Z = e_A − 2m·e_S + (m² − σ²)·e_n, δ = m̂ − m, σ² = 4v the
  variance of w; |Z| <= T_Z at α − β and ñ|δ| <= T_1 at β = α/10 (a union of two events).

The unknown weights (|m|, σ²) are bounded from the released values on the same events: |m| <=
|m̂| + T(|m|)/ñ and σ² <= max(0, 4v̂) + |4(v̂ − v)|. Each right-hand side is nondecreasing in the
bounds, so starting from the public bounds (W, W²) and iterating keeps every iterate an upper
bound of the truth on the events, and every ± computed at an iterate holds there. Weights are
rounded up to multiples of 1/64 of their range (T is nondecreasing in them), which keeps the
cached bounds few.

Planning (before any data is read) evaluates the same bounds at the public worst-case weights,
the iterations' first step (|m| <= W, σ² <= W²): :func:`mean_plan` and :func:`variance_plan`.
A released row states the smallest iterate, so never more than these, and the planning figure
(``AccuracyStatement.at``) is exactly these, capped: the promise that a row with noisy count
ñ = n states at most the figure at n (a union bound holds on another event, so it is never the
figure; docs/utility.md, "Variance and std").
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from snapdp.data.statistics.math.sum_bound import NoiseKind, combination_accuracy

__all__ = [
    "mean_error",
    "mean_plan",
    "sample_error",
    "sample_plan",
    "unclamped",
    "variance_error",
    "variance_plan",
]

_STEPS = 64
_ITERATIONS = 8
_SECOND = 10  # β = α/10: the share of α for the mean's own error in a variance


def unclamped(value: float, lower: float, upper: float) -> bool:
    """Whether a released part is strictly inside its bounds (so it equals the open output of
    its mechanism: a clamped output is exactly the bound's double)."""
    return lower < value < upper


def _grid_up(x: float, top: float) -> float:
    """x rounded up to a multiple of top/64 (nondecreasing in x, never below it)."""
    return max(top * math.ceil(x * _STEPS / top) / _STEPS, x)


def _mean_bound(total: NoiseKind, count: NoiseKind, weight: float, width: float, a: float) -> float:
    return combination_accuracy(total, ((_grid_up(weight, width), count),), a)


def mean_error(
    kinds: Sequence[NoiseKind], alpha: float, n: float, total: float, width: float
) -> float:
    """A bound on |m̂ − m| (w units) holding with probability >= 1 − α, m̂ = clamp(total/n, ±W):
    kinds are (Σw, n)'s, n > 0 the noisy count, ``total`` the released Σw (module docstring)."""
    k_sum, k_count = kinds
    m_hat = abs(min(max(total / n, -width), width))
    x, best = width, math.inf
    for _ in range(_ITERATIONS):
        t = _mean_bound(k_sum, k_count, x, width, alpha)
        best = min(best, t / n)
        nxt = min(width, m_hat + t / n)
        if not nxt < x:
            break
        x = nxt
    return best


def variance_error(
    kinds: Sequence[NoiseKind], alpha: float, n: float, squares: float, total: float,
    width: float,
) -> float:  # fmt: skip
    """A bound on |v̂ − v| for the variance of w (w units squared, i.e. 4× the variance of q)
    holding with probability >= 1 − α, for v̂ = max(0, Â/ñ − (Ŝ/ñ)²) and its clamps into
    [0, W²] (module docstring); kinds are (Σw², Σw, n)'s, n > 0."""
    m1, m2 = total / n, squares / n
    spread = max(0.0, m2 - m1 * m1)
    return _spread_error(kinds, alpha, n, m1, spread, width, width * width, n)


def sample_error(
    kinds: Sequence[NoiseKind], alpha: float, n: float, squares: float, total: float,
    width: float,
) -> float:  # fmt: skip
    """A bound on |ŝ² − s²| for the sample variance of w (w units squared) holding with
    probability >= 1 − α for every cell of two or more values, ŝ² = ñ/(ñ − 1)·v̂ clamped into
    [0, 2W²] (v̂ as in :func:`variance_error`), n = ñ > 1: (ñ − 1)(ŝ² − s²) = Z_s − ñ·δ² with
    Z_s = e_A − 2m·e_S + (m² − s²)·e_n, and s² <= 2W² <= ŝ² + |ŝ² − s²| (docs/utility.md,
    "Variance and std")."""
    m1, m2 = total / n, squares / n
    w2 = width * width
    sample = min(2 * w2, max(0.0, m2 - m1 * m1) * n / (n - 1))
    return _spread_error(kinds, alpha, n, m1, sample, width, 2 * w2, n - 1)


def _spread_error(
    kinds: Sequence[NoiseKind], alpha: float, n: float, m1: float, spread: float,
    width: float, top: float, divisor: float,
) -> float:  # fmt: skip
    """The smallest iterate of (T_Z + T₁²/ñ)/``divisor``: the weights |m| <= x (from W) and
    the spread s (from ``top``, its public bound) re-bounded by |m̂| + T₁/ñ and ``spread`` (the
    released spread) + the error at each step (module docstring)."""
    k_sq, k_sum, k_count = kinds
    beta = alpha / _SECOND
    w2 = width * width
    x, s, best = width, top, math.inf
    for _ in range(_ITERATIONS):
        t1 = _mean_bound(k_sum, k_count, x, width, beta)
        c = _grid_up(max(x * x, s), w2)
        rest = ((_grid_up(2 * x, 2 * width), k_sum), (c, k_count))
        tz = combination_accuracy(k_sq, rest, alpha - beta)
        err = (tz + t1 * t1 / n) / divisor
        best = min(best, err)
        nx, ns = min(width, abs(m1) + t1 / n), min(top, spread + err)
        if not (nx < x or ns < s):
            break
        x, s = min(x, nx), min(s, ns)
    return best


def mean_plan(kinds: Sequence[NoiseKind], alpha: float, width: float) -> float:
    """T(W) (w units): the mean's error is at most T(W)/ñ at ``alpha`` for every table, the
    first iterate of :func:`mean_error` (a planning figure from public parameters only)."""
    k_sum, k_count = kinds
    return _mean_bound(k_sum, k_count, width, width, alpha)


def variance_plan(kinds: Sequence[NoiseKind], alpha: float, width: float) -> tuple[float, float]:
    """(T_Z, T₁) at the public weights (w units): |v̂ − v| <= (T_Z + T₁²/ñ)/ñ (w units squared)
    at ``alpha`` for every table, the first iterate of :func:`variance_error`."""
    k_sq, k_sum, k_count = kinds
    beta = alpha / _SECOND
    w2 = width * width
    t1 = _mean_bound(k_sum, k_count, width, width, beta)
    rest = ((_grid_up(2 * width, 2 * width), k_sum), (_grid_up(w2, w2), k_count))
    return combination_accuracy(k_sq, rest, alpha - beta), t1


def sample_plan(kinds: Sequence[NoiseKind], alpha: float, width: float) -> tuple[float, float]:
    """(T_Z, T₁) at the public weights of a sample variance (w units): |m| <= W and
    max(m², s²) <= 2W² (two values at −W and W), so |ŝ² − s²| <= (T_Z + T₁²/ñ)/(ñ − 1) at
    ``alpha`` for every table and ñ > 1, the first iterate of :func:`sample_error`."""
    k_sq, k_sum, k_count = kinds
    beta = alpha / _SECOND
    w2 = width * width
    t1 = _mean_bound(k_sum, k_count, width, width, beta)
    rest = ((_grid_up(2 * width, 2 * width), k_sum), (_grid_up(2 * w2, w2), k_count))
    return combination_accuracy(k_sq, rest, alpha - beta), t1
