"""A ± for a weighted sum of independent snapped-Laplace errors (docs/data.md, "Tables that add
up", "The tighter fit bound").

A consistent table's fitted value is ŷⱼ = Σᵢ wᵢ·zᵢ, so ŷⱼ − yⱼ = Σᵢ wᵢ·eᵢ with eᵢ the errors of
independently released counts. Each eᵢ is the error of a snapping mechanism whose output is never
clamped (:func:`snapdp.data.statistics.consistency.open_bound`): in the data's units, for a
true count at offset x from the output grid (spacing G),

    e = G·round((x + Y)/G) − x (+ at most u₀, the final rounding of the output),

with Y = S·|Y|, S a fair sign, and the implementation's |Y| between two exponentials:
L₋·E <= |Y| and |Y| <=st L₊·(E + ln κ) for E ~ Exp(1), κ = 1 + 2**-52 (the log and the product
are rounded at 2**-p, L± = Δ·λ′·(1 ± 2**-p)², and U* is the rounding down of a uniform, whose
P(U* < t) <= κ·t). Rounding is monotone, so for the upper tail of e only the upper bound on |Y|
matters when S = +1 and only the lower one when S = −1, and conversely. Two facts follow, for
every offset x:

* tails: P(e >= kG − x) <= Ū(kG − G/2 − x) and P(e <= kG − x) <= Ū(x − kG − G/2), with
  Ū(v) = ½·min(1, κ·e^(−v/L₊)) for v >= 0 and 1 − ½·(e^(v/L₋) − 2**-1074) for v < 0;
* moments: E e^(t·e) <= B(|t|) := e^(|t|(h + s))·maxₘ M(xₘ, |t|), with M(x, t) the closed form
  of the moment generating function of G·round((x + V)/G) − x for V = ±L±·E (each sign with
  its own scale), xₘ = m·h (m = 1…N, h = G/N; moving x within a step of the grid moves e by at
  most h), and s = L₊·2**-52 (the ln κ). B is even, convex and nondecreasing in |t| (a supremum
  of moment generating functions, each >= 1 at offset 0), so it is tabulated and read at the
  next point up. Rounding averages out here: B ≈ the Laplace MGF, not e^(tG/2) times it.

The bound for Σ wᵢeᵢ (the **head** h = the largest |wᵢ|, the rest R = Σ_{i≠h} wᵢeᵢ):

* P(R > v) <= Q(v) = min(1, min over θ of e^(−θv)·Πᵢ B_i(θ|wᵢ|)) (Chernoff; also for P(R < −v)
  by symmetry), tabulated on a grid of v and read at the next point down (Q is nonincreasing);
* P(Σ > T) = E[P(R > T − w_h·e_h)] <= E[g(e_h)] with g(e) = Q(T − w_h·e) nondecreasing in e, which
  by Abel summation over the grid values e_k = kG − x is at most
  g(e_K₀) + Σ_k (g(e_k) − g(e_(k−1)))·min(1, Ū(kG − G/2 − x)) + Ū(K₁G + G/2 − x); likewise the
  lower tail, at the *same* offset x: both tails of the head are counted together, as the ± of a
  count released alone counts them (:func:`snapdp.accuracy.accuracy_bound`);
* the largest, over a grid of offsets (steps h, each moving the head by at most w_h·h), of the
  two tails' sum is <= α at the smallest T found by bisection.

Then T + Σ|wᵢ|·u₀ᵢ. The doubles' own errors are covered by a relative margin of 1e-9 on every
probability and on T. Cost: a few milliseconds per fitted value; families up to
:data:`MAX_NOISES` noises.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from msgspec import Struct

from snapdp import _exact
from snapdp.accuracy import _output_rounding, _tail_scale
from snapdp.parameters import SnappingParameters

__all__ = [
    "MAX_NOISES",
    "NoiseKind",
    "combination_accuracy",
    "log_mgf_bound",
    "noise_kind",
    "sum_accuracies",
    "sum_accuracy",
]

#: The most noises of a family for which the bound is computed (its cost grows as their square).
MAX_NOISES = 160
_KAPPA = 1 + 2.0**-52
_MARGIN = 1 + 1e-9
_OFFSETS = 256  # offsets per grid step (N)
_V_POINTS = 4096  # points of the tabulated Q
_HEAD_SPAN = 40  # grid values of the head on each side of 0
_HEADS = 3  # the largest weights treated exactly (the first two-sided, the others one-sided)
_PEEL_SHARE = 0.15  # a weight below this share of the largest goes to the Chernoff rest
_MANY_ROWS = 48  # families with more values treat only the largest weight exactly
_Array = npt.NDArray[np.float64]
_Index = npt.NDArray[np.int64]
# points u = θ·L₊ in [0, 1) where B is tabulated (dense near 1, where B grows like 1/(1 − u²))
_U = np.concatenate([np.linspace(0.0, 0.9, 181), 1 - 0.1 * np.geomspace(1, 1e-5, 81)[1:]])


class NoiseKind(Struct, frozen=True):
    """The public description of one mechanism's never-clamped error, in the data's units."""

    grid: float  # G = Δ·Λ
    scale_hi: float  # L₊ >= Δ·λ′(1 + 2**-p)², rounded up
    scale_lo: float  # L₋ <= Δ·λ′(1 − 2**-p)², rounded down
    rounding: float  # u₀: the final rounding of the output (0 when every grid point is a double)


def noise_kind(params: SnappingParameters) -> NoiseKind:
    """The :class:`NoiseKind` of a mechanism's exact parameters."""
    delta = params.sensitivity
    hi = _exact.round_up(_tail_scale(params) * delta, 53)
    lo = _exact.round_down(params.scale * (1 - params.eta) ** 2 * delta, 53)
    return NoiseKind(
        float(_exact.round_up(params.grid * delta, 53)),
        float(hi),
        float(lo),
        float(_exact.round_up(_output_rounding(params), 53)),
    )


