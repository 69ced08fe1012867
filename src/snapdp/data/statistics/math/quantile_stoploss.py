"""A tighter one-sided tail for each leaf edge of the tree's value interval: the stop-loss bound
P(D > c) <= min over t < c of E(D − t)₊/(c − t), with E(D − t)₊ computed by convolution from one
distribution Z per level that dominates every node error in the increasing convex order
(docs/utility.md, "The tree's value ±: a stop-loss tail per edge"). It replaces the Chernoff
step of :func:`~snapdp.data.statistics.math.quantile_tail.edge_tail_bound` where it is smaller.
Public parameters only (weights, the levels' noise kinds, α, p, the count of edges); cached."""

from __future__ import annotations

import functools
import math

import numpy as np
import numpy.typing as npt
from msgspec.structs import astuple

from snapdp.data.statistics.math.quantile_tail import (
    _all_edges_top,
    _chernoff_tails,
    _edge_exponents,
    _frozen,
    _smallest_passing,
    _tree_groups,
    largest_first,
)
from snapdp.data.statistics.math.sum_bound import NoiseKind, _tail_up

__all__ = ["MAX_EDGES", "stop_loss_rho"]

MAX_EDGES = 257
"""Trees with more leaf edges keep the Chernoff tails alone (the cost grows with the edges)."""

_MARGIN = 1 + 1e-9  # covers the doubles' errors: every sum below adds nonnegative terms
_OFFSETS = 1024  # offsets per grid step of a node (each moves the node's error by <= G/1024)
_NODE_STEPS = 16  # the node grid: a power of 2 at most min(L₋, G)/16
_NODE_REACH = 40  # a node's error is cut at ±40·L₊ (the part beyond is added as E(e − M)₊)
_SUM_STEPS = 32  # the edge grid's spacing: σ/32 (σ a bound on D's spread)
_SUM_REACH = 12  # partial sums are cut at ±12·σ (beyond: E(S − A)₊ added, below: raised)
_TERM_REACH = 18  # each |w|·Z is cut at ±|w|·(18·L₊ + G) the same way
_Array = npt.NDArray[np.float64]


@functools.lru_cache(maxsize=16)
def node_envelope(kind: NoiseKind) -> tuple[float, float, _Array, float]:
    """(δ, M, z, excess): a distribution Z on the grid −M + jδ (masses z) with
    E φ(clip(±e, −M, M)) <= E φ(Z) for every nondecreasing convex φ, every offset of the true
    count and both signs, and excess >= E(±e − M)₊ (docs/utility.md).

    Z's stop-loss E(Z − t)₊ is at least, at every grid point, the largest over the offsets
    x = h, 2h, …, G (h = G/1024) of ∫ from t − h to M of P(W_x > s) ds, with P(W_x >= kG − x)
    = Ū(kG − x − G/2) (:func:`~snapdp.data.statistics.math.sum_bound._tail_up`, a bound on
    P(e >= kG − x) and, read at the offset G − x, on P(−e >= ·)) and 1 below −M; a node at an
    offset in (x − h, x] is at most h above one at x, which the shift by h covers. The largest
    of stop-losses is convex, so Z's, linear between grid points, stays above it."""
    big, grid = kind.scale_hi, kind.grid
    step = 2.0 ** math.floor(math.log2(min(kind.scale_lo, grid) / _NODE_STEPS))
    reach = math.ceil(_NODE_REACH * big / step) * step
    h = grid / _OFFSETS
    n = math.ceil((2 * reach + h) / step)  # t_n − h >= M: the stop-loss is 0 there
    t = -reach + step * np.arange(n + 1)
    a = np.asarray(t - h, dtype=np.float64)
    best = np.zeros(n + 1)
    ks = np.arange(math.floor(-reach / grid) - 2, math.ceil(reach / grid) + 3)
    for start in range(0, _OFFSETS, 128):
        x = grid * np.arange(start + 1, start + 129)[:, None] / _OFFSETS  # h, 2h, …, G
        best = np.maximum(best, _clipped_stop_loss(kind, ks, x, a, reach).max(axis=0))
    pi = best * _MARGIN
    tails = np.append(np.diff(-pi) / step, 0.0)  # P(Z > t_j): nonincreasing, at most 1
    tails = np.minimum(np.maximum.accumulate(np.maximum(tails, 0.0)[::-1])[::-1], 1.0)
    z = np.empty(n + 1)
    z[1:] = tails[:-1] - tails[1:]
    z[0] = max(0.0, 1.0 - float(z[1:].sum())) + 1e-12  # the rest at the bottom (mass >= 1)
    excess = 0.5 * 1.1 * big * math.exp(-(reach - grid / 2) / big)  # ∫_M^∞ Ū(s − G/2) ds
    return step, reach, _frozen(z), excess


