"""The accuracy of tree quantiles, stated before anything is spent: the rank ± from the nodes'
noise (:func:`rank_accuracy`, :func:`chernoff_cdf`, :func:`tree_tail_bound`) and its reading in
values (:func:`value_accuracy`, :func:`released_rank`). Public parameters only; the tree itself is
:mod:`snapdp.data.statistics.math.quantile_tree` (docs/data.md, "Quantiles")."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
from msgspec import Struct

from snapdp import _exact
from snapdp._exact import mpq
from snapdp._validation import check_count, check_epsilon, check_finite
from snapdp.accuracy import accuracy_bound
from snapdp.data.model.schema import DEFAULT_MAX_ROWS
from snapdp.data.statistics.math.quantile_tree import (
    _WEIGHT_INFLATION,
    TreeSpec,
    _apply_inverse,
    _bounds,
    _check_row_bound,
    _weight_stats,
    level_calibrations,
)
from snapdp.data.statistics.math.sum_bound import NoiseKind, log_mgf_bound, noise_kind
from snapdp.errors import ParameterError
from snapdp.rescaling import mechanism_parameters

__all__ = [
    "RankAccuracy",
    "chernoff_cdf",
    "edge_tail_bound",
    "largest_first",
    "rank_accuracy",
    "released_rank",
    "target_weight_stats",
    "tree_tail_bound",
    "value_accuracy",
]


class RankAccuracy(Struct, frozen=True):
    """The accuracy of tree quantiles, stated before spending (see :func:`rank_accuracy`).

    ``cdf``: with probability >= ``confidence``, every released CDF value at a leaf edge is within
    ± cdf of the true count of rows below that edge. ``rank``: (1 + p)·cdf <= 2·cdf: each released
    p-quantile lies within one leaf of a value whose true rank is within ± rank of p·N (N the
    true row count). ``node``: each node's accuracy at the union-bound level; ``weight``: W.
    """

    cdf: float
    rank: float
    node: float
    weight: float
    confidence: float
    calibrated: bool


def rank_accuracy(
    spec: TreeSpec,
    epsilon: object,
    row_bound: int,
    confidence: float,
    n_probabilities: int,
    lower: object | None = None,
    upper: object | None = None,
    max_rows: int = DEFAULT_MAX_ROWS,
) -> RankAccuracy:
    """The rank accuracy of the released quantiles, from public parameters only.

    The least-squares CDF at leaf edge t is Σᵢ w_{t,i}·ỹᵢ over the T released nodes, with the
    true CDF Σᵢ w_{t,i}·yᵢ (the estimate is exact on exact trees). With α = 1 − confidence, the
    smallest of three bounds, each holding for every edge at once with probability >= 1 − α:

    * *union*: the error is at most W·max |ỹᵢ − yᵢ| (W = maxₜ Σᵢ |w_{t,i}|), and a union bound
      over the T nodes gives max |ỹᵢ − yᵢ| <= a(α/T), each node's accuracy at its level's
      calibrated (ε, Δ = k, bounds) (snapdp.accuracy, DESIGN §4). Valid for any bounds.
    * *averaged* (only with the default :func:`node_bounds`): :func:`tree_tail_bound`, the
      Chernoff bound on each node's whole error (noise and snapping together) summed over the
      edges; the tightest of the three in practice.
    * *Chernoff* (only with the default :func:`node_bounds`, where the clamp never binds): the
      error is k·Σ w·Y + k·Σ w·R with |R| <= Λ/2, so at most k·W·Λ/2 + |k·Σ w·Y|. The noises Y are
      independent, symmetric, |Y| <= λ″·|ln U*| with P(|ln U*| > s) <= (1 + 2**-51)·e^-s, so
      E e^{θwY} <= (1 + 2**-51)/(1 − θ²w²λ″²); with S₂ = maxₜ Σw² and w∞ = max |w|,
      P(|Σ w·Y| > s) <= 2(1 + 2**-51)^T·exp(−θs + θ²λ″²S₂/(1 − θ²λ″²w∞²)) for every admissible θ,
      union over the n_leaves edges.

    The bound holds for every edge at once, hence for any number of probabilities
    (``n_probabilities`` is checked but does not enlarge it); the isotonic step keeps it.
    """
    check_count("n_probabilities", n_probabilities)
    conf = float(check_finite("confidence", confidence))
    if not 0 < conf < 1:
        raise ParameterError(
            f"`confidence` must lie strictly between 0 and 1, not {confidence!r}",
            parameter="confidence",
        )
    eps = check_epsilon("epsilon", epsilon)
    k = _check_row_bound(row_bound)
    lo, hi = _bounds(spec, eps, k, lower, upper, max_rows)
    cals = level_calibrations(spec, eps, k, lo, hi)
    alpha = 1 - conf
    total_nodes = sum(spec.nodes(level) for level in range(1, spec.depth + 1))
    node = 0.0
    worst = None
    for cal in cals:
        params = mechanism_parameters(cal.epsilon, k, lo, hi)  # as SnappingMechanism runs it
        node = max(node, accuracy_bound(params, alpha / total_nodes))
        if worst is None or params.scale * params.sensitivity > worst.scale * worst.sensitivity:
            worst = params
    assert worst is not None  # depth >= 1
    cdf = _round_up(spec.weight * node)
    if lower is None:  # node_bounds: the clamp never binds
        # λ′ and Λ in units of k (the mechanism's own unit is Δ_r = r·k when rescaled)
        unit = worst.sensitivity / k
        scale_k, grid_k = mpq(worst.scale) * unit, worst.grid * unit
        cdf = min(cdf, chernoff_cdf(spec, scale_k, grid_k, k, alpha, total_nodes))
        kinds = tuple(noise_kind(mechanism_parameters(c.epsilon, k, lo, hi)) for c in cals)
        cdf = min(cdf, tree_tail_bound(spec.branching, spec.depth, kinds, alpha))
    return RankAccuracy(
        cdf, _round_up(2 * cdf), node, spec.weight, conf, all(c.certified for c in cals)
    )


def chernoff_cdf(
    spec: TreeSpec,
    scale: object,
    grid: object,
    k: int,
    alpha: float,
    total_nodes: int,
    probability: float | None = None,
    sides: int = 2,
) -> float:
    """k·W·Λ/2 + s, s the Chernoff bound of :func:`rank_accuracy`, rounded up generously: the
    CDF ± at every leaf edge at once when no node's output is clamped (``scale``: λ′, ``grid``:
    Λ, the largest over the levels, in units of k rows). With a ``probability`` p, the same
    bound for C̃(t) − p·Ñ against C(t) − p·N at every edge t = 0..n at once, from the weights of
    that combination (:func:`target_weight_stats`) on the least-squares CDF. ``sides`` = 1: each
    edge's error bounded on one side only, either side (the value interval's bound,
    :func:`tree_tail_bound`)."""
    if probability is None:
        w1, s2, wmax = _weight_stats(spec.branching, spec.depth)
        edges = spec.leaves
    else:
        w1, s2, wmax = target_weight_stats(spec.branching, spec.depth, float(probability))
        edges = spec.leaves + 1
    lam = float(_exact.round_up(mpq(scale) * (1 + mpq(1, 1 << 50)), 53)) * k  # λ″·k, up
    rounding = w1 * float(mpq(grid)) * k / 2
    # ln of the allowed tail per edge and side, with the (1 + 2**-51)^T factor
    log_target = math.log(alpha / (sides * edges)) - total_nodes * math.log1p(2.0**-51)

    def exponent(s: float) -> float:
        # min over θ in (0, 1/(λ·w∞)) of −θs + θ²λ²S₂/(1 − θ²λ²w∞²): convex, ternary search
        # (200 steps; f inlined, the same operations in the same order). A step that leaves
        # (a, b) as they were is a fixed point: every later step would repeat it, so the loop
        # stops there with the same a, b as the full 200 (test_quantile_tail_fast.py)
        # (θ·θ·λ·λ, the same product left to right, is computed once for both of its uses)
        a, b = 0.0, (1 - 1e-12) / (lam * wmax)
        for _ in range(200):
            third = (b - a) / 3
            m1, m2 = a + third, b - third
            x1, x2 = m1 * m1 * lam * lam, m2 * m2 * lam * lam
            f1 = -m1 * s + x1 * s2 / (1 - x1 * wmax * wmax)
            f2 = -m2 * s + x2 * s2 / (1 - x2 * wmax * wmax)
            if f1 <= f2:
                if b == m2:
                    break
                b = m2
            else:
                if a == m1:
                    break
                a = m1
        t = (a + b) / 2  # an admissible θ: a valid (upper) bound on the minimum
        return -t * s + t * t * lam * lam * s2 / (1 - t * t * lam * lam * wmax * wmax)

    hi = _smallest_passing(lambda s: exponent(s) > log_target, lam * wmax, 100)
    return _round_up((hi + rounding) * (1 + 1e-9) + w1 * 2.0**-10)


def released_rank(probability: float, cdf: float, target: float) -> float:
    """The rank ± of a released p-quantile (``quantile_tree.exact_quantiles`` on
    ``consistent_leaves`` at p·Ñ, Ñ the least-squares total, moved into its value interval):
    min((1 + p)·c, rₚ). ``cdf``: c, a bound on |C̃(t) − C(t)| at every edge; ``target``: rₚ,
    one on |(C̃(t) − p·Ñ) − (C(t) − p·N)| at every edge t = 0..n. Each holds with probability
    >= 1 − α, so the smaller (both are data-free) does too. See docs/data.md, "The rank ± of a
    released quantile". The rₚ branch holds only for that reading: for one at p·N̂ (e.g.
    ``quantile_tree.quantiles_from_leaves``) only (1 + p)·c applies.

    With rₚ (f = C − p·N, I the isotonic fit of C̃ over the edges 1..n, Ĉ = max(I, 0),
    N̂ = Ĉ(n)): the isotonic fit commutes with the shift by p·Ñ and is a sup-norm contraction
    toward the monotone f, so |I − p·Ñ − f| <= rₚ. When N̂ > 0 and p·Ñ > 0 the value lies in
    the first leaf j with Ĉ(j+1) >= p·Ñ: there Ĉ is not clipped, so f(j+1) >= −rₚ, and
    f(j) < rₚ (I(j) <= Ĉ(j) < p·Ñ, or j = 0 and f(0) = −p·N <= 0). When p = 0 the value is L
    (leaf 0): f(0) = 0 and f >= 0 everywhere. Otherwise (the value L, or L + p(U − L) when
    N̂ <= 0) Ñ <= 0 < p, and the bound at the edges 0 and n gives p·N <= rₚ and
    (1 − p)·N <= rₚ: every edge is within rₚ of p·N. Moving the value into its
    interval [e_lo, e_hi] keeps this (f(e_lo) < rₚ − r̂, f(e_hi) > r̂ − rₚ on the same event).
    """
    p = float(probability)
    return min(_round_up((1 + p) * cdf), _round_up(target * (1 + 1e-9)))


def value_accuracy(spec: TreeSpec, rank_acc: RankAccuracy | float, n_ref: int) -> float:
    """A planning figure in value units: leaf width + rank·(U − L)/n_ref, at most U − L.

    What holds without data is the rank statement (each quantile is within one leaf of a value
    whose true rank is within ± rank of its target). Converting ranks to values needs the data's
    density; this assumes a reference group of ``n_ref`` rows spread at least as evenly as a
    uniform distribution over [L, U] (density >= n_ref/(U − L)), under which a rank error r moves
    the value by at most r·(U − L)/n_ref. It is an assumption stated to the planner, not a
    guarantee; skewed data (e.g. incomes) are far less even at the top.
    """
    check_count("n_ref", n_ref)
    r = rank_acc.rank if isinstance(rank_acc, RankAccuracy) else float(rank_acc)
    span = float(spec.upper - spec.lower)
    return min(span, float(spec.leaf_width) + r * span / n_ref)


def _smallest_passing(fails: Callable[[float], bool], start: float, steps: int) -> float:
    """A point of (0, ∞) where ``fails`` (monotone: true below a threshold, false above) is
    false, at most one bisection step above the threshold: ``start`` doubled until it passes,
    then ``steps`` halvings of [0, that]. ``fails`` must be a pure function: once the midpoint
    equals ``hi`` (where it is known false) or a ``lo`` > 0 (where it is known true), no later
    halving can change (lo, hi), so the loop stops there with the same ``hi``."""
    hi = start
    while fails(hi):
        hi *= 2
    lo = 0.0
    for _ in range(steps):
        mid = (lo + hi) / 2
        if mid == hi or (mid == lo and lo > 0):
            break
        if fails(mid):
            lo = mid
        else:
            hi = mid
    return hi


def _round_up(x: float) -> float:
    return math.nextafter(x, math.inf)


def _edge_weights(b: int, depth: int, ts: npt.NDArray[np.intp]) -> npt.NDArray[np.float64]:
    """The weights of the least-squares CDF at edges ``ts`` on the released nodes (levels
    1..depth in order), one row per edge."""
    n = b**depth
    q = (np.arange(n)[None, :] < ts[:, None]).astype(np.float64)
    z = _apply_inverse(q, b, depth)
    prefix = np.concatenate((np.zeros((len(ts), 1)), np.cumsum(z, axis=1)), axis=1)
    return np.concatenate(
        [
            prefix[:, b ** (depth - lv) :: b ** (depth - lv)] - prefix[:, 0 : n : b ** (depth - lv)]
            for lv in range(1, depth + 1)
        ],
        axis=1,
    )


@functools.lru_cache(maxsize=512)
def target_weight_stats(b: int, depth: int, p: float) -> tuple[float, float, float]:
    """(W, S₂, w∞) of v_t = w_t − p·w_n over the edges t = 0..n (w_t the least-squares CDF's
    weights at edge t, w_0 = 0): the error of C̃(t) − p·Ñ. For p = 1/2 and b = 10, depth 2,
    W = 13.2 and S₂ = 4.5 against (1 + p)·21.8 and (1 + p)²·10.9 for the CDF bound."""
    n = b**depth
    total = _edge_weights(b, depth, np.array([n]))[0]
    w1 = s2 = wmax = 0.0
    chunk = max(1, min(n + 1, (1 << 22) // n))
    for start in range(0, n + 1, chunk):
        ts = np.arange(start, min(n + 1, start + chunk))
        v = _edge_weights(b, depth, ts) - p * total[None, :]
        w1 = max(w1, float(np.abs(v).sum(axis=1).max()))
        s2 = max(s2, float((v * v).sum(axis=1).max()))
        wmax = max(wmax, float(np.abs(v).max()))
    return w1 * _WEIGHT_INFLATION, s2 * _WEIGHT_INFLATION, wmax * _WEIGHT_INFLATION


_THETAS = np.concatenate([np.linspace(0.02, 0.9, 45), 1 - 0.1 * np.geomspace(1, 1e-3, 20)[1:]])
"""The points u in (0, 1) where :func:`tree_tail_bound` tries θ = u/(an edge's largest w·L₊)."""


@functools.lru_cache(maxsize=64)
def tree_tail_bound(
    b: int,
    depth: int,
    kinds: tuple[NoiseKind, ...],
    alpha: float,
    probability: float | None = None,
    one_sided: bool = False,
) -> float:
    """A bound c with P(|C̃(t) − C(t)| > c for some leaf edge t) <= α (``probability`` None), or
    the same for C̃(t) − p·Ñ against C(t) − p·N at the edges 0..n (with a p), when no node's output
    is clamped (:func:`node_bounds`). ``kinds``: each level's never-clamped error
    (:func:`snapdp.data.statistics.math.sum_bound.noise_kind`, in rows), levels 1..depth. See
    docs/data.md.

    The error at edge t is Σᵢ vₜᵢ·eᵢ over the independent node errors eᵢ (noise and snapping
    together). For each node, E e^(θ·e) <= B(θ) whatever the true count
    (:func:`snapdp.data.statistics.math.sum_bound.log_mgf_bound`: the rounding averages out instead
    of adding Λ/2 per unit of weight), so P(|Σ vₜᵢeᵢ| > c) <= 2·e^(−θc)·Πᵢ B(θ|vₜᵢ|) for each θ
    (Chernoff, both tails: B bounds both signs). A union bound over the edges: c is the smallest
    value (bisection) at which the sum over the edges of the best of these over θ is <= α, plus the
    largest Σᵢ|vₜᵢ|·u₀ (the outputs' final rounding). Public parameters only; cached.

    ``one_sided``: the sum over the edges of each edge's larger tail, e^(−θc)·Πᵢ B(θ|vₜᵢ|)
    without the factor 2: the bound the value interval needs, since a miss there takes the
    error below −c at edges where C − p·N > 0 or above c at edges where it is < 0, never both
    at one edge (docs/utility.md, "The tree's value ±: one tail per edge").
    """
    phi, theta, top, rounding = _edge_exponents(b, depth, kinds, probability)
    sides = 1 if one_sided else 2

    def failure(c: float) -> float:
        return float(sides * _chernoff_tails(phi, theta, c).sum()) * (1 + 1e-9)

    hi = _smallest_passing(lambda c: failure(c) > alpha, top, 60)
    return _round_up((hi + rounding) * (1 + 1e-9))


@functools.lru_cache(maxsize=64)  # one entry per probability: a query of up to 64 keeps them all
def _edge_exponents(
    b: int, depth: int, kinds: tuple[NoiseKind, ...], probability: float | None
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], float, float]:
    """The Chernoff exponents of :func:`tree_tail_bound` per edge: (φ, θ, the largest w·L₊ over
    the edges, the largest rounding term), with one edge's tail at c bounded by
    e^(min over the θ of its row of φ − θ·c). Public parameters only; cached."""
    edge, level, value, count, l1 = _tree_groups(b, depth, probability)
    edges = len(l1)
    scale = np.array([k.scale_hi for k in kinds])
    top = np.zeros(edges)
    np.maximum.at(top, edge, value * scale[level])
    theta = _THETAS[None, :] / top[:, None]  # per edge: θ·max|v|·L₊ < 1
    phi = np.zeros((edges, len(_THETAS)))
    for i, kind in enumerate(kinds):
        sel = level == i
        if sel.any():
            terms = log_mgf_bound(kind, theta[edge[sel]] * value[sel][:, None])
            np.add.at(phi, edge[sel], terms * count[sel][:, None])
    rounding = np.zeros(edges)
    u0 = np.array([k.rounding for k in kinds])
    np.add.at(rounding, edge, value * count * u0[level])
    return _frozen(phi), _frozen(theta), float(top.max()), float(rounding.max())


