"""Accuracy of the snapping mechanism, stated before any release (DESIGN §4).

For every x in [lower, upper] the output is a grid point c + Δ·kΛ (or a bound, which is only
closer to x), chosen by rounding x̃ + Y to the nearest multiple of Λ. In scaled units, with
N = |output − x|/Δ, s = a − Λ/2 and Y ~ Laplace(λ′):

    sup over x̃ of P(N > a) = ½·e^(−s/λ′)·(1 + e^(−(T − 2s)/λ′)),  T = Λ·(⌊2s/Λ⌋ + 1),

because N <= a exactly when x̃ + Y falls in the union of the cells of the grid points within a
of x̃: an interval [x̃ − L1, x̃ + L2) with L1, L2 > s and L1 + L2 a multiple of Λ; the worst case
is L1 → s, L1 + L2 = T (docs/mechanism.md derives it). This is never above DESIGN §4's
e^(−s/λ′) = P(|Y| > a − Λ/2), and at most half of it lower, so accuracy(α) lies between
Λ/2 + λ′·ln(1/(2α)) and DESIGN §4's Λ/2 + λ′·ln(1/α).

The implementation's own roundings are covered: |Y| <= λ′·|ln U*|·(1 + η)² and
P(U* < t) <= t·(1 + 2**-52), so λ′ is replaced by λ″ = λ′(1 + η)² and the bound multiplied by
(1 + 2**-52); the final rounding of the output adds one ulp of the largest output, or nothing when
every grid point in [lower, upper] is a double. Nothing here depends on the data.

Not the seed's GetAccuracy2 (seed 002 §6.2), whose α goes the wrong way (DESIGN §3).
"""

from __future__ import annotations

import functools
import math
import struct
from collections.abc import Callable
from fractions import Fraction
from typing import Any, TypeVar

from gmpy2 import mpfr, mpq

from snapdp import _exact
from snapdp._rational import shown_number
from snapdp._validation import (
    Number,
    check_finite,
    check_positive_finite,
    check_probability,
    check_real,
)
from snapdp.errors import ParameterError
from snapdp.parameters import SnappingParameters
from snapdp.rescaling import mechanism_parameters

__all__ = [
    "accuracy_bound",
    "epsilon_for_accuracy",
    "failure_probability_bound",
    "noise_envelope",
    "noise_tail_accuracy",
]

_WORK_BITS = 160
_BISECTION_STEPS = 200
_UNIFORM_FACTOR = 1 + mpq(1, 1 << 52)  # P(U* < t) <= t·(1 + 2**-52)
_T = TypeVar("_T")


def _output_rounding(params: SnappingParameters) -> mpq:
    """A bound on |output − (c + Δ·õ)|: 0 when every grid point is a double, else one ulp.

    Every grid point c + Δ·kΛ in [lower, upper] is a double when c and Δ·Λ are multiples of some
    2**q and max(|lower|, |upper|) <= 2**(q + 53) (then each point is an integer multiple of 2**q
    of at most 53 bits); checked exactly.
    """
    largest = max(abs(params.lower), abs(params.upper))
    step = params.grid * params.sensitivity
    q_center, q_step = _dyadic_exponent(params.center), _dyadic_exponent(step)
    if q_center is not None and q_step is not None:
        q = min(q_center, q_step)
        if q >= -1074 and largest <= mpq(2) ** (q + 53):
            return mpq(0)
    return _exact.exact_rational(math.ulp(_exact.rational_to_float(largest)))


def _dyadic_exponent(x: mpq) -> int | None:
    """The largest q with x a multiple of 2**q (x dyadic), or None; 0 counts as very divisible."""
    den = int(x.denominator)
    if den & (den - 1):
        return None
    num = abs(int(x.numerator))
    if num == 0:
        return 1 << 20
    return (num & -num).bit_length() - 1 - (den.bit_length() - 1)


def _tail_scale(params: SnappingParameters) -> mpfr:
    """λ″ = λ′·(1 + η)² rounded up: |Y| <= λ″·|ln U*| (log and product rounded at p bits)."""
    return _exact.round_up(mpq(params.scale) * (1 + params.eta) ** 2, _WORK_BITS)


def _worst_case_tail(params: SnappingParameters, s: mpq) -> mpfr:
    """An upper bound on sup over x̃ of P(N > Λ/2 + s), scaled units, rounded up (module doc)."""
    return _tail_of(params)(s)


def _tail_of(params: SnappingParameters) -> Callable[[mpq], mpfr]:
    """:func:`_worst_case_tail` for ``params`` as a function of s, its constants (Λ, λ″, the
    contexts, the uniform factor) computed once: the same operations on the same values, so
    the same bits, for the bisection's many points. Hashable parameters share one function per
    process, which keeps its values (the rounded and unrounded bounds at one α bisect through
    the same points)."""
    return _memo(_shared_tail, params)


def _memo(cached: functools._lru_cache_wrapper[_T], *args: Any) -> _T:
    """``cached(*args)``, or computed without the cache when an argument cannot be hashed
    (parameters that are not the frozen dataclass)."""
    try:
        return cached(*args)
    except TypeError:
        return cached.__wrapped__(*args)


