"""Error metrics, exactly from the finite output distribution (DESIGN §5); Laplace in closed form.

The error of a release is output − x (data units). For the snapping mechanism every metric is a
finite sum over :class:`~snapdp.analysis.distribution.OutputDistribution`, computed with MPFR at the
distribution's precision and rounded once to a double. The mass left out by the distribution's
truncation (< 2**-128 by default) is accounted for conservatively: tail probabilities and
quantiles assume it lies beyond every threshold, and ``ErrorMetrics.truncation_bound`` bounds its
effect on the moments.

For the textbook Laplace mechanism (λ = Δ/ε, no clamp) the error is Laplace(λ): bias 0, MAE λ,
RMSE √2·λ, P(|err| > a) = e^{−a/λ}, and the (1 − α) quantile of |err| is −λ·ln α (seed 000).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from msgspec import Struct

from snapdp import _exact
from snapdp._exact import mpfr, mpq
from snapdp._records import as_dict
from snapdp._validation import Number, check_positive_finite, check_probability, check_real
from snapdp.analysis.distribution import OutputDistribution
from snapdp.errors import ParameterError

__all__ = [
    "ErrorMetrics",
    "clamped_laplace_metrics",
    "error_metrics",
    "error_quantile",
    "laplace_metrics",
    "laplace_quantile",
    "laplace_tail",
    "mixture_metrics",
    "tail_probability",
]

QUANTILE_LEVELS = (0.05, 0.01)  # α of the 95% and 99% error quantiles


class ErrorMetrics(Struct, frozen=True):
    """Summary of the error output − x (data units).

    ``q95``/``q99``: the smallest a with P(|err| > a) <= 0.05 / 0.01. ``truncation_bound``: a bound
    on the change of ``mae`` and of ``rmse**2`` that the truncated mass could make (0 for Laplace).
    """

    bias: float
    mae: float
    rmse: float
    q95: float
    q99: float
    truncation_bound: float = 0.0

    def as_dict(self) -> dict[str, float]:
        """The metrics as a JSON-ready dict."""
        return as_dict(self)


def _abs_errors(dist: OutputDistribution) -> list[tuple[mpq, mpfr]]:
    """(|err|, probability) pairs sorted by |err|, equal errors merged."""
    return _merge_abs(list(zip(dist.errors(), dist.probabilities, strict=True)), dist.precision)


def _merge_abs(pairs: list[tuple[mpq, mpfr]], precision: int) -> list[tuple[mpq, mpfr]]:
    merged: dict[mpq, mpfr] = {}
    with _exact.working_precision(precision):
        for err, p in pairs:
            key = abs(err)
            merged[key] = merged.get(key, mpfr(0)) + p
    return sorted(merged.items())


def _quantile(
    pairs: list[tuple[mpq, mpfr]], truncated: mpfr, level: float, precision: int
) -> float:
    """Smallest a among the |errors| (and 0) with P(|err| > a) + truncated <= level; rounded up."""
    with _exact.working_precision(precision):
        above = truncated + sum((p for _, p in pairs), mpfr(0))  # P(|err| >= 0)
        candidate = mpq(0)
        for err, p in pairs:
            if above <= level:
                break
            above -= p
            candidate = err
    return float(_exact.round_up(candidate, 53))


def _metrics(
    pairs: list[tuple[mpq, mpfr]], truncated: mpfr, max_error: mpq, precision: int
) -> ErrorMetrics:
    with _exact.working_precision(precision):
        bias = mpfr(0)
        mae = mpfr(0)
        mse = mpfr(0)
        for err, p in pairs:
            e = mpfr(err)
            bias += p * e
            mae += p * abs(e)
            mse += p * e * e
        rmse = _exact.sqrt(mse)
        d = mpfr(max_error)
        trunc = truncated * max(d, d * d)
    merged = _merge_abs(pairs, precision)
    return ErrorMetrics(
        bias=float(bias),
        mae=float(mae),
        rmse=float(rmse),
        q95=_quantile(merged, truncated, QUANTILE_LEVELS[0], precision),
        q99=_quantile(merged, truncated, QUANTILE_LEVELS[1], precision),
        truncation_bound=float(trunc),
    )


def error_metrics(dist: OutputDistribution) -> ErrorMetrics:
    """Bias, MAE, RMSE and the 95%/99% error quantiles of the snapping mechanism, exactly."""
    pairs = list(zip(dist.errors(), dist.probabilities, strict=True))
    return _metrics(pairs, dist.truncated_mass, dist.max_error, dist.precision)


def mixture_metrics(dists: Sequence[OutputDistribution]) -> ErrorMetrics:
    """The metrics of the equal-weight mixture of the error distributions ``dists``.

    Models a true value known only up to a set of candidates (e.g. offsets within a grid cell):
    moments are averages; quantiles are those of the mixture, not averages of quantiles.
    """
    if not dists:
        raise ParameterError("`dists` must not be empty")
    precision = max(d.precision for d in dists)
    weight = mpq(1, len(dists))
    pairs: list[tuple[mpq, mpfr]] = []
    with _exact.working_precision(precision):
        truncated = sum((d.truncated_mass for d in dists), mpfr(0)) * weight
        for d in dists:
            pairs.extend((e, p * weight) for e, p in zip(d.errors(), d.probabilities, strict=True))
    return _metrics(pairs, truncated, max(d.max_error for d in dists), precision)


def tail_probability(dist: OutputDistribution, a: Number) -> mpfr:
    """P(|output − x| > a), counting the truncated mass as if it were beyond ``a`` (an upper bound
    off by at most ``dist.truncated_mass`` + ``dist.rounding_error``)."""
    threshold = _exact.exact_rational(check_real("a", a))
    with _exact.working_precision(dist.precision):
        total = dist.truncated_mass
        for err, p in _abs_errors(dist):
            if err > threshold:
                total += p
    return total


def error_quantile(dist: OutputDistribution, alpha: float) -> float:
    """The smallest a among the possible |errors| (and 0) with P(|err| > a) <= alpha.

    Exact up to the truncated mass, which is counted as exceeding every a (so never too small).
    Rounded up to a double.
    """
    level = check_probability("alpha", alpha)
    return _quantile(_abs_errors(dist), dist.truncated_mass, level, dist.precision)


def _laplace_scale(epsilon: Number, sensitivity: Number) -> mpq:
    eps = _exact.exact_rational(check_positive_finite("epsilon", epsilon))
    sens = _exact.exact_rational(check_positive_finite("sensitivity", sensitivity))
    return sens / eps


def laplace_quantile(epsilon: Number, sensitivity: Number, alpha: float) -> float:
    """The (1 − alpha) quantile of the textbook Laplace mechanism's |error|: −λ·ln(alpha)."""
    level = check_probability("alpha", alpha)
    return float(_laplace_scale(epsilon, sensitivity)) * -math.log(level)