def _mgf(kind: NoiseKind, theta: _Array, x: _Array) -> _Array:
    """M(x, θ) (module docstring), θ >= 0 (rows) and offsets x in [0, G) (columns), in grid
    units: the positive sign with scale L₊, the negative with L₋; every term is >= 0."""
    t = theta[:, None] * kind.grid
    x = x[None, :] / kind.grid
    rp, rm = kind.scale_hi / kind.grid, kind.scale_lo / kind.grid
    low = x < 0.5
    k0 = np.where(low, 0.0, 1.0)  # the grid index nearest x + 0, rounding up at ½
    first_p = -np.expm1(-np.where(low, 0.5 - x, 1.5 - x) / rp)
    ratio = np.exp(t - 1 / rp)  # < 1: θ·L₊ < 1
    pos = np.exp(t * (k0 - x)) * first_p + (-np.expm1(-1 / rp)) * np.exp(
        (0.5 + x) / rp - t * x
    ) * ratio ** (k0 + 1) / (-np.expm1(t - 1 / rp))
    first_m = -np.expm1(-np.where(low, x + 0.5, x - 0.5) / rm)
    neg = np.exp(t * (k0 - x)) * first_m + (-np.expm1(-1 / rm)) * np.exp(
        -t * x - (x - 0.5) / rm + (k0 - 1) * (t + 1 / rm)
    ) / (-np.expm1(-(t + 1 / rm)))
    return np.asarray(0.5 * (pos + neg), dtype=np.float64)


@functools.lru_cache(maxsize=256)
def _log_mgf_table(kind: NoiseKind) -> _Array:
    """log B at θ = u/L₊ for u in _U (rounded up by the margin)."""
    theta = _U / kind.scale_hi
    h = kind.grid / _OFFSETS
    x = np.arange(1, _OFFSETS + 1, dtype=np.float64) * h
    x[-1] = 0.0  # the offset G is the offset 0
    rows = [_mgf(kind, theta[i : i + 32], x).max(axis=1) for i in range(0, len(theta), 32)]
    sup = np.concatenate(rows)
    shift = h + kind.scale_hi * 2.0**-52
    return np.asarray(np.log(sup * _MARGIN) + theta * shift * _MARGIN, dtype=np.float64)