@functools.lru_cache(maxsize=1024)
def edge_tail_bound(
    b: int, depth: int, kinds: tuple[NoiseKind, ...], alpha: float, probability: float, k: int
) -> float:
    """ρ(k): a bound c such that the k largest of the edges' one-sided tails at c (each edge's
    Chernoff bound of :func:`tree_tail_bound` with ``one_sided``, over the edges 0..n of
    C̃ − p·Ñ) sum to at most α: for ANY set of at most k edges, the sum of their tails beyond c
    is <= α. Nondecreasing in k, exactly: the sums are running sums of the tails sorted
    largest first (each step adds a term >= 0), and every k bisects the same interval, whose
    top passes for all the edges (docs/utility.md, "The tree's value ±: two stages"). Public
    parameters only; cached."""
    phi, theta, _top, rounding = _edge_exponents(b, depth, kinds, probability)
    k = max(1, min(k, phi.shape[0]))
    hi = _all_edges_top(b, depth, kinds, alpha, probability)

    def failure(c: float) -> float:
        return float(_running_tails(phi, theta, c)[k - 1]) * (1 + 1e-9)

    c = _smallest_passing(lambda c: failure(c) > alpha, hi, 60)
    return _round_up((c + rounding) * (1 + 1e-9))


@functools.lru_cache(maxsize=64)
def _all_edges_top(
    b: int, depth: int, kinds: tuple[NoiseKind, ...], alpha: float, probability: float
) -> float:
    """The top of the interval :func:`edge_tail_bound` bisects for every k: the largest w·L₊,
    doubled until the tails of all the edges sum to at most α there."""
    phi, theta, top, _rounding = _edge_exponents(b, depth, kinds, probability)
    while float(_running_tails(phi, theta, top)[-1]) * (1 + 1e-9) > alpha:
        top *= 2
    return top


