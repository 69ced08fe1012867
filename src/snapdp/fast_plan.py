"""The fast path's plan: the doubles it may use, its premises, its padding (docs/fast-path.md).

:func:`plan_for` decides whether the vectorised release of :mod:`snapdp.fast` applies to a
mechanism's parameters and returns the doubles it needs (:class:`FastPlan`); :func:`uniform` is
step F1 (words → U*, exactly); :func:`log_premise_holds` checks the premise of step F3 on the
running numpy and libm; :func:`fallback_probability` and the padding fix the constant work per
chunk (docs/fast-path.md, "Constant work per chunk").
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable
from typing import Any

import gmpy2
import numpy as np
import numpy.typing as npt
from msgspec import Struct

from snapdp import _exact
from snapdp.parameters import SnappingParameters

__all__ = [
    "CHUNK",
    "FastPlan",
    "fallback_probability",
    "log_premise_holds",
    "plan_for",
    "uniform",
]

CHUNK = 1 << 17  # samples per chunk: 2 MiB of words, about 10 MiB of temporaries per thread
LOG_PREMISE = 2.0**-48  # |np.log(u) − ln u| <= LOG_PREMISE·|ln u| (F3)
_TIMING_LOG2_TARGET = -80  # F is chosen so that the timing event adds at most 2**-80 to δ
_RANGE = 500  # Λ, B̃ within 2**±500: no overflow or harmful underflow in F2–F5
_MANTISSA = np.uint64((1 << 52) - 1)


class FastPlan(Struct, frozen=True):
    """The doubles the vectorised path needs, each equal to an exact parameter (or bounded).

    ``center``, ``sensitivity``, ``lower``, ``upper`` and ``step`` (= Δ·Λ) are exactly the
    parameters' values; ``bound`` is B̃ rounded to nearest, ``scale`` λ′ rounded to nearest;
    ``inv_grid`` = 2**-L exactly. ``clamp_index`` = ⌈B̃/Λ⌉ (capped at 2**52, which no accepted
    index reaches), ``exact_index`` = 2**(53 − bits of Δ's odd part): |k| below it makes Δ·Λ·k a
    double.

    Constant work (docs/fast-path.md, "Constant work per chunk"): ``fallback_probability`` p bounds
    the probability that one sample falls back, for every input; every chunk of at most
    :data:`CHUNK` samples does exactly ``padded_evaluations`` (F) exact evaluations unless it
    needs more, an event of probability at most q = P(Binomial(CHUNK, p) > F); ``timing_delta``
    = (1 + e^ε)·q, rounded up, is what that event adds to δ per released value.
    """

    center: float
    sensitivity: float
    lower: float
    upper: float
    bound: float
    scale: float
    inv_grid: float
    step: float
    clamp_index: float
    exact_index: float
    fallback_probability: float = 1.0
    padded_evaluations: int = CHUNK
    timing_delta: float = 0.0


def _as_double(q: Any) -> float | None:
    """The double equal to the rational ``q``, or None if ``q`` is not a double."""
    f = _exact.rational_to_float(q)
    if not math.isfinite(f) or _exact.exact_rational(f) != q:
        return None
    return f


def _ratio_to_float(ratio: tuple[Any, Any]) -> float:
    """num/den rounded once to nearest (Python's int true division is correctly rounded)."""
    return int(ratio[0]) / int(ratio[1])


def plan_for(params: SnappingParameters) -> FastPlan | None:
    """The plan for ``params``, or None when the vectorised path does not apply.

    It applies when the center c, Δ, lower and upper are doubles exactly, upper − lower is finite,
    Δ·Λ is a double, and Λ and B̃ lie within 2**±500. Otherwise callers use the exact path for every
    sample (correct, only slower); ordinary parameters (decimal bounds, Δ >= 1e-100) all qualify.
    """
    plan = _plan_of(params)
    if plan is None or not log_premise_holds():
        return None
    return plan


@functools.lru_cache(maxsize=4096)
def _plan_of(params: SnappingParameters) -> FastPlan | None:
    """:func:`plan_for` once its premise holds: a function of ``params`` alone (every field is in
    the key: the frozen dataclass hashes them all), so one plan per parameter set is kept for the
    process (a :class:`FastPlan` is immutable)."""
    center = _as_double(params.center)
    sens = _as_double(params.sensitivity)
    lower = _as_double(params.lower)
    upper = _as_double(params.upper)
    L = params.lambda_exponent
    if center is None or sens is None or lower is None or upper is None or abs(L) > _RANGE:
        return None
    if not math.isfinite(upper - lower):
        return None
    step = _as_double(params.sensitivity * params.grid)
    bound = _exact.rational_to_float(params.bound)
    if step is None or not 0 < bound <= 2.0**_RANGE:
        return None
    num, den = int(params.bound.numerator), int(params.bound.denominator)
    k_clamp = -(-num // (den << L)) if L >= 0 else -(-(num << -L) // den)  # ⌈B̃/Λ⌉
    odd = int(params.sensitivity.numerator)
    odd //= odd & -odd
    p = fallback_probability(params)
    padded, timing_delta = _padding(params, p)
    return FastPlan(
        center=center,
        sensitivity=sens,
        lower=lower,
        upper=upper,
        bound=bound,
        scale=_ratio_to_float(params.scale.as_integer_ratio()),
        inv_grid=math.ldexp(1.0, -L),
        step=step,
        clamp_index=float(min(k_clamp, 1 << 52)),
        exact_index=float(1 << (53 - odd.bit_length())),
        fallback_probability=p,
        padded_evaluations=padded,
        timing_delta=timing_delta,
    )


_ROUND_UP = 1.0 + 2.0**-50  # a factor that covers a few roundings to nearest


def fallback_probability(params: SnappingParameters) -> float:
    """p >= P(a sample falls back), for every input value: 2**-43·(B̃/Λ + 4), or 1 past 2**40.

    Public (a function of the parameters only). Derivation in docs/fast-path.md, "The fallback
    probability"; it covers hard samples (F5) and rare draws (F1), not integers beyond 2**53.
    """
    ratio = float(gmpy2.mpq(params.bound) * gmpy2.mpq(2) ** -params.lambda_exponent) * _ROUND_UP
    if not ratio <= 2.0**40:
        return 1.0
    return min(1.0, (ratio + 4.0) * 2.0**-43 * _ROUND_UP)


def _padding(params: SnappingParameters, p: float) -> tuple[int, float]:
    """(F, (1 + e^ε)·q): the smallest F >= 1 whose timing δ is at most 2**-80, or (CHUNK, 0).

    q = P(Binomial(CHUNK, p) >= F + 1) <= C(CHUNK, F+1)·p**(F+1) <= (CHUNK·p)**(F+1)/(F+1)!
    (a union bound over the sets of F + 1 samples), evaluated in logarithms with a factor 2 of
    margin for the roundings: ln q(1) = 2·ln(Cp) − ln 2 and ln q(F) = ln q(F−1) + (ln(Cp) −
    ln(F+1)), added one term at a time in this order (numpy's cumulative sum adds left to right,
    so each F is the double the scalar recurrence gives), a block of F at a time.
    """
    if p >= 1.0:
        return CHUNK, 0.0
    eps = float(params.epsilon) * _ROUND_UP
    log_one_plus_e_eps = eps + math.log1p(math.exp(-eps))
    log_cp = math.log(CHUNK * p)
    target = _TIMING_LOG2_TARGET * math.log(2.0) - math.log(2.0)
    f = 1
    log_q = 2.0 * log_cp - math.log(2.0)  # (F+1)·ln(Cp) − ln((F+1)!) at F = 1
    while f < CHUNK:
        n = min(_PADDING_BLOCK, CHUNK - f)  # F = f, …, f + n − 1
        terms = np.empty(n, dtype=np.float64)
        terms[0] = log_q
        terms[1:] = log_cp - _logs_from_3(f + n)[f - 1 : f + n - 2]  # ln(Cp) − ln(F+1)
        log_qs = np.cumsum(terms)
        met = np.flatnonzero(log_one_plus_e_eps + log_qs <= target)
        if met.size:
            i = int(met[0])
            return f + i, min(1.0, 2.0 * math.exp(log_one_plus_e_eps + float(log_qs[i])))
        f += n
        log_q = float(log_qs[-1]) + (log_cp - math.log(f + 1))
    return CHUNK, 0.0


_PADDING_BLOCK = 4096
#: math.log(k) for k = 3, 4, …: the padding's terms, shared by every plan (grown, never changed)
_LOGS: list[npt.NDArray[np.float64]] = [np.empty(0, dtype=np.float64)]


def _logs_from_3(upto: int) -> npt.NDArray[np.float64]:
    """math.log(k) for k = 3, …, ``upto`` (at least), as doubles: index k − 3."""
    table = _LOGS[0]
    if len(table) < upto - 2:
        end = max(upto, 2 * len(table) + 2)
        more = np.array([math.log(k) for k in range(len(table) + 3, end + 1)], dtype=np.float64)
        table = np.concatenate([table, more])
        _LOGS[0] = table  # a whole new table: a concurrent reader sees the old one or this one
    return table


_LOG_CHECKED: bool | None = None  # the premise check runs once per process (the libm is fixed)


def _log_probe() -> npt.NDArray[np.float64]:
    """Doubles in (0, 1) where a log is hardest to get right, and ordinary draws of U*."""
    rng = np.random.default_rng(20261123)
    words = rng.integers(0, 2**64, 4000, dtype=np.uint64)
    words[1::2] |= np.uint64(1 << 11)
    ordinary = uniform(words)
    k = np.arange(1, 601, dtype=np.float64)
    near_one = 1.0 - k * 2.0**-53  # ln u ≈ u − 1: the relative error is the delicate one
    near_half = np.concatenate([0.5 + k * 2.0**-53, 0.5 - k * 2.0**-54])
    smallest = np.ldexp(1.0 + k * 2.0**-45, -64)  # the smallest ordinary U*
    powers = np.ldexp(1.0, -np.arange(1, 65))
    e_powers = np.exp(-np.arange(1, 45, dtype=np.float64))  # ln u close to an integer
    probe: npt.NDArray[np.float64] = np.concatenate(
        [ordinary, near_one, near_half, smallest, powers, np.nextafter(powers, 1.0), e_powers]
    )
    return probe[(probe > 0) & (probe < 1)]


def log_premise_holds() -> bool:
    """Check the premise of F3 on the running numpy and libm, once per process.

    np.log (vectorised path) and math.log (scalar path) must be within 2**-48 relative (16 ulps)
    of the true logarithm (MPFR at 200 bits) on a few thousand arguments: ordinary U*, U* near 1,
    near 1/2, near 2**-64, powers of two and their neighbours. If not, a RuntimeWarning is issued
    and :func:`plan_for` returns None: every sample takes the exact path (same outputs, slower).
    """
    global _LOG_CHECKED
    if _LOG_CHECKED is None:
        from snapdp._logcache import premise_reference

        # the probe and ln u rounded to the nearest double (kept on disk: the same doubles)
        probe, reference = premise_reference(_premise_reference)
        us = np.array(probe, dtype=np.float64)
        nearest = np.array(reference, dtype=np.float64)
        ctx = gmpy2.context(precision=200)

        def exact(i: int) -> Any:  # ln u in MPFR at 200 bits, as _true_logs
            return ctx.log(gmpy2.mpfr(probe[i], 200))

        ok = _premise_check(nearest, np.asarray(np.log(us), dtype=np.float64), exact)
        ok = ok and _premise_check(nearest, np.array([math.log(u) for u in probe]), exact)
        if not ok:
            warnings.warn(
                "np.log or math.log on this machine is less accurate than the fast path assumes "
                "(16 ulps); snapdp uses the exact path for every sample (same outputs, slower). "
                "See docs/fast-path.md",
                RuntimeWarning,
                stacklevel=3,
            )
        _LOG_CHECKED = ok
    return _LOG_CHECKED


def _premise_reference() -> tuple[list[float], list[float]]:
    """The probe's doubles and, for each, ln u in MPFR at 200 bits rounded to a double."""
    us = _log_probe()
    return us.tolist(), [float(t) for t in _true_logs(us)]


def _true_logs(us: npt.NDArray[np.float64]) -> list[Any]:
    """ln u for each u, in MPFR at 200 bits."""
    ctx = gmpy2.context(precision=200)
    return [ctx.log(gmpy2.mpfr(u, 200)) for u in us.tolist()]


#: A double-precision test that implies the premise: with n = ln u rounded to a double (within
#: 2**-52 relative), |got − n| <= 3·2**-50·|n| gives |got − ln u| < 2**-48·|ln u| with room for
#: every rounding of the test itself. What it does not clear is checked exactly.
_CLEAR = 3.0 * 2.0**-50


def _within_premise(true: list[Any], logs: npt.NDArray[np.float64]) -> bool:
    """Whether every ``logs[i]`` is within :data:`LOG_PREMISE` relative of ``true[i]`` (exactly:
    the vectorised test only spares the MPFR comparison where it clears with room)."""
    nearest = np.array([float(t) for t in true], dtype=np.float64)
    return _premise_check(nearest, logs, lambda i: true[i])


def _premise_check(
    nearest: npt.NDArray[np.float64], logs: npt.NDArray[np.float64], exact: Callable[[int], Any]
) -> bool:
    """:func:`_within_premise` given ``nearest`` (each true logarithm rounded to the nearest
    double) and ``exact(i)`` (the i-th in MPFR at 200 bits, asked only where the vectorised
    test does not clear)."""
    if not bool(np.all(np.isfinite(logs))):
        return False
    clear = np.abs(logs - nearest) <= _CLEAR * np.abs(nearest)
    ctx = gmpy2.context(precision=200)
    for i in np.flatnonzero(~clear).tolist():
        t = exact(i)
        if abs(ctx.sub(gmpy2.mpfr(float(logs[i]), 200), t)) > LOG_PREMISE * abs(t):
            return False
    return True


def uniform(words: npt.NDArray[np.uint64]) -> npt.NDArray[np.float64]:
    """F1: U* from the sample blocks, assembled from bits (each exponent word >= 2**11).

    With t = w1 >> 11 (>= 1, converted to a double exactly) of biased exponent b, the word has
    bit length b − 1023 + 12, so e = 65 − bit length = 1076 − b, and U*'s biased exponent is
    1023 − e = b − 53, in [970, 1022]: a normal double in [2**-64, 1) with mantissa bits m.
    """
    t = (words[1::2] >> np.uint64(11)).astype(np.float64)
    biased = (t.view(np.uint64) >> np.uint64(52)) - np.uint64(53)
    bits = (biased << np.uint64(52)) | (words[0::2] & _MANTISSA)
    u: npt.NDArray[np.float64] = bits.view(np.float64)
    return u