def _log_mgf(kind: NoiseKind, t: _Array) -> _Array:
    """An upper bound on log E e^(t·e) for |t| (next tabulated point up; inf beyond)."""
    u = np.abs(t) * kind.scale_hi
    j = np.searchsorted(_U, u, side="left")
    table = _log_mgf_table(kind)
    out = np.full(u.shape, np.inf)
    ok = j < len(_U)
    out[ok] = table[j[ok]]
    return out


def log_mgf_bound(kind: NoiseKind, t: _Array) -> _Array:
    """An upper bound on log E e^(t·e) for one never-clamped error e of this kind, at every
    offset of the true count (the B of the module docstring): inf where |t|·L₊ is too close to 1.
    Used for trees' CDF errors too
    (:func:`snapdp.data.statistics.math.quantile_tail.tree_tail_bound`)."""
    return _log_mgf(kind, np.asarray(t, dtype=np.float64))


def _tail_up(kind: NoiseKind, v: _Array) -> _Array:
    """Ū(v) >= P(Y >= v) (module docstring), capped at 1."""
    pos = 0.5 * _KAPPA * np.exp(-np.maximum(v, 0.0) / kind.scale_hi) * _MARGIN
    neg = 1 - 0.5 * (np.exp(np.minimum(v, 0.0) / kind.scale_lo) / _MARGIN - 2.0**-1074)
    return np.asarray(np.minimum(1.0, np.where(v >= 0, pos, neg)), dtype=np.float64)


def _rest_tail(weights: _Array, kinds: Sequence[NoiseKind], top: float) -> tuple[float, _Array]:
    """(δ, q) with q[m] >= P(R > m·δ) for m = 0…len−1 (the Chernoff Q), q nonincreasing."""
    delta = top / (_V_POINTS - 1)
    v = np.arange(_V_POINTS) * delta
    if not len(weights):
        return delta, np.zeros(_V_POINTS)  # R = 0: P(R > v) = 0 for v >= 0
    limit = min(1 / (abs(w) * k.scale_hi) for w, k in zip(weights, kinds, strict=True) if w != 0)
    thetas = _U[1:-1] * limit
    phi = np.zeros(len(thetas))
    for w, k in zip(weights, kinds, strict=True):
        if w != 0:
            phi += _log_mgf(k, thetas * abs(w))
    # φ(θ) − θ·v, its minimum over θ in blocks of 32 θ in one buffer (a whole θ × v array is
    # 8 MB, a fresh one per call): the same values and minimum, several times faster
    log_q, block = np.full(_V_POINTS, np.inf), np.empty((32, _V_POINTS))
    for start in range(0, len(thetas), 32):
        part = block[: len(thetas[start : start + 32])]
        np.multiply(thetas[start : start + 32, None], v[None, :], out=part)
        np.subtract(phi[start : start + 32, None], part, out=part)
        np.minimum(log_q, part.min(axis=0), out=log_q)
    q = np.minimum(1.0, np.exp(log_q) * _MARGIN)
    return delta, np.asarray(np.minimum.accumulate(q), dtype=np.float64)


def _read_into(padded: _Array, delta: float, x: _Array, m: _Index, g: _Array) -> _Array:
    """P(S > v) <= this at v = ``x``, from q[m] >= P(S > m·δ) (q nonincreasing, ``padded`` is q
    with a 1 in front): q at the grid point at or below v, the last value beyond the grid, 1
    below 0. In the caller's arrays: ``x`` becomes ⌊v/δ⌋, ``m`` its int64 + 1, and the gather
    goes into ``g`` (returned), whose ``mode="clip"`` is the clip of ⌊v/δ⌋ to [−1, len(q) − 1].
    One gather, no boolean masks; arrays kept by a caller that reads many times (fresh ones of
    the offsets × k × v size cost the kernel's page faults at every read)."""
    np.floor(np.divide(x, delta, out=x), out=x)
    np.copyto(m, x, casting="unsafe")  # x.astype(np.int64)
    m += 1
    padded.take(m, out=g, mode="clip")
    return g