def _running_tails(
    phi: npt.NDArray[np.float64], theta: npt.NDArray[np.float64], c: float
) -> npt.NDArray[np.float64]:
    """The edges' one-sided Chernoff tails at c, summed largest first (:func:`largest_first`)."""
    return largest_first(_chernoff_tails(phi, theta, c))


def _chernoff_tails(
    phi: npt.NDArray[np.float64], theta: npt.NDArray[np.float64], c: float
) -> npt.NDArray[np.float64]:
    """Each edge's one-sided Chernoff tail at c: e^(min over its row's θ of φ − θ·c)."""
    return np.asarray(np.exp((phi - theta * c).min(axis=1)), dtype=np.float64)


def largest_first(tails: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """The edges' tail bounds sorted largest first, summed in order: entry k − 1 is the sum of
    the k largest (nondecreasing in k, and each entry nonincreasing in c when every tail is:
    hence every order statistic, and a rounded sum grows with its terms)."""
    return np.cumsum(-np.sort(-tails))


def _frozen(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``a`` made read-only: cached tables are shared by every later release in the process, so
    a caller that wrote into one would change their stated ±."""
    a.flags.writeable = False
    return a


@functools.lru_cache(maxsize=64)
def _tree_groups(
    b: int, depth: int, probability: float | None
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.float64],
           npt.NDArray[np.float64], npt.NDArray[np.float64]]:  # fmt: skip
    """The weights of :func:`tree_tail_bound` grouped: (edge, level, |v|, count, Σ|v| per edge)
    with the |v| of each (edge, level) rounded up to 12 significant bits and merged when equal
    (B grows with |v|, so rounding up keeps the bound; few distinct values remain per edge).
    Edges 1..n for the CDF (edge 0 has no error), 0..n with a probability. The doubles' error of
    the weights is covered by a relative 1e-9 and an absolute 1e-12 added before rounding."""
    n = b**depth
    first = 1 if probability is None else 0
    total = _edge_weights(b, depth, np.array([n]))[0]
    chunk = max(1, min(n + 1, (1 << 21) // n))
    out: list[list[npt.NDArray[Any]]] = [[], [], [], [], []]
    starts = np.cumsum([0] + [b**lv for lv in range(1, depth + 1)])
    for start in range(first, n + 1, chunk):
        ts = np.arange(start, min(n + 1, start + chunk))
        v = _edge_weights(b, depth, ts)
        if probability is not None:
            v = v - probability * total[None, :]
        a = np.abs(v) * _WEIGHT_INFLATION + 1e-12
        mant, expo = np.frexp(a)
        a = np.ldexp(np.ceil(mant * 4096) / 4096, expo)
        out[4].append(a.sum(axis=1))
        for lv in range(depth):
            block = np.sort(a[:, starts[lv] : starts[lv + 1]], axis=1)
            new = np.ones(block.shape, dtype=bool)
            new[:, 1:] = block[:, 1:] != block[:, :-1]
            rows, cols = np.nonzero(new)
            ends = np.append(cols[1:], block.shape[1])
            ends[np.flatnonzero(np.diff(rows))] = block.shape[1]  # a run ends with its row
            out[0].append(rows + (start - first))
            out[1].append(np.full(len(rows), lv))
            out[2].append(block[rows, cols])
            out[3].append((ends - cols).astype(np.float64))
    edge, level, value, count, l1 = (_frozen(np.concatenate(x)) for x in out)
    return edge, level, value, count, l1
