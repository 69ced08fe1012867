"""The discrete Laplace (two-sided geometric) mechanism as a third baseline, in closed form.

For comparison only: snapdp does not release through it. The mechanism releases
``clamp(γ·(n + Z), lower, upper)`` where γ is the *quantum*, n = round(x/γ) (ties toward +∞) the
statistic on the quantised scale, and Z an integer with

    P(Z = k) = (1 − q)/(1 + q) · q^|k|,   q = exp(−ε/m),   m = ⌈Δ/γ⌉

(m is the sensitivity on the quantised scale: |round(x/γ) − round(x′/γ)| <= ⌈Δ/γ⌉ whenever
|x − x′| <= Δ). Its outputs are multiples of γ whatever x is, so the set of possible outputs does
not depend on the input and the attacks on floating-point Laplace find nothing (docs/utility.md).
The clamp to [lower, upper] is post-processing; it is applied so that the three mechanisms are
compared on the same bounds.

**The quantum.** For an integer-valued statistic (a count, a sum of integers) with integer Δ the
natural quantum is 1 and n = x: no rounding (``integer_valued``). A real-valued statistic must
declare a precision γ; rounding it to γ adds an offset r = γ·n − x in (−γ/2, γ/2].

**Closed forms** (every sum below is geometric): P(Z >= K) = q^K/(1 + q) for K >= 0, and
Σ_{k>=a} k^j·q^k for j = 0, 1, 2 in closed form, so every metric — bias, MAE, RMSE, the tail
P(|err| > a), the 95%/99% error quantiles — is a finite expression evaluated with MPFR at
``precision`` bits (default 256, raised for small ε/m so that 1 − q keeps its digits). The data-
independent ± (:func:`discrete_accuracy`) is exact: for an integer-valued statistic the smallest
γ·k with P(|Z| > k) = 2q^{k+1}/(1 + q) <= α; for a real-valued one the worst case over the offset
r, which is q^n at a = γ·n and 2q^{n+1}/(1 + q) at a = γ·(n + ½). Both are capped at
upper − lower (the clamp), and one ulp of the larger bound is added when some output is not a
double (:func:`output_rounding`).
"""

from __future__ import annotations

import math

from msgspec import Struct

from snapdp import _exact
from snapdp._exact import mpfr, mpq
from snapdp._validation import Number, check_finite, check_positive_finite, check_probability
from snapdp.analysis.metrics import QUANTILE_LEVELS, ErrorMetrics
from snapdp.errors import ParameterError

__all__ = [
    "DiscreteLaplace",
    "discrete_accuracy",
    "discrete_laplace",
    "discrete_metrics",
    "discrete_output_probabilities",
    "discrete_pmf",
    "discrete_tail",
]

DEFAULT_PRECISION = 256
MAX_UNITS = 1 << 40  # the largest Δ/quantum analysed


class DiscreteLaplace(Struct, frozen=True):
    """The exact parameters of the discrete Laplace baseline (module docstring).

    ``units``: m = ⌈Δ/γ⌉; ``integer_valued``: the statistic is a multiple of γ (no rounding).
    """

    epsilon: mpq
    sensitivity: mpq
    quantum: mpq
    units: int
    lower: mpq
    upper: mpq
    integer_valued: bool
    precision: int

    def q(self) -> mpfr:
        """q = exp(−ε/m), rounded to nearest at ``precision`` bits."""
        with _exact.working_precision(self.precision):
            return _exact.exp(-mpfr(self.epsilon / self.units))

    def one_minus_q(self) -> mpfr:
        """1 − q = −expm1(−ε/m), without cancellation."""
        import gmpy2

        with _exact.working_precision(self.precision):
            return -gmpy2.expm1(-mpfr(self.epsilon / self.units))