def laplace_tail(epsilon: Number, sensitivity: Number, a: Number) -> float:
    """P(|error| > a) = e^{−a/λ} for the textbook Laplace mechanism (1 for a < 0)."""
    threshold = float(check_real("a", a))
    if math.isnan(threshold):
        raise ParameterError("`a` must not be NaN")
    if threshold <= 0:
        return 1.0
    return math.exp(-threshold / float(_laplace_scale(epsilon, sensitivity)))


def laplace_metrics(epsilon: Number, sensitivity: Number) -> ErrorMetrics:
    """The textbook Laplace mechanism's metrics, in closed form (λ = Δ/ε)."""
    lam = float(_laplace_scale(epsilon, sensitivity))
    return ErrorMetrics(
        bias=0.0,
        mae=lam,
        rmse=math.sqrt(2.0) * lam,
        q95=laplace_quantile(epsilon, sensitivity, QUANTILE_LEVELS[0]),
        q99=laplace_quantile(epsilon, sensitivity, QUANTILE_LEVELS[1]),
    )


def _laplace_piece(a: float, b: float, lam: float, power: int) -> float:
    """E[Y**power · 1{a < Y < b}] for Y ~ Laplace(λ), power in {0, 1, 2}; a may be −inf, b +inf.

    Primitives: for y <= 0 the density is e^{y/λ}/(2λ) with primitives ½e^{y/λ}, ½(y − λ)e^{y/λ},
    ½(y² − 2λy + 2λ²)e^{y/λ}; for y >= 0 it is e^{−y/λ}/(2λ) with primitives −½e^{−y/λ},
    −½(y + λ)e^{−y/λ}, −½(y² + 2λy + 2λ²)e^{−y/λ}.
    """

    def neg(y: float) -> float:
        if y == -math.inf:
            return 0.0
        poly = (1.0, y - lam, y * y - 2 * lam * y + 2 * lam * lam)[power]
        return 0.5 * poly * math.exp(y / lam)

    def pos(y: float) -> float:
        if y == math.inf:
            return 0.0
        poly = (1.0, y + lam, y * y + 2 * lam * y + 2 * lam * lam)[power]
        return -0.5 * poly * math.exp(-y / lam)

    total = 0.0
    if a < min(b, 0.0):
        total += neg(min(b, 0.0)) - neg(a)
    if max(a, 0.0) < b:
        total += pos(b) - pos(max(a, 0.0))
    return total