def _clipped_stop_loss(
    kind: NoiseKind, ks: npt.NDArray[np.int64], x: _Array, a: _Array, reach: float
) -> _Array:
    """∫ from a to M of P̃(s) ds for each offset (rows) and each a (columns): P̃ = 1 below −M,
    P(W_x > s) = T_k on [ℓ_{k−1}, ℓ_k) (ℓ_k = kG − x, T_k = Ū(ℓ_k − G/2)) up to M, 0 beyond."""
    ell = ks[None, :] * kind.grid - x  # offsets × lattice, increasing along a row
    tk = _tail_up(kind, ell - kind.grid / 2)
    seg = np.maximum(np.minimum(ell, reach) - np.maximum(ell - kind.grid, -reach), 0.0)
    above = np.cumsum((tk * seg)[:, ::-1], axis=1)[:, ::-1]  # Σ over segments k' >= k
    above = np.concatenate((above[:, 1:], np.zeros((len(x), 1))), axis=1)  # k' > k
    inside = np.clip(a, -reach, reach)
    k = np.empty((len(x), len(a)), dtype=np.int64)
    for i in range(len(x)):
        k[i] = np.searchsorted(ell[i], inside, side="right")  # ℓ_{k−1} <= a < ℓ_k
    rows = np.arange(len(x))[:, None]
    part = tk[rows, k] * np.maximum(np.minimum(ell[rows, k], reach) - inside[None, :], 0.0)
    out = part + above[rows, k] + np.maximum(-reach - a, 0.0)[None, :]
    return np.where(a[None, :] >= reach, 0.0, out)


def _split(positions: _Array, masses: _Array, step: float) -> tuple[int, _Array]:
    """A spread of the atoms (positions, masses) onto the grid of spacing ``step``: each atom
    to its two neighbours with its mean kept (raised by 1e-9 of a step, for the doubles), so
    the result dominates in the convex order. Returns (index of the first point, masses)."""
    u = positions / step
    i = np.floor(u)
    f = np.minimum(u - i + 1e-9, 1.0)
    lo = int(i.min())
    out = np.zeros(int(i.max()) - lo + 2)
    idx = (i - lo).astype(np.int64)
    np.add.at(out, idx, masses * (1 - f))
    np.add.at(out, idx + 1, masses * f)
    return lo, out


def _fold(lo: int, p: _Array, reach: int, step: float) -> tuple[int, _Array, float]:
    """Cut a distribution on the grid at ±reach points: mass above goes to +reach (its
    E(S − A)₊ returned, to be added to every stop-loss), mass below is raised to −reach."""
    excess = 0.0
    top = lo + len(p) - 1
    if top > reach:
        cut = reach - lo
        over = p[cut + 1 :]
        excess = float(over @ (np.arange(1, len(over) + 1) * step))
        p = p[: cut + 1].copy()
        p[-1] += float(over.sum())
    if lo < -reach:
        cut = -reach - lo
        p = np.concatenate(([float(p[: cut + 1].sum())], p[cut + 1 :]))
        lo = -reach
    return lo, p, excess


@functools.lru_cache(maxsize=1024)
def edge_stop_loss(
    groups: tuple[tuple[float, int, NoiseKind], ...],
) -> tuple[float, _Array, _Array]:
    """(the grid's spacing, its points s_j, bounds on E(D − s_j)₊) for D = Σ wᵢeᵢ, the groups
    (|w|, how many, kind) of one edge: each |w|·Z spread onto the edge's grid, convolved in
    turn, cut at ±A (:func:`_fold`); then E(D − t)₊ <= the grid's + the excesses."""
    var = sum(c * w * w * (2 * k.scale_hi**2 + k.grid**2 / 4) for w, c, k in groups)
    sigma = math.sqrt(var)
    step = sigma / _SUM_STEPS
    reach = math.ceil(_SUM_REACH * sigma / step)
    lo, dist, excess = 0, np.ones(1), 0.0
    for w, count, kind in groups:
        z_step, m, z, node_excess = node_envelope(kind)
        keep = z > 0
        atoms = np.asarray(w * (-m + z_step * np.flatnonzero(keep)), dtype=np.float64)
        t_lo, term = _split(atoms, z[keep], step)
        own = min(reach, math.ceil(w * (_TERM_REACH * kind.scale_hi + kind.grid) / step))
        t_lo, term, cut = _fold(t_lo, term, own, step)
        excess += count * (cut + w * node_excess)
        for _ in range(count):
            dist = np.convolve(dist, term)
            lo, dist, cut = _fold(lo + t_lo, dist, reach, step)
            excess += cut
    tail = np.cumsum(dist[::-1])[::-1]  # P(S >= s_j)
    above = np.append(tail[1:], 0.0)  # P(S > s_j)
    pi = np.cumsum(above[::-1])[::-1] * step  # E(S − s_j)₊
    points = np.asarray((lo + np.arange(len(dist))) * step, dtype=np.float64)
    return step, _frozen(points), _frozen((pi + excess) * _MARGIN)


