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
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import numpy.typing as npt

from snapdp.fast_plan import CHUNK, FastPlan, uniform
from snapdp.parameters import SnappingParameters
from snapdp.randomness import BitSource, draw_uniform, substreams
from snapdp.snapping import normalize, output_from_index, snapped_output

__all__ = ["default_threads", "release_chunks", "release_into", "release_one"]

_EXACT_INT = 1 << 53  # integers of at most this magnitude are doubles exactly
_SIGN_BIT = np.uint64(1 << 63)


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
    u = uniform(words)
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