@functools.lru_cache(maxsize=16)  # ~2 MB a head at _OFFSETS: a long page session keeps few
def _head(kind: NoiseKind, offsets: int) -> tuple[float, _Array, _Array, _Array, _Array, _Array]:
    """(h, e, ge, le, beyond_up, beyond_down) of one head: its grid values e_k = kG − x at the
    offsets x = 0, h, …, G (rows), Ū of P(e >= e_k) and of P(e <= e_k) (the first and the last
    replaced by 1, which the Abel sums need), and Ū of the masses beyond the span."""
    h = kind.grid / offsets
    xs = np.arange(offsets + 1) * h
    ks = np.arange(-_HEAD_SPAN, _HEAD_SPAN + 1)
    e = ks[None, :] * kind.grid - xs[:, None]
    ge = _tail_up(kind, (ks[None, :] - 0.5) * kind.grid - xs[:, None])
    le = _tail_up(kind, xs[:, None] - (ks[None, :] + 0.5) * kind.grid)
    ge[:, 0] = 1.0
    le[:, -1] = 1.0
    beyond_up = _tail_up(kind, (ks[-1] + 0.5) * kind.grid - xs)
    beyond_down = _tail_up(kind, xs - (ks[0] - 0.5) * kind.grid)
    for a in (e, ge, le, beyond_up, beyond_down):  # kept for the process (cached): read only
        a.flags.writeable = False
    return h, e, ge, le, beyond_up, beyond_down


