"""The search of :func:`snapdp.data.statistics.math.sum_bound._solve` (docs/performance.md,
"Fresh `snapdp run`: the mean's search in kept arrays"): the same T, bit for bit, as the search
written with fresh arrays at every step (the reference below, the module's arithmetic before the
change), over a grid of ε, sensitivities, bounds, weights, rest tables and α; the same for the
rest's Chernoff table (:func:`_rest_tail`, its θ taken in blocks) and a peeled head
(:func:`_peel`, its work arrays made once per peel), byte for byte; and a head's grid
(:func:`_head`) built once per noise kind in a process, read only."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from snapdp.data.statistics.math import sum_bound
from snapdp.data.statistics.math.sum_bound import NoiseKind, noise_kind
from snapdp.parameters import compute_parameters


def _uncached_head(kind: NoiseKind, offsets: int) -> tuple[Any, ...]:
    head = sum_bound._head
    return getattr(head, "__wrapped__", head)(kind, offsets)


def _reference_lookup(delta: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    m = np.floor(v / delta).astype(np.int64)
    np.maximum(m, -1, out=m)
    np.minimum(m, len(q) - 1, out=m)
    m += 1
    return np.concatenate(([1.0], q))[m]


def _reference_solve(
    delta: float, q: np.ndarray, wh: float, kh: NoiseKind, alphas: tuple[float, ...],
    top: float, deterministic: float,
) -> list[float]:  # fmt: skip
    h, e, ge, le, beyond_up, beyond_down = _uncached_head(kh, sum_bound._OFFSETS)

    def failure(t: float) -> float:
        tm = t - wh * h
        up = _reference_lookup(delta, q, (tm - wh * e).ravel()).reshape(e.shape)
        p_up = (np.diff(up, axis=1, prepend=0.0) * ge).sum(axis=1) + beyond_up
        down = _reference_lookup(delta, q, (tm + wh * e).ravel()).reshape(e.shape)
        p_down = (-np.diff(down, axis=1, append=0.0) * le).sum(axis=1) + beyond_down
        return float((p_up[1:] + p_down[:-1]).max()) * sum_bound._MARGIN

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
        out.append(float(np.nextafter((hi + deterministic) * sum_bound._MARGIN, np.inf)))
    return out


def _kind(epsilon: Fraction, sensitivity: int, bound: int) -> NoiseKind:
    return noise_kind(compute_parameters(epsilon, sensitivity, -bound, bound))


KINDS = [
    _kind(Fraction(1, 3), 1, 1000),
    _kind(Fraction(1, 6), 1, 1000),
    _kind(Fraction(2), 5, 10**6),
    _kind(Fraction(1, 100), 500000, 10**9),
]


def _inputs(head: NoiseKind, rest: tuple[tuple[float, NoiseKind], ...]) -> tuple[Any, ...]:
    """_combination_cached's inputs to _solve for ``head`` and ``rest``."""
    size = head.scale_hi + head.grid + sum(c * (k.scale_hi + k.grid) for c, k in rest)
    top = 16 * size + head.grid
    delta = top / (sum_bound._V_POINTS - 1)
    q = sum_bound._envelope_tail(rest, np.arange(sum_bound._V_POINTS) * delta)
    deterministic = head.rounding + sum(c * k.rounding for c, k in rest)
    return delta, q, top, deterministic


@pytest.mark.parametrize("head", KINDS)
@pytest.mark.parametrize("rest_kind", KINDS[::2])
@pytest.mark.parametrize("weight", [0.0, 0.5, 3.0, 250.0])
def test_the_search_gives_the_reference_searchs_t(
    head: NoiseKind, rest_kind: NoiseKind, weight: float
) -> None:
    rest = ((weight, rest_kind),)
    delta, q, top, deterministic = _inputs(head, rest)
    alphas = (0.05, 0.01, 1e-6, 0.5)
    for wh in (1.0, 0.25):
        got = sum_bound._solve(delta, q, wh, head, alphas, top, deterministic)
        assert got == _reference_solve(delta, q, wh, head, alphas, top, deterministic)
        assert all(math.isfinite(t) for t in got)


def test_a_search_that_fails_at_its_cap_gives_inf_as_before() -> None:
    head = KINDS[0]
    delta, q, top, deterministic = _inputs(head, ((3.0, KINDS[1]),))
    tiny = top / 1000  # far below the errors: the search fails at its cap
    got = sum_bound._solve(delta, q, 1.0, head, (1e-9, 0.05), tiny, deterministic)
    assert got == _reference_solve(delta, q, 1.0, head, (1e-9, 0.05), tiny, deterministic)
    assert got[0] == math.inf


