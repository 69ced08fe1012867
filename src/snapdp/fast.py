"""The vectorised release path: float64 with a proven error bound, exact fallback (DESIGN §7).

:func:`release_into` computes, for a whole array, exactly the doubles that
:func:`snapdp.snapping.snapped_output` gives sample by sample, reading the bit source in exactly the
order in which repeated :meth:`~snapdp.SnappingMechanism.release` calls read it. It is numpy only;
the arbitrary-precision arithmetic is reached solely through the two pure functions of
:mod:`snapdp.snapping` (``snapped_output`` for a hard sample, ``output_from_index`` for an output
whose float formula is not exact), so the mechanism keeps one definition.

The derivation of every shortcut, with the error bounds, is in ``docs/fast-path.md``; the comments
below name its steps (F1–F6). In brief, per sample:

F1. The words → (S, U*) exactly as :func:`snapdp.randomness.draw_uniform` does (U* is assembled
    from its bits; no rounding). Samples whose exponent word is below 2**11 (probability 2**-53,
    this includes the all-zero word that makes the scalar path read further words) are drawn by
    the scalar code itself, after the unread words are pushed back, so the stream stays aligned.
F2. x̃ is approximated by xf = (clip(x) − c)/Δ in doubles (c, Δ, the bounds are doubles: see
    :class:`FastPlan`); |xf − x̃| <= 2**-51·|xf| + 2**-1074.
F3. Y by y = S·fl(λ′_f·np.log(U*)); |y − Y| <= 2**-47·|y| assuming np.log within 16 ulps (measured:
    below 1 ulp, see the docs).
F4. v = fl(xf + y); |v − (x̃ + Y)| <= E_true <= E = 2**-50|xf| + 2**-46|y| + 2**-51|v| + 2**-1020,
    E computed in doubles is still >= E_true (each coefficient has a factor >= 2 of slack).
F5. a = v/Λ + 1/2, k = ⌊a⌋, f = a − k: if m <= f <= 1 − m with m = E/Λ + 2**-50·(|a| + 2), every
    real number within E of v has the same ⌊·/Λ + 1/2⌋, so k is the exact grid index; else the
    sample is *hard* and goes to ``snapped_output``.
F6. The clamp is an exact integer comparison with K = ⌈B̃/Λ⌉; an interior output c + Δ·Λ·k is
    computed as one IEEE addition of two doubles, exact up to its single rounding, when
    |k| < 2**(53 − bits(Δ)) makes Δ·Λ·k a double; other indices go through ``output_from_index``
    once per distinct value.
"""

from __future__ import annotations

import math
import os
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import gmpy2
import numpy as np
import numpy.typing as npt

from snapdp import _exact
from snapdp.parameters import SnappingParameters
from snapdp.randomness import BitSource, draw_uniform, substreams
from snapdp.snapping import normalize, output_from_index, snapped_output

__all__ = [
    "CHUNK",
    "FastPlan",
    "default_threads",
    "fallback_probability",
    "log_premise_holds",
    "plan_for",
    "release_chunks",
    "release_into",
]

CHUNK = 1 << 17  # samples per chunk: 2 MiB of words, about 10 MiB of temporaries per thread
LOG_PREMISE = 2.0**-48  # |np.log(u) − ln u| <= LOG_PREMISE·|ln u| (F3)
_TIMING_LOG2_TARGET = -80  # F is chosen so that the timing event adds at most 2**-80 to δ
_EXACT_INT = 1 << 53  # integers of at most this magnitude are doubles exactly
_RANGE = 500  # Λ, B̃ within 2**±500: no overflow or harmful underflow in F2–F5
_SIGN_BIT = np.uint64(1 << 63)
_MANTISSA = np.uint64((1 << 52) - 1)


@dataclass(frozen=True, slots=True)
class FastPlan:
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
    if not log_premise_holds():
        return None
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
    margin for the roundings.
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
        if log_one_plus_e_eps + log_q <= target:
            return f, min(1.0, 2.0 * math.exp(log_one_plus_e_eps + log_q))
        f += 1
        log_q += log_cp - math.log(f + 1)
    return CHUNK, 0.0


