"""Sensitivities and mechanism bounds of the data statistics (DESIGN §8).

**Neighbouring relation.** Two tables are neighbours when one is the other with one privacy unit
added or removed (a unit is a row, or all rows sharing a privacy-unit value), after each unit has
been cut to at most ``k`` rows. Under the optional "substitute" relation (one row per unit, the row
count n public) the neighbour replaces one unit's row by another.

**Exact sums.** Summing doubles is not exact, and the rounding error can break a sensitivity bound
(a known attack on floating-point DP sums). So every value is first clamped and turned into an
integer number of *quanta* q = round(v·10**s) (the double product rounded half to even: any
per-row rule would do; both engines use this one), then clamped again, exactly, to the integers
[L_q, U_q] = [⌈L·10**s⌉, ⌊U·10**s⌋], and the quanta are summed as integers (exact). The mechanism
runs in quanta, with integer sensitivity and bounds, and its output is multiplied by 10**-s
(post-processing). s is the largest number of decimals in 0..9 for which ``max_rows``·max(|L_q|,
|U_q|) stays below 2**62, so no sum can overflow an int64.

Sensitivities in quanta (add/remove one unit of at most k rows): count k; sum k·max(|L_q|, |U_q|).
Substitute (k = 1, n public): sum U_q − L_q; mean (U_q − L_q)/n with bounds [L_q, U_q].
Mechanism bounds from the public maximum row count N: count [0, N]; sum [N·min(L_q, 0),
N·max(U_q, 0)]. Releases outside them are clamped by the mechanism, which costs accuracy only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from snapdp.errors import ParameterError

__all__ = [
    "FixedPoint",
    "NoiseSpec",
    "count_spec",
    "fixed_point",
    "groups_touched",
    "substitute_mean_spec",
    "sum_spec",
]

_MAX_DECIMALS = 9
_INT_LIMIT = 1 << 62


@dataclass(frozen=True)
class FixedPoint:
    """A column's bounds in quanta of 10**-decimals: values are clamped to [lower_q, upper_q]."""

    decimals: int
    lower_q: int
    upper_q: int

    @property
    def quantum(self) -> Fraction:
        """10**-decimals, exactly."""
        return Fraction(1, 10**self.decimals)

    @property
    def magnitude(self) -> int:
        """max(|lower_q|, |upper_q|): the most one row can add to a sum, in quanta."""
        return max(abs(self.lower_q), abs(self.upper_q))


def fixed_point(column: str, lower: float, upper: float, max_rows: int) -> FixedPoint:
    """The finest decimal quantum keeping ``max_rows`` clamped values summable in an int64."""
    lo, hi = Fraction(lower), Fraction(upper)
    for decimals in range(_MAX_DECIMALS, -1, -1):
        scale = 10**decimals
        lower_q, upper_q = math.ceil(lo * scale), math.floor(hi * scale)
        if max_rows * max(abs(lower_q), abs(upper_q), 1) < _INT_LIMIT:
            if lower_q >= upper_q:
                break
            return FixedPoint(decimals, lower_q, upper_q)
    raise ParameterError(
        f"bounds [{lower!r}, {upper!r}] of column {column!r} with max_rows={max_rows} cannot be "
        "summed exactly in 64-bit integers at any precision from 1e-9 to 1: narrow the bounds, "
        "lower max_rows, or widen the bounds so they differ by at least 1"
    )


@dataclass(frozen=True)
class NoiseSpec:
    """One mechanism: ε, sensitivity and [lower, upper] in quanta; released value × ``unit``."""

    epsilon: Fraction
    sensitivity: int | Fraction
    lower: int
    upper: int
    unit: Fraction


def groups_touched(max_rows_per_unit: int, n_groups: int | None) -> int:
    """How many groups one unit can change: min(k, #groups) when grouped, else 1.

    A grouped release runs one mechanism per group; one unit changes at most this many of them
    (by at most the sensitivity each), so by composition over the groups it touches the release
    is ε-DP when each group gets ε / this number. With one row per unit it is 1 (parallel
    composition).
    """
    if n_groups is None:
        return 1
    return max(1, min(max_rows_per_unit, n_groups))


def count_spec(epsilon: Fraction, max_rows_per_unit: int, max_rows: int) -> NoiseSpec:
    """Count: Δ = k, bounds [0, N]."""
    return NoiseSpec(epsilon, max_rows_per_unit, 0, max_rows, Fraction(1))


def sum_spec(epsilon: Fraction, max_rows_per_unit: int, fp: FixedPoint, max_rows: int) -> NoiseSpec:
    """Clamped sum in quanta: Δ = k·max(|L_q|, |U_q|), bounds [N·min(L_q, 0), N·max(U_q, 0)]."""
    return NoiseSpec(
        epsilon,
        max_rows_per_unit * fp.magnitude,
        max_rows * min(fp.lower_q, 0),
        max_rows * max(fp.upper_q, 0),
        fp.quantum,
    )


def substitute_mean_spec(epsilon: Fraction, fp: FixedPoint, n: int) -> NoiseSpec:
    """Mean under "substitute one unit" with n public: Δ = (U_q − L_q)/n, bounds [L_q, U_q]."""
    return NoiseSpec(
        epsilon, Fraction(fp.upper_q - fp.lower_q, n), fp.lower_q, fp.upper_q, fp.quantum
    )