def discrete_laplace(
    epsilon: Number,
    sensitivity: Number,
    lower: Number,
    upper: Number,
    quantum: Number | None = None,
    *,
    precision: int = DEFAULT_PRECISION,
) -> DiscreteLaplace:
    """The discrete Laplace baseline at ε, Δ, [lower, upper] on the quantum γ.

    ``quantum`` None: γ = 1 for an integer Δ (an integer-valued statistic, no rounding), else
    γ = Δ (a real-valued statistic rounded to multiples of Δ). A given quantum is treated as the
    declared precision of a real-valued statistic (rounding offsets included).
    """
    eps = _exact.exact_rational(check_positive_finite("epsilon", epsilon))
    sens = _exact.exact_rational(check_positive_finite("sensitivity", sensitivity))
    lo = _exact.exact_rational(check_finite("lower", lower))
    hi = _exact.exact_rational(check_finite("upper", upper))
    if not lo < hi:
        raise ParameterError(f"`lower` must be < `upper`, not lower={lower!r}, upper={upper!r}")
    if quantum is None:
        integer_valued = sens.denominator == 1
        gamma = mpq(1) if integer_valued else sens
    else:
        gamma = _exact.exact_rational(check_positive_finite("quantum", quantum))
        integer_valued = False
    ratio = sens / gamma
    if ratio > MAX_UNITS:
        raise ParameterError(
            f"`quantum` must be at least sensitivity·2**-40 (the analysis sums over Δ/quantum "
            f"steps), not {quantum!r}",
            parameter="quantum",
        )
    units = -((-int(ratio.numerator)) // int(ratio.denominator))  # ⌈Δ/γ⌉
    # 1 − q ≈ ε/m: keep `precision` significant bits of it
    small = max(0, -_exact.ceil_log2(eps / units))
    return DiscreteLaplace(eps, sens, gamma, units, lo, hi, integer_valued, precision + small)


def discrete_pmf(dl: DiscreteLaplace, k: int) -> mpfr:
    """P(Z = k) = (1 − q)/(1 + q)·q^|k| (the noise on the quantised scale)."""
    with _exact.working_precision(dl.precision):
        q = dl.q()
        return dl.one_minus_q() / (1 + q) * q ** abs(int(k))


def _at_least(dl: DiscreteLaplace, q: mpfr, k: int) -> mpfr:
    """P(Z >= k): q^k/(1 + q) for k >= 0, else 1 − q^(1−k)/(1 + q)."""
    if k >= 0:
        return q**k / (1 + q)
    return 1 - q ** (1 - k) / (1 + q)


def discrete_tail(dl: DiscreteLaplace, k: int) -> mpfr:
    """P(|Z| > k) = 2·q^{k+1}/(1 + q) for k >= 0 (1 for k < 0)."""
    if k < 0:
        return mpfr(1)
    with _exact.working_precision(dl.precision):
        q = dl.q()
        return 2 * q ** (int(k) + 1) / (1 + q)


def _smallest_k(dl: DiscreteLaplace, q: mpfr, alpha: float) -> int:
    """The smallest integer k >= 0 with 2q^{k+1}/(1 + q) <= alpha."""
    guess = math.ceil(float(_exact.log(alpha * (1 + q) / 2) / _exact.log(q))) - 1
    k = max(guess - 2, 0)
    while 2 * q ** (k + 1) / (1 + q) > alpha:
        k += 1
    while k > 0 and 2 * q**k / (1 + q) <= alpha:
        k -= 1
    return k


def discrete_accuracy(dl: DiscreteLaplace, alpha: float) -> float:
    """The ±a with P(|output − x| > a) <= alpha for every x in [lower, upper], rounded up.

    Exact (module docstring): γ·k for an integer-valued statistic; for a real-valued one, γ·n or
    γ·(n + ½), whichever is smaller and meets alpha in the worst case over the rounding offset.
    Capped at upper − lower.
    """
    a_prob = check_probability("alpha", alpha)
    with _exact.working_precision(dl.precision):
        q = dl.q()
        k = _smallest_k(dl, q, a_prob)
        if dl.integer_valued:
            units = mpq(k)
        else:
            # a = γ·(k + ½) meets alpha (tail 2q^{k+1}/(1+q)); a = γ·n needs q^n <= alpha
            n = k
            while n > 0 and q ** (n - 1) <= a_prob:
                n -= 1
            while q**n > a_prob:
                n += 1
            units = min(mpq(n), mpq(2 * k + 1, 2))
    total = min(units * dl.quantum + output_rounding(dl), dl.upper - dl.lower)
    return float(_exact.round_up(total, 53))


def output_rounding(dl: DiscreteLaplace) -> mpq:
    """0 when every multiple of γ in [lower, upper] is a double (γ = 2**e·odd with
    max(|lower|, |upper|) <= 2**(e + 53)), else one ulp of the larger bound: the outputs are
    compared as doubles, like the other two mechanisms'. (Every multiple γ·k = odd·k·2**e with
    |odd·k| <= 2**53 is a double.)"""
    largest = max(abs(dl.lower), abs(dl.upper))
    den = int(dl.quantum.denominator)
    if den & (den - 1) == 0:
        num = int(dl.quantum.numerator)
        e = (num & -num).bit_length() - 1 - (den.bit_length() - 1)
        if largest <= mpq(2) ** (e + 53):
            return mpq(0)
    return _exact.exact_rational(math.ulp(_exact.rational_to_float(largest)))


def _round_half_up(t: mpq) -> int:
    """⌊t + ½⌋."""
    s = t + mpq(1, 2)
    return int(s.numerator) // int(s.denominator)


def _floor(t: mpq) -> int:
    return int(t.numerator) // int(t.denominator)


def _ceil(t: mpq) -> int:
    return -_floor(-t)


class _Setting(Struct, frozen=True):
    """One true value on the quantised scale: error(k) = clamp(γ·k + r, A, B)."""

    gamma: mpq
    r: mpq
    a_end: mpq  # A = lower − x (<= 0)
    b_end: mpq  # B = upper − x (>= 0)
    k_low: int  # the error is A for k <= k_low
    k_high: int  # the error is B for k >= k_high


def _setting(dl: DiscreteLaplace, value: Number) -> _Setting:
    x = _exact.exact_rational(check_finite("value", value))
    x = min(max(x, dl.lower), dl.upper)  # a value outside the bounds: analysed as clamped first
    n = _round_half_up(x / dl.quantum)
    g = dl.quantum
    r = g * n - x
    a_end, b_end = dl.lower - x, dl.upper - x
    return _Setting(g, r, a_end, b_end, _floor((a_end - r) / g), _ceil((b_end - r) / g))


def _sums(q: mpfr, one_minus_q: mpfr, a: int, b: int | None) -> tuple[mpfr, mpfr, mpfr]:
    """(Σ q^|k|, Σ k·q^|k|, Σ k²·q^|k|) over a <= k <= b (b None: ∞), by geometric closed forms."""

    def tails(a0: int) -> tuple[mpfr, mpfr, mpfr]:  # Σ_{k>=a0} k^j q^k, a0 >= 0
        qa = q**a0
        t0 = qa / one_minus_q
        t1 = qa * (q / one_minus_q**2 + a0 / one_minus_q)
        t2 = qa * (
            q * (1 + q) / one_minus_q**3 + 2 * a0 * q / one_minus_q**2 + a0 * a0 / one_minus_q
        )
        return t0, t1, t2

    def nonneg(lo: int, hi: int | None) -> tuple[mpfr, mpfr, mpfr]:
        if hi is not None and hi < lo:
            return mpfr(0), mpfr(0), mpfr(0)
        x0, x1, x2 = tails(lo)
        if hi is None:
            return x0, x1, x2
        y0, y1, y2 = tails(hi + 1)
        return x0 - y0, x1 - y1, x2 - y2

    s0, s1, s2 = mpfr(0), mpfr(0), mpfr(0)
    if b is None or b >= 0:
        p0, p1, p2 = nonneg(max(a, 0), b)
        s0, s1, s2 = s0 + p0, s1 + p1, s2 + p2
    if a < 0:  # k in [a, min(b, −1)] ↔ j = −k in [max(−b, 1), −a]
        lo = 1 if b is None else max(-b, 1)
        m0, m1, m2 = nonneg(lo, -a)
        s0, s1, s2 = s0 + m0, s1 - m1, s2 + m2
    return s0, s1, s2


def _tail_at(dl: DiscreteLaplace, s: _Setting, q: mpfr, a: mpq) -> mpfr:
    """P(|error| > a) for a >= 0."""
    total = mpfr(0)
    if a < s.b_end:  # γk + r > a
        total += _at_least(dl, q, _floor((a - s.r) / s.gamma) + 1)
    if -a > s.a_end:  # γk + r < −a
        total += _at_least(dl, q, 1 - _ceil((-a - s.r) / s.gamma))
    return total


def _quantile(dl: DiscreteLaplace, s: _Setting, q: mpfr, level: float) -> mpq:
    """The smallest |error| value a (or 0) with P(|error| > a) <= level, exactly."""
    if _tail_at(dl, s, q, mpq(0)) <= level:
        return mpq(0)
    lo, hi = mpq(0), max(-s.a_end, s.b_end)  # tail(lo) > level >= tail(hi) = 0
    while hi - lo > s.gamma / 4:
        mid = (lo + hi) / 2
        if _tail_at(dl, s, q, mid) <= level:
            hi = mid
        else:
            lo = mid
    candidates = {v for v in (-s.a_end, s.b_end) if lo < v <= hi}
    for sign in (1, -1):  # |γk + r| = γj + sign·r
        j = _floor((lo - sign * s.r) / s.gamma) + 1
        while s.gamma * j + sign * s.r <= hi:
            candidates.add(s.gamma * j + sign * s.r)
            j += 1
    for v in sorted(candidates):
        if _tail_at(dl, s, q, v) <= level:
            return v
    return hi


def discrete_metrics(dl: DiscreteLaplace, value: Number) -> ErrorMetrics:
    """Bias, MAE, RMSE and the 95%/99% error quantiles for the true ``value``, exactly (closed
    forms; module docstring), each rounded once to a double (the quantiles rounded up)."""
    s = _setting(dl, value)
    with _exact.working_precision(dl.precision):
        q = dl.q()
        omq = dl.one_minus_q()
        c = omq / (1 + q)
        g, r = mpfr(s.gamma), mpfr(s.r)
        p_low = _at_least(dl, q, -s.k_low)  # P(k <= k_low)
        p_high = _at_least(dl, q, s.k_high)
        a_end, b_end = mpfr(s.a_end), mpfr(s.b_end)
        bias = a_end * p_low + b_end * p_high
        mae = -a_end * p_low + b_end * p_high
        mse = a_end * a_end * p_low + b_end * b_end * p_high
        k0 = _ceil(-s.r / s.gamma)  # γk + r >= 0 from k0 on
        for lo_k, hi_k, sign in (
            (s.k_low + 1, k0 - 1, -1),
            (max(k0, s.k_low + 1), s.k_high - 1, 1),
        ):
            if hi_k < lo_k:
                continue
            s0, s1, s2 = _sums(q, omq, lo_k, hi_k)
            first = g * s1 + r * s0
            bias += c * first
            mae += sign * c * first
            mse += c * (g * g * s2 + 2 * g * r * s1 + r * r * s0)
        rmse = _exact.sqrt(max(mse, mpfr(0)))
        q95 = _quantile(dl, s, q, QUANTILE_LEVELS[0])
        q99 = _quantile(dl, s, q, QUANTILE_LEVELS[1])
    return ErrorMetrics(
        bias=float(bias),
        mae=float(mae),
        rmse=float(rmse),
        q95=float(_exact.round_up(q95, 53)),
        q99=float(_exact.round_up(q99, 53)),
    )


def discrete_output_probabilities(
    dl: DiscreteLaplace, value: Number, max_points: int = 401
) -> tuple[list[float], list[float], float]:
    """(outputs, probabilities, listed mass): the most likely outputs for ``value`` — at most
    ``max_points`` interior multiples of γ centred on round(x/γ)·γ, plus the two bounds — with
    their probabilities (MPFR, rounded to doubles); the listed mass is their sum."""
    s = _setting(dl, value)
    half = max_points // 2
    lo_k, hi_k = max(s.k_low + 1, -half), min(s.k_high - 1, half)
    x = _exact.exact_rational(check_finite("value", value))
    x = min(max(x, dl.lower), dl.upper)
    outputs: list[float] = []
    probs: list[float] = []
    with _exact.working_precision(dl.precision):
        q = dl.q()
        c = dl.one_minus_q() / (1 + q)
        total = mpfr(0)
        ends = ((dl.lower, _at_least(dl, q, -s.k_low)), (dl.upper, _at_least(dl, q, s.k_high)))
        p_low = ends[0][1]
        outputs.append(_exact.rational_to_float(dl.lower))
        probs.append(float(p_low))
        total += p_low
        for k in range(lo_k, hi_k + 1):
            p = c * q ** abs(k)
            outputs.append(_exact.rational_to_float(x + s.gamma * k + s.r))
            probs.append(float(p))
            total += p
        outputs.append(_exact.rational_to_float(dl.upper))
        probs.append(float(ends[1][1]))
        total += ends[1][1]
    return outputs, probs, float(total)
