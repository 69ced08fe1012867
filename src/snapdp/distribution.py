"""The exact output distribution of the snapping mechanism as implemented (docs/verification.md).

A function of the exact parameters only, below :mod:`snapdp.mechanism` (the mechanism's per-shift
certificate, :mod:`snapdp.shift`, uses it); :mod:`snapdp.verify.distribution` adds the
mechanism-level entry point :func:`~snapdp.verify.exact_distribution`.

Nothing of the mechanism is re-implemented here: the class of a draw (S, U*) is computed by the
core's own pure functions :func:`snapdp.snapping.noise` and :func:`snapdp.snapping.grid_index`,
then clamped as :func:`snapdp.snapping.output_from_index` clamps.

Why the result is exact:

* **Monotonicity.** For a fixed sign S and input x̃, Y = S·RN(λ′·RN(ln U*)) is monotone in U*
  (MPFR's correctly rounded log and product by λ′ > 0 are monotone, negation reverses), so
  k = ⌊(x̃ + Y)/Λ + 1/2⌋ and its clamp are monotone too: non-decreasing in U* for S = +1,
  non-increasing for S = −1. Positive doubles order like their bit patterns, so the draws giving
  one output form an interval of bit patterns [a, b].
* **Boundaries.** The first pattern b_v of the class ≥ v is located by a guess (the continuous
  inverse of the pipeline, computed in MPFR), then an exponential search and a bisection that only
  *evaluate the implementation*. Every boundary is certified by the two evaluations
  class(b_v − 1) < v <= class(b_v), so the guess affects speed, never the result.
* **Masses.** P(U* = u) = ulp_above(u)/(1 − 2**-1074) for every double u in (0, 1) (the subnormal
  pattern m = 0 is redrawn; see :mod:`snapdp.randomness`). The ulps of the patterns a..b add up to
  value(b + 1) − value(a) exactly, so each output's probability is an exact rational:
  Σ over signs of (1/2)·(value(b + 1) − value(a))/(1 − 2**-1074).
* **No grouping is needed.** U* >= 2**-1074 bounds |Y| by λ′·1074·ln 2 ≈ 744.4·λ′, so from one
  input at most ≈ 1489·λ′/Λ + 3 <= 1492 classes per sign are reachable, whatever B̃ is. Every
  reachable output is enumerated, centre and tails alike.

Outputs are identified by :data:`OutputLabel`: ``"lower"``/``"upper"`` for the clamped bounds and
the grid index k for interior outputs (two interior k never share a label even if their rounded
doubles coincided).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from snapdp import _exact
from snapdp._exact import mpfr, mpq
from snapdp.parameters import SnappingParameters
from snapdp.snapping import grid_index, noise, output_from_index

__all__ = [
    "ExactDistribution",
    "OutputLabel",
    "class_bounds",
    "exact_distribution_for",
    "output_label",
]

OutputLabel = str | int  # "lower", "upper", or an interior grid index k

FIRST_PATTERN = 1  # the smallest subnormal, 2**-1074
LAST_PATTERN = 0x3FEFFFFFFFFFFFFF  # the largest double below 1
_ONE_PATTERN = LAST_PATTERN + 1  # the bit pattern of 1.0
REDRAW_NORMALISER = 1 - mpq(1, 1) / mpq(2) ** 1074  # 1 − 2**-1074: P(U* != 0 pattern)


def pattern_value(pattern: int) -> float:
    """The double with bit pattern ``pattern`` (0 <= pattern <= the pattern of 1.0)."""
    return float(struct.unpack("<d", struct.pack("<Q", pattern))[0])


def value_pattern(u: float) -> int:
    """The bit pattern of a non-negative double."""
    return int(struct.unpack("<Q", struct.pack("<d", u))[0])


def class_bounds(params: SnappingParameters) -> tuple[int, int]:
    """(K_L, K_U): k <= K_L is clamped to ``lower``, k >= K_U to ``upper`` (DESIGN §2.6).

    K_L = ⌊−B̃/Λ⌋ is the largest k with kΛ <= −B̃; K_U = ⌈B̃/Λ⌉ the smallest with kΛ >= B̃.
    """
    ratio = params.bound / params.grid
    k_upper = -((-ratio.numerator) // ratio.denominator)  # ceil
    k_lower = (-ratio.numerator) // ratio.denominator  # floor of −ratio
    return int(k_lower), int(k_upper)


def output_label(params: SnappingParameters, k: int) -> OutputLabel:
    """The label of the output for grid index k (clamped as :func:`output_from_index` does)."""
    k_lower, k_upper = class_bounds(params)
    if k <= k_lower:
        return "lower"
    if k >= k_upper:
        return "upper"
    return k


@dataclass(frozen=True)
class ExactDistribution:
    """The exact distribution of one release: ``masses[label]`` is an exact rational (mpq).

    ``outputs[label]`` is the double the mechanism returns for that label. ``evaluations`` counts
    the evaluations of the implementation that the computation used.
    """

    parameters: SnappingParameters
    x_tilde: mpq
    masses: dict[OutputLabel, mpq]
    outputs: dict[OutputLabel, float]
    evaluations: int

    def total(self) -> mpq:
        """Σ of the masses: exactly 1 (checked in the tests)."""
        return sum(self.masses.values(), mpq(0))

    def support(self) -> frozenset[OutputLabel]:
        """The labels of outputs with positive probability."""
        return frozenset(label for label, mass in self.masses.items() if mass > 0)

    def sorted_labels(self) -> list[OutputLabel]:
        """Labels in increasing order of output."""
        return sorted(self.masses, key=lambda lab: self.outputs[lab])


class _SignSweep:
    """The oriented class g(pattern) for one sign: non-decreasing in the bit pattern of U*."""

    def __init__(self, params: SnappingParameters, x_tilde: mpq, sign: int) -> None:
        self.params = params
        self.x_tilde = x_tilde
        self.sign = sign
        self.k_lower, self.k_upper = class_bounds(params)
        self.evaluations = 0
        self._cache: dict[int, int] = {}

    def clamped(self, pattern: int) -> int:
        """The clamped grid index (K_L for lower, K_U for upper) of U* = pattern_value(pattern)."""
        self.evaluations += 1
        y = noise(self.params, self.sign, pattern_value(pattern))
        k = grid_index(self.params, self.x_tilde, y)
        return max(self.k_lower, min(self.k_upper, k))

    def oriented(self, pattern: int) -> int:
        """g(pattern): the clamped class, negated for S = −1 so that g is non-decreasing."""
        cached = self._cache.get(pattern)
        if cached is None:
            c = self.clamped(pattern)
            cached = c if self.sign > 0 else -c
            self._cache[pattern] = cached
        return cached

    def guess(self, v: int) -> int:
        """A pattern near the first one with oriented class >= v (speed only, not correctness).

        S = +1: k >= v iff Y >= (v − 1/2)Λ − x̃, i.e. U* >= exp(((v − 1/2)Λ − x̃)/λ′).
        S = −1: −k >= v iff x̃ + Y < (1/2 − v)Λ, i.e. U* > exp((x̃ − (1/2 − v)Λ)/λ′).
        """
        grid, x = self.params.grid, self.x_tilde
        if self.sign > 0:
            t = ((v - mpq(1, 2)) * grid - x) / self.params.scale
        else:
            t = (x - (mpq(1, 2) - v) * grid) / self.params.scale
        ctx = _exact.nearest_context(80)
        arg = ctx.exp(mpfr(t)) if t < 0 else mpfr(1)
        u = float(arg)
        if not u > 0:
            return FIRST_PATTERN
        if u >= 1:
            return LAST_PATTERN
        return value_pattern(u)

    def first_at_least(self, v: int, lo: int, hi: int) -> int:
        """The first pattern in (lo, hi] with oriented class >= v, knowing g(lo) < v <= g(hi).

        Exponential search from the guess narrows (lo, hi]; bisection finishes. Returns b with
        g(b − 1) < v <= g(b), both evaluated (directly or as the final bracket).
        """
        g = self.guess(v)
        if lo < g < hi:
            if self.oriented(g) >= v:
                hi = g
                step = 1
                while hi - step > lo:
                    probe = hi - step
                    if self.oriented(probe) >= v:
                        hi = probe
                        step *= 2
                    else:
                        lo = probe
                        break
            else:
                lo = g
                step = 1
                while lo + step < hi:
                    probe = lo + step
                    if self.oriented(probe) < v:
                        lo = probe
                        step *= 2
                    else:
                        hi = probe
                        break
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.oriented(mid) >= v:
                hi = mid
            else:
                lo = mid
        return hi

    def intervals(self) -> Iterator[tuple[int, int, int]]:
        """(clamped class, first pattern, one past the last pattern) for every reachable class.

        Invariant: g(start) = current; each boundary b satisfies g(b − 1) < current + 1 <= g(b).
        """
        g_last = self.oriented(LAST_PATTERN)
        start = FIRST_PATTERN
        current = self.oriented(FIRST_PATTERN)
        while current < g_last:
            b = self.first_at_least(current + 1, start, LAST_PATTERN)
            yield self._unoriented(current), start, b
            start, current = b, self.oriented(b)
        yield self._unoriented(current), start, _ONE_PATTERN

    def _unoriented(self, g: int) -> int:
        return g if self.sign > 0 else -g


def _interval_mass(start: int, stop: int) -> mpq:
    """Σ of ulp_above(u) over the patterns start..stop−1: value(stop) − value(start), exactly."""
    return _exact.exact_rational(pattern_value(stop)) - _exact.exact_rational(pattern_value(start))


def exact_distribution_for(
    params: SnappingParameters,
    x_tilde: mpq,
    progress: Callable[[int], None] | None = None,
) -> ExactDistribution:
    """The exact distribution for the normalised input ``x_tilde`` (see the module docstring)."""
    masses: dict[OutputLabel, mpq] = {}
    evaluations = 0
    half = mpq(1, 2) / REDRAW_NORMALISER
    for sign in (1, -1):
        sweep = _SignSweep(params, x_tilde, sign)
        for cls, start, stop in sweep.intervals():
            label = output_label(params, cls)
            masses[label] = masses.get(label, mpq(0)) + half * _interval_mass(start, stop)
            if progress is not None:
                progress(1)
        evaluations += sweep.evaluations
    outputs = {label: output_from_index(params, _representative(params, label)) for label in masses}
    return ExactDistribution(params, x_tilde, masses, outputs, evaluations)


def _representative(params: SnappingParameters, label: OutputLabel) -> int:
    k_lower, k_upper = class_bounds(params)
    if label == "lower":
        return k_lower
    if label == "upper":
        return k_upper
    assert isinstance(label, int)
    return label