def test_a_heads_grid_is_built_once_per_kind_and_read_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two searches with the same head (a mean's two cells at the same ε, the preview and the
    release) build its grid of tail bounds once."""
    head = _kind(Fraction(7, 19), 3, 4321)  # a kind no other test uses
    delta, q, top, deterministic = _inputs(head, ((2.0, KINDS[0]),))
    sum_bound._head.cache_clear()  # whatever earlier tests of this process built
    calls = []
    real = sum_bound._tail_up
    monkeypatch.setattr(sum_bound, "_tail_up", lambda k, v: calls.append(k) or real(k, v))
    first = sum_bound._solve(delta, q, 1.0, head, (0.05,), top, deterministic)
    built = len(calls)
    assert built == 4  # ge, le and the two masses beyond the span
    assert sum_bound._solve(delta, q, 1.0, head, (0.05,), top, deterministic) == first
    assert len(calls) == built
    _, e, ge, le, up, down = sum_bound._head(head, sum_bound._OFFSETS)
    assert not any(a.flags.writeable for a in (e, ge, le, up, down))


def _reference_rest_tail(
    weights: np.ndarray, kinds: list[NoiseKind], top: float
) -> tuple[float, np.ndarray]:
    """:func:`_rest_tail` with the whole θ × v array at once (the module before the θ blocks)."""
    delta = top / (sum_bound._V_POINTS - 1)
    v = np.arange(sum_bound._V_POINTS) * delta
    if not len(weights):
        return delta, np.zeros(sum_bound._V_POINTS)
    pairs = [(w, k) for w, k in zip(weights, kinds, strict=True) if w != 0]
    limit = min(1 / (abs(w) * k.scale_hi) for w, k in pairs)
    thetas = sum_bound._U[1:-1] * limit
    phi = np.zeros(len(thetas))
    for w, k in pairs:
        phi += sum_bound._log_mgf(k, thetas * abs(w))
    log_q = (phi[:, None] - thetas[:, None] * v[None, :]).min(axis=0)
    q = np.minimum(1.0, np.exp(log_q) * sum_bound._MARGIN)
    return delta, np.minimum.accumulate(q)


def _reference_peel(delta: float, q: np.ndarray, w: float, kind: NoiseKind) -> np.ndarray:
    """:func:`_peel` with fresh arrays for every block of v (the module before its buffers)."""
    h, e, ge, _, beyond_up, _ = _uncached_head(kind, sum_bound._OFFSETS // 8)
    v = np.arange(len(q), dtype=np.float64) * delta - w * h
    out = np.empty(len(q))
    for start in range(0, len(q), 256):
        part_v = v[start : start + 256]
        g = _reference_lookup(delta, q, part_v[None, None, :] - w * e[:, :, None])
        inc = np.diff(g, axis=1, prepend=0.0)
        part = (inc * ge[:, :, None]).sum(axis=1) + beyond_up[:, None]
        out[start : start + 256] = part[1:].max(axis=0)
    return np.minimum.accumulate(np.minimum(out * sum_bound._MARGIN, 1.0))


@pytest.mark.parametrize("seed", range(12))
def test_the_rest_table_and_a_peel_give_the_references_bytes(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 6))
    kinds = [KINDS[int(i)] for i in rng.integers(0, len(KINDS), n)]
    weights = np.abs(rng.normal(size=n)) * float(rng.choice([0.01, 1.0, 100.0]))
    if seed % 4 == 0:
        weights[int(rng.integers(0, n))] = 0.0  # a zero weight is skipped by both
    size = sum(float(w) * (k.scale_hi + k.grid) for w, k in zip(weights, kinds, strict=True))
    top = float(rng.choice([2.0, 16.0, 64.0])) * size  # as the bounds size their tables
    delta, q = sum_bound._rest_tail(weights, kinds, top)
    ref_delta, ref_q = _reference_rest_tail(weights, kinds, top)
    assert delta == ref_delta and q.tobytes() == ref_q.tobytes()
    assert 0 < q[0] <= 1 and q[-1] < q[0]  # a real table, not all ones or zeros
    w = float(rng.choice([0.5, 3.0, 250.0]))
    peeled = sum_bound._peel(delta, q, w, kinds[0])
    assert peeled.tobytes() == _reference_peel(delta, q, w, kinds[0]).tobytes()