def clamped_laplace_metrics(
    epsilon: Number, sensitivity: Number, lower: Number, upper: Number, values: Sequence[Number]
) -> ErrorMetrics:
    """Metrics of the textbook Laplace output clamped to [lower, upper] (post-processing, same ε),
    for the equal mixture over the true ``values``. Closed forms evaluated in double precision;
    the quantiles by bisection on the mixture's tail to a relative 2**-40.

    With a = lower − x and b = upper − x, the error is clamp(Y, a, b), so P(|err| > t) =
    [b > t]·P(Y > t) + [a < −t]·P(Y < −t): the fairest baseline for the snapping mechanism, which
    clamps too (seed 000 compares with the unclamped M_L; we show both).
    """
    lam = float(_laplace_scale(epsilon, sensitivity))
    lo = float(check_real("lower", lower))
    hi = float(check_real("upper", upper))
    if not values:
        raise ParameterError("`values` must not be empty")
    ends = [(lo - float(x), hi - float(x)) for x in values]
    n = len(ends)
    bias = mae = mse = 0.0
    for a, b in ends:
        p_lo = _laplace_piece(-math.inf, a, lam, 0)
        p_hi = _laplace_piece(b, math.inf, lam, 0)
        bias += _laplace_piece(a, b, lam, 1) + a * p_lo + b * p_hi
        mae += (
            _laplace_piece(max(a, 0.0), b, lam, 1)
            - _laplace_piece(a, min(b, 0.0), lam, 1)
            + abs(a) * p_lo
            + abs(b) * p_hi
        )
        mse += _laplace_piece(a, b, lam, 2) + a * a * p_lo + b * b * p_hi

    def tail(t: float) -> float:
        total = 0.0
        for a, b in ends:
            if b > t:
                total += 0.5 * math.exp(-t / lam)
            if a < -t:
                total += 0.5 * math.exp(-t / lam)
        return total / n

    def quantile(level: float) -> float:
        top = max(max(abs(a), abs(b)) for a, b in ends)
        if tail(0.0) <= level:
            return 0.0
        left, right = 0.0, top  # tail(left) > level >= tail(right) = 0
        while right - left > 2.0**-40 * right:
            mid = (left + right) / 2
            if tail(mid) <= level:
                right = mid
            else:
                left = mid
        return right

    return ErrorMetrics(
        bias=bias / n,
        mae=mae / n,
        rmse=math.sqrt(mse / n),
        q95=quantile(QUANTILE_LEVELS[0]),
        q99=quantile(QUANTILE_LEVELS[1]),
    )