_KEPT_POINTS = 4096  # tail values kept per parameters (a bisection asks for ~100)


@functools.lru_cache(maxsize=64)
def _shared_tail(params: SnappingParameters) -> Callable[[mpq], mpfr]:
    grid = params.grid
    up = _exact.directed_context(_WORK_BITS, up=True)
    down = _exact.directed_context(_WORK_BITS, up=False)
    scale = _tail_scale(params)
    factor = _exact.round_up(_UNIFORM_FACTOR / 2, _WORK_BITS)
    kept: dict[mpq, mpfr] = {}

    def tail(s: mpq) -> mpfr:
        if s < 0:
            return mpfr(1)
        found = kept.get(s)
        if found is not None:
            return found
        total = grid * (int((2 * s) // grid) + 1)  # T: the smallest multiple of Λ above 2s
        # negate inside the context: a bare `-x` would round to gmpy2's global 53-bit precision
        near = up.exp(up.minus(down.div(_exact.round_down(s, _WORK_BITS), scale)))
        far = up.exp(up.minus(down.div(_exact.round_down(total - s, _WORK_BITS), scale)))
        value: mpfr = min(up.mul(up.add(near, far), factor), mpfr(1))
        if len(kept) < _KEPT_POINTS:
            kept[s] = value
        return value

    return tail


def _noise_tail_scaled(params: SnappingParameters, alpha: float) -> mpq:
    """s = λ″·(ln(1/α) + 2**-51), rounded up: P(|Y| > s) <= α for the implementation's Y."""
    up = _exact.directed_context(_WORK_BITS, up=True)
    log_term = up.add(up.log(up.div(1, alpha)), mpfr(2) ** -51)  # 2**-51 > ln(1 + 2**-52)
    return mpq(up.mul(_tail_scale(params), log_term))


def noise_tail_accuracy(params: SnappingParameters, alpha: object) -> float:
    """DESIGN §4's a(α) = Δ·(Λ/2 + λ″·ln(1/α)) + rounding: P(|Y| + Λ/2 > a/Δ) <= α, rounded up.

    A bound on the noise alone (N <= |Y| + Λ/2), for arguments that need that form, such as the
    one-sided step of the data-dependent GetAccuracy; :func:`accuracy_bound` is tighter for N.
    """
    a_prob = check_probability("alpha", alpha)
    total = (params.grid / 2 + _noise_tail_scaled(params, a_prob)) * params.sensitivity
    return float(_exact.round_up(total + _output_rounding(params), 53))


def accuracy_bound(params: SnappingParameters, alpha: object, *, rounding: bool = True) -> float:
    """a(α): P(|output − x| > a) <= α for every x in [lower, upper], rounded up to a double.

    The smallest a (to within 2**-200 relative, found by bisection) whose worst-case tail bound
    is <= α, capped at upper − lower (the output and x both lie in the bounds).
    ``rounding=False`` leaves out the final rounding of the output to a double (one ulp at wide
    bounds): what narrower bounds could reach (snapdp.usefulness); not a bound on the output.
    Kept per process for the 256 parameter sets last asked, least recently used first out (a
    pure function of public parameters: a release states each mechanism's ± and then judges its
    usefulness from the same one).
    """
    a_prob = check_probability("alpha", alpha)
    return _memo(_accuracy_bound, params, a_prob, rounding)


@functools.lru_cache(maxsize=256)
def _accuracy_bound(params: SnappingParameters, a_prob: float, rounding: bool) -> float:
    target = _exact.exact_rational(a_prob)
    width = params.upper - params.lower
    extra = _output_rounding(params) if rounding else mpq(0)
    half_grid = params.grid / 2
    worst_case_tail = _tail_of(params)

    @functools.lru_cache(maxsize=4)
    def stated(s: mpq) -> float:
        """The bound that the tail point s gives: monotone (non-decreasing) in s."""
        total = (half_grid + s) * params.sensitivity + extra
        return float(_exact.round_up(min(total, width), 53))

    hi = _noise_tail_scaled(params, a_prob)  # DESIGN §4's s always qualifies: start there
    lo = mpq(0)
    if worst_case_tail(lo) <= target:
        hi = lo
    for _ in range(_BISECTION_STEPS):
        if hi - lo <= hi * mpq(1, 1 << 200):
            break
        # The answer is stated(s) for an s in [lo, hi] (the bisection's last hi, or a jump
        # point in (lo, hi] below): once both ends state the same double, so does every point
        # between them, and the rest of the bisection cannot change the result.
        if stated(lo) == stated(hi):
            return stated(hi)
        mid = (lo + hi) / 2
        if mpq(worst_case_tail(mid)) <= target:
            hi = mid
        else:
            lo = mid
    # the tail drops at each jump point s = m·Λ/2; if one lies in (lo, hi], it is the exact answer
    jump = params.grid * (int((2 * lo) // params.grid) + 1) / 2
    if jump <= hi and mpq(worst_case_tail(jump)) <= target:
        hi = jump
    return stated(hi)


def failure_probability_bound(params: SnappingParameters, accuracy: object) -> float:
    """α(a): P(|output − x| > a) <= α(a) for every x in [lower, upper], rounded up; 0 when
    a >= upper − lower, 1 when a is within the final rounding of Λ·Δ/2 or below."""
    a = check_real("accuracy", accuracy)
    if isinstance(a, float) and math.isnan(a):
        raise ParameterError("`accuracy` must not be NaN")
    if a < 0:
        raise ParameterError(f"`accuracy` must be >= 0, not {shown_number(a)}")
    if isinstance(a, float) and math.isinf(a):
        return 0.0
    a_q = _exact.exact_rational(a)
    if a_q >= params.upper - params.lower:
        return 0.0
    s = (a_q - _output_rounding(params)) / params.sensitivity - params.grid / 2
    return min(1.0, float(_exact.round_up(_worst_case_tail(params, s), 53)))


def epsilon_for_accuracy(
    accuracy: Number,
    alpha: float,
    sensitivity: Number,
    lower: Number,
    upper: Number,
    *,
    rescale: bool = True,
) -> float:
    """The smallest double ε whose snapping mechanism has ``accuracy(alpha) <= accuracy``.

    The mechanism is ``SnappingMechanism(ε, sensitivity, lower, upper, rescale=rescale)``.
    Found by bisection over the bit patterns of doubles; the accuracy decreases as ε grows, up to
    the rescaling's steps of 1/16 in the grid (docs/mechanism.md, "No power-of-two penalty"), so
    with ``rescale`` the result is the ε at which the target is first met going down from a
    large ε: one double less misses it. The answer is checked: the returned ε always meets the
    target with the certified parameters (the search presumes the certificates). Raises
    ParameterError when every ε > 0 meets the target (accuracy >= upper − lower: the clamp alone
    guarantees it) or none does.
    """
    target = check_positive_finite("accuracy", accuracy)
    a_prob = check_probability("alpha", alpha)
    sens = check_positive_finite("sensitivity", sensitivity)
    lo_b = check_finite("lower", lower)
    hi_b = check_finite("upper", upper)
    if not lo_b < hi_b:
        raise ParameterError(
            f"`lower` must be < `upper`, not lower = {shown_number(lo_b)}, "
            f"upper = {shown_number(hi_b)}"
        )
    if _exact.exact_rational(target) >= _exact.exact_rational(hi_b) - _exact.exact_rational(lo_b):
        raise ParameterError(
            f"`accuracy` = {shown_number(target)} is at least upper − lower: every ε meets it, "
            "because the output is clamped to [lower, upper]; no privacy budget is needed for "
            "this accuracy"
        )

    exact = [Fraction(_exact.exact_rational(v)) for v in (sens, lo_b, hi_b)]

    def meets(eps: float, presume: bool = True) -> bool:
        params = mechanism_parameters(
            Fraction(eps), *exact, rescale=rescale, presume_certified=presume
        )
        return accuracy_bound(params, a_prob) <= target

    lo_bits, hi_bits = _bits(2.0**-47), _bits(1.7e308)
    if not meets(_from_bits(hi_bits)):
        raise ParameterError(
            f"`accuracy` = {shown_number(target)} cannot be reached at alpha = {a_prob!r} by any ε "
            "(it is below the final rounding of the output)"
        )
    if meets(_from_bits(lo_bits)):
        return _from_bits(lo_bits)
    presume = True
    while True:
        while hi_bits - lo_bits > 1:  # invariant: not meets(lo), meets(hi)
            mid = (lo_bits + hi_bits) // 2
            if meets(_from_bits(mid), presume):
                hi_bits = mid
            else:
                lo_bits = mid
        if meets(_from_bits(hi_bits), False) or not presume:
            return _from_bits(hi_bits)
        presume, hi_bits = False, _bits(1.7e308)  # a certificate failed: search certified


def _bits(x: float) -> int:
    return int(struct.unpack("<q", struct.pack("<d", x))[0])


def _from_bits(b: int) -> float:
    return float(struct.unpack("<d", struct.pack("<q", b))[0])


def noise_envelope(params: SnappingParameters) -> tuple[float, float]:
    """(a, b), rounded up: for every x in [lower, upper], the output's error e = output − x
    satisfies −(a + b·S⁻·E) <= e <= a + b·S⁺·E, where S is a fair random sign independent of
    E >= 0, S⁺ = max(S, 0), S⁻ = max(−S, 0) and P(E > s) <= e^(−s)·(1 + 2**-52).

    In scaled units Y = S·λ′·LN(U*) with |Y| <= λ″·E, E = −ln U* (module doc); the rounding to
    the grid moves x̃ + Y by at most Λ/2 and the final rounding by at most one ulp, so
    a = Δ·Λ/2 + that rounding and b = Δ·λ″. Clamping to [lower, upper] only moves the output
    towards x (x is inside), never past it: e keeps the sign bound above. For bounds on sums of
    many independent outputs (docs/data.md, "Tables that add up").
    """
    a = params.grid / 2 * params.sensitivity + _output_rounding(params)
    b = mpq(_tail_scale(params)) * params.sensitivity
    return float(_exact.round_up(a, 53)), float(_exact.round_up(b, 53))