_LOG_CHECKED: bool | None = None  # the premise check runs once per process (the libm is fixed)


def _log_probe() -> npt.NDArray[np.float64]:
    """Doubles in (0, 1) where a log is hardest to get right, and ordinary draws of U*."""
    rng = np.random.default_rng(20261123)
    words = rng.integers(0, 2**64, 4000, dtype=np.uint64)
    words[1::2] |= np.uint64(1 << 11)
    ordinary = _uniform(words)
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
        us = _log_probe()
        ok = _within_premise(us, np.asarray(np.log(us), dtype=np.float64)) and _within_premise(
            us, np.array([math.log(u) for u in us.tolist()])
        )
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


def _within_premise(us: npt.NDArray[np.float64], logs: npt.NDArray[np.float64]) -> bool:
    ctx = gmpy2.context(precision=200)
    for u, got in zip(us.tolist(), logs.tolist(), strict=True):
        if not math.isfinite(got):
            return False
        true = ctx.log(gmpy2.mpfr(u, 200))
        if abs(ctx.sub(gmpy2.mpfr(got, 200), true)) > LOG_PREMISE * abs(true):
            return False
    return True


def release_chunks(
    params: SnappingParameters,
    plan: FastPlan,
    values: npt.NDArray[Any],
    source: BitSource,
    out: npt.NDArray[np.float64],
    threads: int,
    chunk: int = CHUNK,
) -> int:
    """Fill ``out`` with the releases of ``values`` in chunks, on up to ``threads`` threads.

    At most ``chunk`` values: one chunk reading ``source`` itself, exactly as :func:`release_into`
    (and as repeated ``release`` calls). More: chunk i (values i·chunk … (i+1)·chunk − 1) reads
    the i-th of :func:`~snapdp.randomness.substreams` of ``source``, so the output depends on the
    source and the values only, never on ``threads``. Every chunk then does
    ``plan.padded_evaluations`` exact evaluations: its real fallbacks, padded with dummy ones
    (docs/fast-path.md, "Constant work per chunk"). Returns the number of real fallbacks.
    """
    n = values.size
    count = max(1, -(-n // chunk))
    sources = [source] if count == 1 else substreams(source, count)

    def run(i: int) -> int:
        lo, hi = i * chunk, min(n, (i + 1) * chunk)
        real = release_into(params, plan, values[lo:hi], sources[i], out[lo:hi], chunk)
        # a chunk of m values cannot need more than m: pad to min(F, m) (m is public)
        _pad(params, values[lo:hi], min(plan.padded_evaluations, hi - lo) - real)
        return real

    workers = max(1, min(threads, count))
    if workers == 1:
        return sum(run(i) for i in range(count))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return sum(pool.map(run, range(count)))


def _pad(params: SnappingParameters, values: npt.NDArray[Any], dummies: int) -> None:
    """``dummies`` exact evaluations whose results are discarded (the same work as a fallback)."""
    if dummies <= 0 or values.size == 0:
        return
    x = normalize(params, _python_value(values[0]))
    for _ in range(dummies):
        snapped_output(params, x, 1, 0.75)


def default_threads() -> int:
    """All cores: ``os.cpu_count()`` (1 if unknown)."""
    return os.cpu_count() or 1


def release_into(
    params: SnappingParameters,
    plan: FastPlan,
    values: npt.NDArray[Any],
    source: BitSource,
    out: npt.NDArray[np.float64],
    chunk: int = CHUNK,
) -> int:
    """Fill ``out`` (flat float64) with the releases of ``values`` (flat, int or float, no NaN).

    Bit for bit what ``snapped_output(params, normalize(params, x), S, U*)`` gives for each x in
    turn, with (S, U*) from :func:`~snapdp.randomness.draw_uniform` on ``source``; the source is
    left exactly where that loop would leave it. Returns the number of samples computed by the exact
    fallback (hard samples, rare draws, and integers beyond 2**53), for tests and benchmarks.
    """
    n_total = values.size
    pos = 0
    fallbacks = 0
    while pos < n_total:
        n = min(chunk, n_total - pos)
        words = source.words(2 * n)
        w1 = words[1::2]
        rare = (w1 >> np.uint64(11)) == 0
        if rare.any():  # F1: probability 2**-53 per sample
            j = int(np.argmax(rare))
            if j:
                fallbacks += _vector_block(
                    params, plan, values[pos : pos + j], words[: 2 * j], out[pos : pos + j]
                )
            source.unread(words[2 * j :])
            draw = draw_uniform(source)
            out[pos + j] = snapped_output(
                params, normalize(params, _python_value(values[pos + j])), draw.sign, draw.u
            )
            fallbacks += 1
            pos += j + 1
            continue
        fallbacks += _vector_block(params, plan, values[pos : pos + n], words, out[pos : pos + n])
        pos += n
    return fallbacks


def _python_value(x: Any) -> int | float:
    """The Python number the exact path normalises: int for integer dtypes, else float."""
    return int(x) if isinstance(x, np.integer) else float(x)


def _uniform(words: npt.NDArray[np.uint64]) -> npt.NDArray[np.float64]:
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


def _vector_block(
    params: SnappingParameters,
    plan: FastPlan,
    values: npt.NDArray[Any],
    words: npt.NDArray[np.uint64],
    out: npt.NDArray[np.float64],
) -> int:
    """Releases of one block (no rare draws in it); returns the number of exact fallbacks."""
    forced: npt.NDArray[np.bool_] | None = None
    lo, hi = math.floor(plan.lower), math.ceil(plan.upper)
    if values.dtype.kind in "iu" and lo >= -_EXACT_INT and hi <= _EXACT_INT:
        # F2 for integers: clip to [⌊lower⌋, ⌈upper⌉] in the integer dtype first; a clipped value
        # still clamps to the same bound below, and every value is now a double exactly
        info = np.iinfo(values.dtype)
        lo_c, hi_c = max(lo, int(info.min)), min(hi, int(info.max))
        if hi_c < lo_c:  # unsigned values, upper < 0: every value clamps to upper
            x = np.full(values.shape, float(hi))
        else:
            x = np.clip(values, lo_c, hi_c).astype(np.float64)
    elif values.dtype.kind in "iu":
        big = (
            (values > _EXACT_INT) | (values < -_EXACT_INT)
            if values.dtype.kind == "i"
            else (values > _EXACT_INT)
        )
        if big.any():
            forced = big
            x = np.where(big, 0, values).astype(np.float64)
        else:
            x = values.astype(np.float64)
    else:
        x = values.astype(np.float64, copy=False)
    # F2: exact clamp by comparison (np.clip returns one of its arguments), then two roundings
    xf = np.clip(x, plan.lower, plan.upper)
    xf -= plan.center
    xf /= plan.sensitivity
    # F1, F3: U*, then y = fl(λ′·log U*) < 0; S = −1 (bit 63 of word 0) flips the sign bit
    u = _uniform(words)
    y = np.log(u)
    y *= plan.scale
    sign = words[0::2] & _SIGN_BIT
    y.view(np.uint64)[...] ^= sign
    # F4: v and its error bound E (in grid units below: exact scaling by a power of two)
    v = xf + y
    err = np.abs(xf)
    err *= 2.0**-50
    np.abs(y, out=y)
    y *= 2.0**-46
    err += y
    a = np.abs(v)
    a *= 2.0**-51
    err += a
    err += 2.0**-1020
    err *= plan.inv_grid
    # F5: a = v/Λ + 1/2, k = ⌊a⌋, accept when m <= a − k <= 1 − m
    np.multiply(v, plan.inv_grid, out=a)
    a += 0.5
    k = np.floor(a)
    np.abs(a, out=v)
    v += 2.0
    v *= 2.0**-50
    err += v  # err is now m
    a -= k  # a is now the fractional part f
    ok = a >= err
    np.subtract(1.0, err, out=err)
    ok &= a <= err
    if forced is not None:
        ok &= ~forced
    hard = np.flatnonzero(~ok)
    # F6: clamp by exact integer comparison; interior outputs as c + (Δ·Λ)·k
    k[hard] = 0.0
    if plan.clamp_index < plan.exact_index:
        # branch-free (no time that depends on the pattern of clamped outputs): with
        # K·Δ·Λ a double, fl(c + Δ·Λ·K) >= upper and fl(c − Δ·Λ·K) <= lower (monotone rounding,
        # the bounds are doubles), while interior indices give values within [lower, upper]
        np.clip(k, -plan.clamp_index, plan.clamp_index, out=k)
        result = k * plan.step
        result += plan.center
        np.maximum(result, plan.lower, out=result)
        np.minimum(result, plan.upper, out=result)
        inexact = None
    else:
        result = k * plan.step
        result += plan.center
        np.copyto(result, plan.upper, where=k >= plan.clamp_index)
        np.copyto(result, plan.lower, where=k <= -plan.clamp_index)
        inexact = (np.abs(k) >= plan.exact_index) & (np.abs(k) < plan.clamp_index)
    if inexact is not None and inexact.any():
        idx = np.flatnonzero(inexact)
        distinct, inverse = np.unique(k[idx], return_inverse=True)
        mapped = np.array([output_from_index(params, int(d)) for d in distinct])
        result[idx] = mapped[inverse]
    for i in hard:
        w0 = int(words[2 * i])
        result[i] = snapped_output(
            params,
            normalize(params, _python_value(values[i])),
            -1 if w0 >> 63 else 1,
            float(u[i]),
        )
    out[...] = result
    return int(hard.size)


def release_one(
    params: SnappingParameters, plan: FastPlan, value: int | float, source: BitSource
) -> float:
    """One release, bit for bit ``snapped_output(params, normalize(params, value), S, U*)``.

    The scalar twin of :func:`release_into` (steps F1–F6 with Python floats, which are IEEE
    doubles rounded to nearest; ``math.log`` takes the place of ``np.log``, with the same assumed
    bound). Reads the same words as :func:`~snapdp.randomness.draw_uniform`. ``value`` must be an
    int or a float (not NaN); ints beyond 2**53 take the exact path.
    """
    pair = getattr(source, "pair", None)
    w0, w1 = pair() if pair is not None else (source.word(), source.word())
    if w1 < 2048:  # F1: rare draw (probability 2**-53): the scalar sampler reads on
        source.unread(np.array([w0, w1], dtype=np.uint64))
        draw = draw_uniform(source)
        return snapped_output(params, normalize(params, value), draw.sign, draw.u)
    # F1: e = 65 − bit length, U* = (2**52 + m)·2**-(52+e), exact
    u = math.ldexp(float(w0 & 0xFFFFFFFFFFFFF | 0x10000000000000), w1.bit_length() - 117)
    if isinstance(value, int) and not -_EXACT_INT <= value <= _EXACT_INT:
        return snapped_output(params, normalize(params, value), -1 if w0 >> 63 else 1, u)
    x = float(value)  # exact: a float, or an int of magnitude <= 2**53
    # F2: one code path for clamped and unclamped values (min/max return one of their
    # arguments, so the clamp is exact), as np.clip in the vectorised path
    xf = (min(max(x, plan.lower), plan.upper) - plan.center) / plan.sensitivity
    # F3, F4
    y = plan.scale * math.log(u)
    if w0 >> 63:
        y = -y
    v = xf + y
    err = (abs(xf) * 2.0**-50 + abs(y) * 2.0**-46 + abs(v) * 2.0**-51 + 2.0**-1020) * plan.inv_grid
    # F5 (|a| < 2**49 is implied by acceptance; checked first so that floor gets a finite value)
    a = v * plan.inv_grid + 0.5
    if abs(a) < 2.0**49:
        k = math.floor(a)
        frac = a - k
        m = err + (abs(a) + 2.0) * 2.0**-50
        if m <= frac <= 1.0 - m:
            # F6
            if k >= plan.clamp_index:
                return plan.upper
            if k <= -plan.clamp_index:
                return plan.lower
            if abs(k) < plan.exact_index:
                return plan.center + plan.step * k
            return output_from_index(params, k)
    return snapped_output(params, normalize(params, value), -1 if w0 >> 63 else 1, u)