def _tails_at(tables: tuple[_Array, _Array, _Array], c: float) -> _Array:
    """Per edge (rows), E(D − t)₊/(c − t) at the grid points t < c next to where the tangent of
    the stop-loss at t meets 0 at c (``tables``: points, bounds, those meeting points; rows
    padded with +inf), at most 1. Any t < c gives a bound; these three are where the smallest
    lies (the ratio falls while the meeting point is below c, then rises)."""
    points, pi, cross = tables
    rows = np.arange(len(points))[:, None]
    idx = (cross < c).sum(axis=1)[:, None] + np.array([-1, 0, 1])[None, :]
    idx = np.clip(idx, 0, points.shape[1] - 1)
    t, bound = points[rows, idx], pi[rows, idx]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(t < c, bound / (c - t), np.inf)
    return np.asarray(np.minimum(ratio.min(axis=1) * _MARGIN, 1.0), dtype=np.float64)


@functools.lru_cache(maxsize=8)
def _edge_tables(
    b: int, depth: int, kinds: tuple[NoiseKind, ...], probability: float
) -> tuple[_Array, _Array, _Array]:
    """The stop-loss tables of the edges 0..n of C̃ − p·Ñ (weights as
    :func:`~snapdp.data.statistics.math.quantile_tail._tree_groups` rounds them up: Z's mean is
    >= 0, so E φ(wZ) grows with w for nondecreasing convex φ). Edges with the same groups share
    one table. Returns (points, bounds, where each point's tangent meets 0), one row per edge,
    padded with +inf."""
    edge, level, value, count, l1 = _tree_groups(b, depth, probability)
    tables = []
    for e in range(len(l1)):
        sel = np.flatnonzero(edge == e)
        # ordered by (|w|, count, the kind's fields): two levels may share |w| and count with
        # kinds that differ (a unit's rows split ε per level differently), and NoiseKind has no <
        groups = tuple(
            sorted(
                ((float(value[i]), int(count[i]), kinds[int(level[i])]) for i in sel),
                key=lambda g: (g[0], g[1], astuple(g[2])),
            )
        )
        tables.append(edge_stop_loss(groups))
    width = max(len(t[1]) for t in tables)
    points = np.full((len(tables), width), np.inf)
    pi = np.full((len(tables), width), np.inf)
    cross = np.full((len(tables), width), np.inf)
    for i, (step, pts, bound) in enumerate(tables):
        points[i, : len(pts)] = pts
        pi[i, : len(pts)] = bound
        slope = -np.diff(bound, append=0.0) / step
        with np.errstate(divide="ignore", invalid="ignore"):
            cross[i, : len(pts)] = np.where(slope > 0, pts + bound / slope, np.inf)
    return _frozen(points), _frozen(pi), _frozen(cross)


@functools.lru_cache(maxsize=1024)
def stop_loss_rho(
    b: int, depth: int, kinds: tuple[NoiseKind, ...], alpha: float, probability: float, k: int
) -> float:
    """ρ(k) as :func:`~snapdp.data.statistics.math.quantile_tail.edge_tail_bound` defines it,
    with each edge's one-sided tail the smaller of its Chernoff bound and its stop-loss bound
    (both hold; each is nonincreasing in c, so the sums of the k largest are too). Public
    parameters only; cached. inf for trees of more than :data:`MAX_EDGES` edges."""
    if b**depth + 1 > MAX_EDGES:
        return math.inf
    phi, theta, _top, rounding = _edge_exponents(b, depth, kinds, probability)
    tables = _edge_tables(b, depth, kinds, probability)
    k = max(1, min(k, len(tables[0])))
    top = _all_edges_top(b, depth, kinds, alpha, probability)  # passes for every k

    def failure(c: float) -> float:
        tails = np.minimum(_chernoff_tails(phi, theta, c), _tails_at(tables, c))
        return float(largest_first(tails)[k - 1]) * _MARGIN

    c = _smallest_passing(lambda c: failure(c) > alpha, top, 30)
    return math.nextafter((c + rounding) * _MARGIN, math.inf)
