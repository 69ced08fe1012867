"""Keys nobody declared: which groups a release shows (docs/data.md, "Keys nobody declared").

A GROUP BY over a column without declared keys releases a snapped noisy count per key that occurs
in the data and shows a key only when that count is at least a public threshold T. This module
chooses T from the exact output distribution of the count's mechanism (:mod:`snapdp.distribution`),
never from the continuous Laplace tail.

Privacy (the proof is in docs/data.md). Let D′ be D plus one unit u. Keys of D are released in both
(their counts move by u's rows, which the count's own (ε, δ_snap) guarantee covers, and showing a
key is post-processing of its count). At most L0 keys are new in D′; each has a true count
c <= L∞ and is shown independently with probability p_c = P(M(c) >= T). On D that block is always
empty, so the two blocks differ in total variation by τ = 1 − Π(1 − p_c) <= 1 − (1 − p_L∞)^L0: a
(0, τ) pair. The basic composition of an (ε, δ_snap) and a (0, τ) mechanism on independent noise is
(ε, δ_snap + τ); we require τ <= δ, the δ asked, and report τ rounded up. With a privacy unit,
L∞ here is min(k, L∞) and L0 is min(k, L0): the count counts bounded rows, and the release makes
the bounding stable and the candidates the keys that keep a row (docs/data.md, "Privacy units").

Monotonicity (why c = L∞ is the worst one-unit key): for a fixed draw (S, U*) the output is
output_from_index(clamp(⌊(x̃ + Y)/Λ + 1/2⌋)) with x̃ = clamp((c − centre)/Δ): every step is
non-decreasing in c, so on a shared draw M(c) <= M(c′) for c <= c′, hence p_c <= p_c′ (a coupling
argument; the tests also check it on the exact distributions).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Context, Decimal
from fractions import Fraction

from snapdp._exact import exact_rational, mpq
from snapdp.data.statistics.types import Noise, num
from snapdp.distribution import (
    FIRST_PATTERN,
    LAST_PATTERN,
    REDRAW_NORMALISER,
    class_bounds,
    exact_distribution_for,
    pattern_value,
)
from snapdp.errors import ParameterError
from snapdp.parameters import SnappingParameters
from snapdp.snapping import normalize, snapped_output

__all__ = ["KeySelection", "key_selection", "shown_probability"]

_SHOWN_DIGITS = 3  # the reported δ: τ rounded up to this many significant digits (capped at δ)
_EXACT_POWER_LIMIT = 4096  # above this L0, τ is bounded by L0·p (union bound) instead of exactly
_DOCS = 'docs/data.md, "Keys nobody declared"'


@dataclass(frozen=True)
class KeySelection:
    """The public rule that decides which undeclared keys a release shows.

    Attributes:
        threshold: a key is shown iff its released (snapped, noisy) count is >= ``threshold``,
            a half-integer m − 1/2: the same decision for the grid value and for the integer
            count a release shows (the grid value rounded half up), "count >= m".
        delta: the δ the selection adds: τ = 1 − (1 − p)^L0 rounded up, never above the δ asked
            (p the probability that a key held by one unit is shown; exact rational).
        max_groups: L0, the keys one unit can add rows to.
        rows_per_key: L∞, the rows one unit adds to one key's count.
        key_probability: p = P(count mechanism's output >= threshold | true count = L∞),
            rounded up like ``delta``.
        parameters: the exact parameters of the count's mechanism (for :meth:`recall`).
    """

    threshold: float
    delta: Fraction
    max_groups: int
    rows_per_key: int
    key_probability: Fraction = Fraction(0)
    parameters: SnappingParameters | None = field(default=None, repr=False, compare=False)

    def shown(self, released_count: float) -> bool:
        """Whether a key whose released count is ``released_count`` is shown: the count's grid
        value as the mechanism output it, or that value rounded half up (the same decision);
        never a value changed by anything else (a fit with other counts), which the δ does not
        cover."""
        return released_count >= self.threshold

    def recall(self, rows: int) -> float:
        """P(a key whose true count is ``rows`` is shown) for the mechanism as implemented, exact
        (:func:`shown_probability`) and rounded to the nearest double."""
        if self.parameters is None:
            raise ParameterError("this key selection has no mechanism parameters", parameter="rows")
        return float(shown_probability(self.parameters, rows, self.threshold))

    def describe(self) -> str:
        """One public, data-free line for plans and outputs."""
        return (
            f"keys not declared: a key is shown only if its noisy count is at least "
            f"{_whole(self.threshold)} (its grid value at least {self.threshold:,}); "
            f"the keys one unit alone holds (at most {self.max_groups}, "
            f"{self.rows_per_key} row(s) each) are shown with probability <= "
            f"{_decimal(self.delta)} in all (the selection's δ)"
        )


def key_selection(
    noise: Noise, *, delta: Fraction, max_groups: int, rows_per_key: int
) -> KeySelection:
    """The threshold T = m − 1/2 for the smallest integer m with
    1 − (1 − P(M(L∞) >= T))^L0 <= ``delta``, computed on the exact output distribution of the
    count's mechanism (``noise``); see :func:`_threshold`.

    A δ outside (0, 1), L0 or L∞ below 1, and a δ too small for any threshold up to the count's
    upper bound are refused with a one-line ParameterError naming ``delta`` (or the bound).
    """
    _check(delta, max_groups, rows_per_key)
    params = noise.parameters()
    threshold, p = _threshold(
        params, rows_per_key, max_groups, mpq(delta.numerator, delta.denominator)
    )
    if threshold is None:
        raise ParameterError(
            f"delta = {_decimal(delta)} is too small for keys nobody declared: a key held by one "
            f"unit would be shown with probability above it at every noisy count up to the "
            f"count's upper bound {num(float(params.upper))}; raise delta or epsilon ({_DOCS})",
            parameter="delta",
        )
    tau = _composed(p, max_groups)
    return KeySelection(
        threshold=threshold,
        delta=min(delta, _round_up(tau)),
        max_groups=max_groups,
        rows_per_key=rows_per_key,
        key_probability=min(delta, _round_up(p)),
        parameters=params,
    )


# -- the threshold ------------------------------------------------------------------------------


def _check(delta: object, max_groups: object, rows_per_key: object) -> None:
    if not isinstance(delta, Fraction):
        raise ParameterError(
            f"delta = {delta} must be given as an exact fraction for keys nobody declared",
            parameter="delta",
        )
    if not 0 < delta < 1:
        raise ParameterError(
            f"delta = {_decimal(delta)} must be above 0 and below 1 for keys nobody declared "
            f"({_DOCS})",
            parameter="delta",
        )
    for name, v in (("max_groups", max_groups), ("rows_per_key", rows_per_key)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ParameterError(f"{name} = {v} must be a whole number >= 1", parameter=name)


def _input(params: SnappingParameters, rows: int) -> mpq:
    return normalize(params, rows)


@functools.lru_cache(maxsize=64)
def _outputs(params: SnappingParameters, x_tilde: mpq) -> tuple[tuple[float, mpq, int], ...]:
    """(output double, its exact mass, its largest grid index) for the normalised input
    ``x_tilde``, in increasing order of output. Outputs whose doubles coincide are merged: the
    released double is what the threshold compares. The clamped labels take the clamp indices."""
    dist = exact_distribution_for(params, x_tilde)
    k_lower, k_upper = class_bounds(params)
    merged: dict[float, tuple[mpq, int]] = {}
    for label, mass in dist.masses.items():
        value = dist.outputs[label]
        k = k_lower if label == "lower" else k_upper if label == "upper" else int(label)
        old_mass, old_k = merged.get(value, (mpq(0), k))
        merged[value] = (old_mass + mass, max(old_k, k))
    return tuple((v, m, k) for v, (m, k) in sorted(merged.items()))


def shown_probability(params: SnappingParameters, rows: int, threshold: float) -> mpq:
    """P(output >= ``threshold`` | true count ``rows``) for the mechanism as implemented, exact.

    For a fixed sign S the output is monotone in U* (non-decreasing for S = +1, non-increasing
    for S = −1; :mod:`snapdp.distribution`), so the draws that show the key are one run of bit
    patterns per sign, found by bisection on :func:`snapdp.snapping.snapped_output` itself; their
    ulp-weighted mass is value(end) − value(start), exactly. About 2·62 evaluations.
    """
    x = _input(params, rows)

    def shown(sign: int, pattern: int) -> bool:
        return snapped_output(params, x, sign, pattern_value(pattern)) >= threshold

    up_start = _first(lambda q: shown(1, q))  # S = +1: patterns up_start..LAST show it
    down_stop = _first(lambda q: not shown(-1, q))  # S = −1: patterns FIRST..down_stop − 1 do
    plus = 1 - exact_rational(pattern_value(up_start))
    minus = exact_rational(pattern_value(down_stop)) - exact_rational(pattern_value(FIRST_PATTERN))
    return (plus + minus) / 2 / REDRAW_NORMALISER


def _first(holds: Callable[[int], bool]) -> int:
    """The first bit pattern in [FIRST, LAST] where the non-decreasing predicate holds, or the
    pattern of 1.0 (LAST + 1) when it holds nowhere."""
    lo, hi = FIRST_PATTERN, LAST_PATTERN + 1
    while lo < hi:
        mid = (lo + hi) // 2
        if holds(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _composed(p: mpq, max_groups: int) -> mpq:
    """τ = 1 − (1 − p)^L0 exactly (L0·p, an upper bound, when L0 is very large)."""
    if max_groups > _EXACT_POWER_LIMIT:
        return min(mpq(1), max_groups * p)
    return 1 - (1 - p) ** max_groups


def _meets(p: mpq, max_groups: int, delta: mpq) -> bool:
    if max_groups * p <= delta:  # the union bound suffices (and is implied by nothing cheaper)
        return True
    if p > delta:
        return False
    return bool(_composed(p, max_groups) <= delta)


@functools.lru_cache(maxsize=256)
def _threshold(
    params: SnappingParameters, rows_per_key: int, max_groups: int, delta: mpq
) -> tuple[float | None, mpq]:
    """(T, P(M(L∞) >= T)) with T = m − 1/2 for the smallest integer m that qualifies, or
    (None, 1) when none does below the count's upper bound.

    The released COUNT is the grid value g rounded half up (docs/utility.md, "Integer counts"),
    so "count >= m" is the event g >= m − 1/2, and T = m − 1/2 decides the same for g and for
    its rounding. The qualifying events of the grid values are found first: v* the smallest
    output with an acceptable tail (the first grid value above the support, of tail 0, when
    even the top output fails), v′ the output just below it. Then m is the smallest integer with
    m − 1/2 > v′: {g >= m − 1/2} is contained in {g >= v*}, and m − 1 would take in v′.
    """
    values = _outputs(params, _input(params, rows_per_key))
    _, k_upper = class_bounds(params)
    found = values[-1][2] < k_upper  # the grid value above the support: shown with probability 0
    below = values[-1][0]
    tail = mpq(0)
    for i in range(len(values) - 1, 0, -1):
        tail += values[i][1]
        if not _meets(tail, max_groups, delta):
            break
        found, below = True, values[i - 1][0]
    if not found:
        return None, mpq(1)
    cut = Fraction(math.floor(Fraction(below) + Fraction(1, 2)) + 1) - Fraction(1, 2)
    if cut > Fraction(int(params.upper.numerator), int(params.upper.denominator)):
        return None, mpq(1)
    shown = sum((m for v, m, _k in values if Fraction(v) >= cut), mpq(0))
    return float(cut), shown


# -- shown numbers ------------------------------------------------------------------------------


def _round_up(q: mpq) -> Fraction:
    """q rounded up to :data:`_SHOWN_DIGITS` significant decimal digits, as an exact Fraction."""
    if q <= 0:
        return Fraction(0)
    exact = Fraction(int(q.numerator), int(q.denominator))
    ctx = Context(prec=_SHOWN_DIGITS, rounding=ROUND_CEILING)
    approx = ctx.divide(Decimal(exact.numerator), Decimal(exact.denominator))
    out = Fraction(approx)
    while out < exact:  # Decimal's division is correctly rounded; this only guards the claim
        approx = ctx.next_plus(approx)
        out = Fraction(approx)
    return out


def _whole(threshold: float) -> str:
    """m for the threshold m − 1/2, as an integer with thousands separators."""
    return f"{math.floor(threshold) + 1:,}"


def _decimal(x: object) -> str:
    if isinstance(x, Fraction):
        return f"{float(x):.3g}"
    return str(x)
