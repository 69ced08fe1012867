"""Accuracy of the snapping mechanism, stated before any release (DESIGN §4).

For every x in [lower, upper] the error N = |output − x| satisfies, in sensitivity units,
N <= |Y| + Λ/2 (the outer clamp only moves the output toward x), and N <= upper − lower. The tail
of |Y| is that of an exponential with scale λ′, up to the implementation's roundings, which we
bound rigorously (see ``_tail_scale``). None of this depends on the data.

Not the seed's GetAccuracy2 (seed 002 §6.2), whose α goes the wrong way (DESIGN §3).
"""

from __future__ import annotations

import math

from gmpy2 import mpfr, mpq

from snapdp import _exact
from snapdp._validation import Number, check_positive_finite, check_probability, check_real
from snapdp.errors import ParameterError
from snapdp.parameters import SnappingParameters, compute_parameters

__all__ = ["accuracy_bound", "epsilon_for_accuracy", "failure_probability_bound"]

_WORK_BITS = 160
_UNIFORM_SLACK = mpq(1, 1 << 51)  # > ln(1 + 2**-52): P(U* < t) <= t·(1 + 2**-52)


def _output_rounding(params: SnappingParameters) -> mpq:
    """One ulp of the largest output magnitude: a bound on the final rounding (DESIGN §2.6)."""
    largest = max(abs(params.lower), abs(params.upper))
    return _exact.exact_rational(math.ulp(_exact.rational_to_float(largest)))


def _tail_scale(params: SnappingParameters, up: bool) -> mpfr:
    """λ′·(1 + η)**2 rounded up: |Y| <= λ′·|ln U*|·(1 + η)**2 (two roundings at p bits)."""
    return _exact.round_up(mpq(params.scale) * (1 + params.eta) ** 2, _WORK_BITS)


def accuracy_bound(params: SnappingParameters, alpha: object) -> float:
    """a(α) = min(Δ·(Λ/2 + λ′(1+η)²·(ln(1/α) + 2**-51)) + ulp, upper − lower), rounded up.

    P(|output − x| > a) <= α for every x in [lower, upper]. The terms beyond DESIGN §4's
    Δ·(Λ/2 + λ′·ln(1/α)) cover the roundings of the implementation (log and product at p bits, U*
    on the double grid, the final rounding); they change a by a relative 2**-50 or less.
    """
    a_prob = check_probability("alpha", alpha)
    up = _exact.directed_context(_WORK_BITS, up=True)
    log_term = up.add(up.log(up.div(1, a_prob)), mpfr(_UNIFORM_SLACK))
    noise_term = up.mul(_tail_scale(params, up=True), log_term)
    scaled = mpq(noise_term) + params.grid / 2
    total = scaled * params.sensitivity + _output_rounding(params)
    width = params.upper - params.lower
    return float(_exact.round_up(min(total, width), 53))


def failure_probability_bound(params: SnappingParameters, accuracy: object) -> float:
    """α(a) = (1 + 2**-52)·exp(−((a − ulp)/Δ − Λ/2)/(λ′(1+η)²)), capped to [0, 1], rounded up.

    P(|output − x| > a) <= α(a) for every x in [lower, upper]; 0 when a >= upper − lower.
    """
    a = check_real("accuracy", accuracy)
    if isinstance(a, float) and math.isnan(a):
        raise ParameterError("`accuracy` must not be NaN")
    if a < 0:
        raise ParameterError(f"`accuracy` must be >= 0, not {a!r}")
    if isinstance(a, float) and math.isinf(a):
        return 0.0
    a_q = _exact.exact_rational(a)
    if a_q >= params.upper - params.lower:
        return 0.0
    t = (a_q - _output_rounding(params)) / params.sensitivity - params.grid / 2
    if t <= 0:
        return 1.0
    up = _exact.directed_context(_WORK_BITS, up=True)
    down = _exact.directed_context(_WORK_BITS, up=False)
    exponent = down.div(_exact.round_down(t, _WORK_BITS), _tail_scale(params, up=True))
    alpha = up.mul(up.exp(-exponent), _exact.round_up(1 + mpq(1, 1 << 52), _WORK_BITS))
    return min(1.0, float(_exact.round_up(alpha, 53)))


def epsilon_for_accuracy(
    accuracy: Number, alpha: float, sensitivity: Number, lower: Number, upper: Number
) -> float:
    """The smallest double ε whose snapping mechanism has ``accuracy(alpha) <= accuracy``.

    Found by bisection over the bit patterns of doubles (the accuracy decreases with ε) and
    checked. Raises ParameterError when every ε > 0 meets the target (accuracy >= upper − lower:
    the clamp alone guarantees it) or none does.
    """
    from snapdp._validation import check_finite

    target = check_positive_finite("accuracy", accuracy)
    a_prob = check_probability("alpha", alpha)
    sens = check_positive_finite("sensitivity", sensitivity)
    lo_b = check_finite("lower", lower)
    hi_b = check_finite("upper", upper)
    if not lo_b < hi_b:
        raise ParameterError(f"`lower` must be < `upper`, not lower={lo_b!r}, upper={hi_b!r}")
    if _exact.exact_rational(target) >= _exact.exact_rational(hi_b) - _exact.exact_rational(lo_b):
        raise ParameterError(
            f"`accuracy` = {target!r} is at least upper − lower: every ε meets it, because the "
            "output is clamped to [lower, upper]; no privacy budget is needed for this accuracy"
        )

    def meets(eps: float) -> bool:
        return accuracy_bound(compute_parameters(eps, sens, lo_b, hi_b), a_prob) <= target

    lo_bits, hi_bits = _bits(2.0**-47), _bits(1.7e308)
    if not meets(_from_bits(hi_bits)):
        raise ParameterError(
            f"`accuracy` = {target!r} cannot be reached at alpha = {a_prob!r} by any ε "
            "(it is below the final rounding of the output)"
        )
    if meets(_from_bits(lo_bits)):
        return _from_bits(lo_bits)
    while hi_bits - lo_bits > 1:  # invariant: not meets(lo), meets(hi)
        mid = (lo_bits + hi_bits) // 2
        if meets(_from_bits(mid)):
            hi_bits = mid
        else:
            lo_bits = mid
    return _from_bits(hi_bits)


def _bits(x: float) -> int:
    import struct

    return int(struct.unpack("<q", struct.pack("<d", x))[0])


def _from_bits(b: int) -> float:
    import struct

    return float(struct.unpack("<d", struct.pack("<q", b))[0])
