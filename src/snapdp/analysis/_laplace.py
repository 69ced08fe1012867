"""The Laplace(0, s) law evaluated with MPFR: interval masses and piecewise-linear expectations.

All functions must be called inside ``_exact.working_precision(p)``; each result is computed with
a handful of correctly rounded operations at p bits. Masses are formed so that no catastrophic
cancellation occurs: on each side of 0 we subtract two exponentials of the same sign, and an
interval containing 0 is 1 minus two tails, each at most 1/2.

Endpoints are ``mpq``/``mpfr`` numbers or ``None`` for −∞ (as a lower end) and +∞ (as an upper
end). Used by :mod:`.distribution` (DESIGN §5) and :mod:`.comparison` (seed 000).
"""

from __future__ import annotations

from typing import Any

from snapdp import _exact
from snapdp._exact import mpfr, mpq

Real = Any  # an mpq or an mpfr (gmpy2 has no type stubs)
_HALF = mpq(1, 2)


def _e(t: Real, s: mpfr) -> mpfr:
    """exp(t/s)."""
    return _exact.exp(mpfr(t) / s)


def cdf(t: Real | None, s: mpfr) -> mpfr:
    """P(Y < t) (= P(Y <= t): the law is continuous)."""
    if t is None:
        return mpfr(1)
    if t < 0:
        return _HALF * _e(t, s)
    return 1 - _HALF * _e(-t, s)


def sf(t: Real | None, s: mpfr) -> mpfr:
    """P(Y >= t)."""
    if t is None:
        return mpfr(0)
    if t > 0:
        return _HALF * _e(-t, s)
    return 1 - _HALF * _e(t, s)


def mass(a: Real | None, b: Real | None, s: mpfr) -> mpfr:
    """P(a <= Y < b); 0 for an empty interval."""
    if a is None:
        return cdf(b, s)
    if b is None:
        return sf(a, s)
    if b <= a:
        return mpfr(0)
    if a >= 0:
        return _HALF * (_e(-a, s) - _e(-b, s))
    if b <= 0:
        return _HALF * (_e(b, s) - _e(a, s))
    return 1 - _HALF * _e(a, s) - _HALF * _e(-b, s)


def linear_expectation(alpha: Real, beta: Real, a: Real | None, b: Real | None, s: mpfr) -> mpfr:
    """E[(α + βY)·1{a <= Y < b}], in closed form.

    For y <= 0 the density is e^{y/s}/(2s), with primitive ½(α + βy − βs)e^{y/s}; for y >= 0 it is
    e^{−y/s}/(2s), with primitive −½(α + βy + βs)e^{−y/s}. Infinite ends contribute 0.
    """
    total = mpfr(0)
    # negative half: [a, min(b, 0)]
    hi = 0 if b is None or b > 0 else b
    if a is None or a < hi:
        top = _HALF * (alpha + beta * hi - beta * s) * _e(hi, s)
        bottom = mpfr(0) if a is None else _HALF * (alpha + beta * a - beta * s) * _e(a, s)
        total += top - bottom
    # positive half: [max(a, 0), b]
    lo = 0 if a is None or a < 0 else a
    if b is None or lo < b:
        top = mpfr(0) if b is None else -_HALF * (alpha + beta * b + beta * s) * _e(-b, s)
        bottom = -_HALF * (alpha + beta * lo + beta * s) * _e(-lo, s)
        total += top - bottom
    return total


def abs_linear_expectation(
    alpha: Real, beta: Real, a: Real | None, b: Real | None, s: mpfr
) -> mpfr:
    """E[|α + βY|·1{a <= Y < b}] for β > 0: split where α + βy changes sign."""
    y0 = -alpha / beta  # exact for two mpq, else rounded once at the working precision
    total = mpfr(0)
    # below the root α + βy < 0
    hi_neg = y0 if b is None or b > y0 else b
    if a is None or a < hi_neg:
        total -= linear_expectation(alpha, beta, a, hi_neg, s)
    lo_pos = y0 if a is None or a < y0 else a
    if b is None or lo_pos < b:
        total += linear_expectation(alpha, beta, lo_pos, b, s)
    return total


def abs_linear_tail(
    alpha: Real, beta: Real, t: Real, a: Real | None, b: Real | None, s: mpfr
) -> mpfr:
    """P(|α + βY| > t, a <= Y < b) for β > 0 and t >= 0."""
    upper_from = (mpfr(t) - alpha) / beta  # Y above this: α + βY > t
    lower_to = (-mpfr(t) - alpha) / beta  # Y below this: α + βY < −t
    total = mpfr(0)
    lo = upper_from if a is None or a < upper_from else a
    total += mass(lo, b, s)
    hi = lower_to if b is None or b > lower_to else b
    total += mass(a, hi, s)
    return total