class _Buffers:
    """Work arrays for :func:`_read_into` of one shape, made once per :func:`_peel` or
    :func:`_solve` (fresh arrays of 0.2–5.5 MB per read cost as much in page faults as the
    arithmetic)."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.x = np.empty(shape)
        self.m = np.empty(shape, dtype=np.int64)
        self.g = np.empty(shape)


def _upper(
    padded: _Array, delta: float, we: _Array, head: tuple[Any, ...], v: _Array, buf: _Buffers
) -> _Array:
    """Ū of P(S + w·e > v) for each offset (rows) and each v (columns): the Abel sum over the
    head's grid values with g(e) = P(S > v − w·e) <= _read_into (nondecreasing in e); ``we`` is
    w·e (offsets × k × 1), ``padded`` q with a 1 in front. The operations of
    the read at v − we, ``np.diff(g, axis=1, prepend=0.0)`` and the weighted sum, in
    ``buf``: the same values."""
    _, _, ge, _, beyond_up, _ = head
    n = len(v)
    x, m, g = buf.x[:, :, :n], buf.m[:, :, :n], buf.g[:, :, :n]
    g = _read_into(padded, delta, np.subtract(v[None, None, :], we, out=x), m, g)
    np.subtract(g[:, 0, :], 0.0, out=x[:, 0, :])  # the increments, into x
    np.subtract(g[:, 1:, :], g[:, :-1, :], out=x[:, 1:, :])
    np.multiply(x, ge[:, :, None], out=x)
    return np.asarray(x.sum(axis=1) + beyond_up[:, None], dtype=np.float64)


def _peel(delta: float, q: _Array, w: float, kind: NoiseKind) -> _Array:
    """q′[m] >= P(S + w·e > m·δ) for every offset of e: the largest over the offsets' grid, each
    step of which moves w·e by at most w·h (so read at v − w·h, at the step's upper end)."""
    head = _head(kind, _OFFSETS // 8)
    h, e = head[0], head[1]
    v = np.arange(len(q), dtype=np.float64) * delta - w * h
    out = np.empty(len(q))
    padded, we = np.concatenate(([1.0], q)), w * e[:, :, None]
    buf = _Buffers((e.shape[0], e.shape[1], 256))
    for start in range(0, len(q), 256):
        part = _upper(padded, delta, we, head, v[start : start + 256], buf)
        out[start : start + 256] = part[1:].max(axis=0)
    return np.asarray(np.minimum.accumulate(np.minimum(out * _MARGIN, 1.0)), dtype=np.float64)


def sum_accuracy(
    weights: _Array, kinds: Sequence[NoiseKind], alphas: Sequence[float], heads: int = _HEADS
) -> list[float]:
    """For each α of ``alphas``, T with P(|Σ wᵢeᵢ| > T) <= α for every set of true counts
    (module docstring); inf when none is found below the search's cap. ``heads``: how many of
    the largest weights are treated exactly (any number gives a valid bound; more is tighter
    and slower)."""
    w = np.abs(np.asarray(weights, dtype=np.float64))
    if not w.any():
        return [0.0 for _ in alphas]
    order = np.argsort(-w * np.array([k.scale_hi for k in kinds]), kind="stable")
    chosen = [int(i) for i in order[:heads] if w[i] >= _PEEL_SHARE * w[order[0]]]
    first, inner = chosen[0], chosen[1:][::-1]  # peeled smallest first, the largest last
    rest_idx = [i for i in range(len(w)) if i not in chosen]
    rest, rest_kinds = w[rest_idx], [kinds[i] for i in rest_idx]
    deterministic = float(w @ np.array([k.rounding for k in kinds]))
    # the grid of the tail functions: up to a threshold far beyond any α the search accepts
    size = sum(w[i] * (kinds[i].scale_hi + kinds[i].grid) for i in chosen)
    spread = [(wi * (k.scale_hi + k.grid)) ** 2 for wi, k in zip(rest, rest_kinds, strict=True)]
    size += 3 * math.sqrt(sum(spread))
    top = 16 * size + kinds[first].grid
    delta, q = _rest_tail(rest, rest_kinds, top)
    for i in inner:
        q = _peel(delta, q, float(w[i]), kinds[i])
    return _solve(delta, q, float(w[first]), kinds[first], alphas, top, deterministic)


def _solve(
    delta: float, q: _Array, wh: float, kh: NoiseKind, alphas: Sequence[float], top: float,
    deterministic: float,
) -> list[float]:  # fmt: skip
    """For each α, the smallest T (bisection) whose two tails of wh·e_h + R, R's tails bounded
    by ``q`` on the grid of spacing ``delta``, sum to at most α at every offset of the head."""
    h, e, ge, le, beyond_up, beyond_down = _head(kh, _OFFSETS)
    # made once for the bisection (each failure(t) did them again: the same values)
    padded, we = np.concatenate(([1.0], q)), wh * e
    inc, dec, buf = np.empty(e.shape), np.empty(e.shape), _Buffers(e.shape)

    def read(v: _Array) -> _Array:  # _read_into at v (written into buf.x), into buf.g
        return _read_into(padded, delta, v, buf.m, buf.g)

    def failure(t: float) -> float:
        tm = t - wh * h
        up = read(np.subtract(tm, we, out=buf.x))  # at tm − we: nondecreasing in k
        inc[:, 0] = up[:, 0]  # np.diff(up, axis=1, prepend=0.0), its subtractions in place
        np.subtract(up[:, 1:], up[:, :-1], out=inc[:, 1:])
        p_up = np.multiply(inc, ge, out=inc).sum(axis=1) + beyond_up
        down = read(np.add(tm, we, out=buf.x))  # at tm + we: nonincreasing
        np.subtract(down[:, 1:], down[:, :-1], out=dec[:, :-1])  # np.diff(…, append=0.0)
        np.subtract(0.0, down[:, -1], out=dec[:, -1])
        p_down = np.multiply(np.negative(dec, out=dec), le, out=dec).sum(axis=1) + beyond_down
        return float((p_up[1:] + p_down[:-1]).max()) * _MARGIN

    out = []
    for alpha in alphas:
        lo, hi = 0.0, top
        if failure(hi) > alpha:
            out.append(math.inf)
            continue
        for _ in range(48):
            mid = (lo + hi) / 2
            if failure(mid) <= alpha:
                hi = mid
            else:
                lo = mid
            if hi - lo <= 1e-6 * hi:
                break
        out.append(float(np.nextafter((hi + deterministic) * _MARGIN, np.inf)))
    return out


def _envelope_tail(rest: Sequence[tuple[float, NoiseKind]], v: _Array) -> _Array:
    """q[m] >= P(R > v[m]) and >= P(R < −v[m]) for R = Σ cᵢeᵢ, every |cᵢ| <= Cᵢ (``rest``:
    (Cᵢ, kindᵢ), at most two with Cᵢ > 0) and every true value: cᵢeᵢ <= Cᵢ·(Gᵢ/2 + L₊ᵢ·ln κ)
    + Cᵢ·L₊ᵢ·S⁺·E′ in distribution (E′ ~ Exp(1), S a fair sign; rounding aside), and the tail
    of that sum, nondecreasing in every Cᵢ, is ¼·(e^(−u/Λ₁) + e^(−u/Λ₂) + H(u)) with
    H(u) = (Λ₁e^(−u/Λ₁) − Λ₂e^(−u/Λ₂))/(Λ₁ − Λ₂) (the tail of Λ₁E₁ + Λ₂E₂)."""
    terms = [(c, k) for c, k in rest if c > 0]
    shift = sum(c * (k.grid / 2 + k.scale_hi * math.log(_KAPPA)) for c, k in terms)
    u = np.maximum(v - shift * _MARGIN, 0.0)
    lam = sorted(c * k.scale_hi * _MARGIN for c, k in terms)
    if not lam:
        tail = np.zeros(v.shape)
    elif len(lam) == 1:
        tail = 0.5 * np.exp(-u / lam[0])
    elif len(lam) == 2:
        l1, l2 = lam[1], lam[0]  # l1 >= l2
        if l1 - l2 <= 1e-6 * l1:  # equal scales (raising Λ₂ to Λ₁ only raises the tail)
            both = (1 + u / l1) * np.exp(-u / l1)
            l2 = l1
        else:
            both = (l1 * np.exp(-u / l1) - l2 * np.exp(-u / l2)) / (l1 - l2)
        tail = 0.25 * (np.exp(-u / l1) + np.exp(-u / l2) + both)
    else:
        raise ValueError("at most two weighted terms besides the head")
    tail = np.where(v < shift * _MARGIN, 1.0, tail * _MARGIN)
    return np.asarray(np.minimum.accumulate(np.minimum(tail, 1.0)), dtype=np.float64)


def combination_accuracy(
    head: NoiseKind, rest: tuple[tuple[float, NoiseKind], ...], alpha: float
) -> float:
    """T with P(|e₀ + Σ cᵢeᵢ| > T) <= α for independent never-clamped errors (e₀ of kind
    ``head``), every set of true values and every weights |cᵢ| <= Cᵢ (``rest``: (Cᵢ, kindᵢ), at
    most two): the head exactly, as in :func:`sum_accuracy`, the rest by the envelope of
    :func:`_envelope_tail`. Nondecreasing in every Cᵢ, so a T at upper bounds on unknown weights
    holds at the weights themselves. Cached on the exact public inputs."""
    return _combination_cached(head, rest, alpha)


@functools.lru_cache(maxsize=4096)
def _combination_cached(
    head: NoiseKind, rest: tuple[tuple[float, NoiseKind], ...], alpha: float
) -> float:
    deterministic = head.rounding + sum(c * k.rounding for c, k in rest)
    size = head.scale_hi + head.grid + sum(c * (k.scale_hi + k.grid) for c, k in rest)
    top = 16 * size + head.grid
    delta = top / (_V_POINTS - 1)
    q = _envelope_tail(rest, np.arange(_V_POINTS, dtype=np.float64) * delta)
    if len(rest) > 1:  # also the Chernoff bound (nondecreasing in every weight): the smaller
        weights = np.array([c for c, _ in rest], dtype=np.float64)
        q = np.minimum(q, _rest_tail(weights, [k for _, k in rest], top)[1])
    return _solve(delta, q, 1.0, head, (alpha,), top, deterministic)[0]


def sum_accuracies(
    weights: _Array, kinds: Sequence[NoiseKind], alphas: tuple[float, ...]
) -> _Array:
    """:func:`sum_accuracy` for each row of ``weights`` (rows × alphas); cached on the exact
    public inputs (seeded benchmarks and repeated releases of one table fit the same family)."""
    w = np.ascontiguousarray(weights, dtype=np.float64)
    return np.array(_cached(w.tobytes(), w.shape, tuple(kinds), alphas), dtype=np.float64)


@functools.lru_cache(maxsize=64)
def _cached(
    raw: bytes, shape: tuple[int, ...], kinds: tuple[NoiseKind, ...], alphas: tuple[float, ...]
) -> _Array:
    w = np.frombuffer(raw, dtype=np.float64).reshape(shape)
    heads = _HEADS if len(w) <= _MANY_ROWS else 1  # bound the cost of large families
    return np.array([sum_accuracy(row, kinds, alphas, heads) for row in w], dtype=np.float64)
