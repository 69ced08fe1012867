"""The tree's value interval in two stages: which leaf edges the released CDF shows could matter,
and the bound over those edges only (docs/utility.md, "The tree's value ±: two stages").
Post-processing of released values and public parameters; nothing here reads the data."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from snapdp.data.statistics.math.quantile_stoploss import stop_loss_rho
from snapdp.data.statistics.math.quantile_tail import edge_tail_bound
from snapdp.data.statistics.math.quantile_tree import band_slack
from snapdp.data.statistics.math.sum_bound import NoiseKind

__all__ = [
    "FIRST_SHARE",
    "first_radius",
    "near_edges",
    "rounded_count",
    "split_alpha",
    "value_radius",
]

FIRST_SHARE = 0.1
"""The share α₁/α of the first stage (|D| <= r₁ at every edge); the rest, α₂, pays for the
one-sided tails at the edges that could matter. A public constant."""


def split_alpha(alpha: float) -> tuple[float, float]:
    """(α₁, α₂) with α₁ + α₂ <= α (each rounded down: a smaller α only widens its bound)."""
    first = alpha * FIRST_SHARE
    second = (alpha - first) * (1 - 2**-50)
    return first, second


def near_edges(
    cdf: npt.NDArray[np.float64], probability: float, first: float, radius: float = 0.0
) -> npt.NDArray[np.intp]:
    """S(r): the edges (indices 0..n) where |g(e)| < 2·r₁ − r may hold, g = C̃ − p·Ñ the
    released least-squares CDF (``cdf``, Ñ its last entry), r₁ = ``first`` and r = ``radius``
    (0: the band 2·r₁). The doubles' error of g and of 2·r₁ − r is covered as in
    :func:`~snapdp.data.statistics.math.quantile_tree.value_interval`: every edge whose exact g
    is within 2·r₁ − r of 0 is in S (a superset, which only widens the bound)."""
    cum = np.asarray(cdf, dtype=np.float64)
    slack = band_slack(cum, 2 * first - radius)
    return np.flatnonzero(np.abs(cum - probability * float(cum[-1])) < slack)


def first_radius(
    b: int, depth: int, kinds: tuple[NoiseKind, ...], alpha: float, probability: float,
    first: float,
) -> float:  # fmt: skip
    """r₁ for the release: the smaller of ``first`` (the statement's two-sided bound at α₁) and
    the stop-loss one (:func:`~snapdp.data.statistics.math.quantile_stoploss.stop_loss_rho` over
    every edge at α₁/2: each edge's two tails, each <= its one-sided bound, sum to <= α₁).
    Public parameters only; either makes P(|D(e)| >= r₁ at some edge) <= α₁."""
    edges = b**depth + 1
    alpha1 = split_alpha(alpha)[0]
    return min(first, stop_loss_rho(b, depth, kinds, alpha1 / 2, probability, edges))


def value_radius(
    cdf: npt.NDArray[np.float64],
    b: int,
    depth: int,
    kinds: tuple[NoiseKind, ...],
    alpha: float,
    probability: float,
    first: float,
    second: float,
) -> float:
    """r̂: the bound the value interval is read with (docs/utility.md, "The tree's value ±: two
    stages"). With r₁ = :func:`first_radius` and ρ(κ) the smaller of
    :func:`~snapdp.data.statistics.math.quantile_tail.edge_tail_bound` (Chernoff tails) and
    :func:`~snapdp.data.statistics.math.quantile_stoploss.stop_loss_rho` (each edge's tail the
    smaller of its Chernoff and its stop-loss bound), both at α₂ and nondecreasing in κ, capped
    by ``second`` (r₂, the one-sided bound over all the edges at α₂, what the planner states):
    r̂ = ρ(κ) for the smallest count κ (of :func:`rounded_count`'s values) at which
    max(|S(ρ(κ))|, 1) rounded up is at most κ (:func:`near_edges`), or r₂ when that is smaller.
    The condition only grows easier with κ (ρ grows, S shrinks), so κ is found by bisection over
    the counts up to the one S(0) gives, where it holds. Some p-quantile lies in the interval
    read with r̂ with probability >= 1 − α."""
    r1 = first_radius(b, depth, kinds, alpha, probability, first)
    alpha2 = split_alpha(alpha)[1]

    def rho(k: int) -> float:
        # ρ over every edge can come out a few ulps above r₂ (the same bisection, summed in
        # another order): the cap keeps a row at or below the planner's figure.
        chernoff = edge_tail_bound(b, depth, kinds, alpha2, probability, k)
        return min(second, chernoff, stop_loss_rho(b, depth, kinds, alpha2, probability, k))

    def holds(k: int) -> bool:
        r = rho(k)
        return r >= second or rounded_count(len(near_edges(cdf, probability, r1, r))) <= k

    counts = [1]
    top = rounded_count(len(near_edges(cdf, probability, r1)))  # S(0) ⊇ S(ρ(top)): holds
    while counts[-1] < top:
        counts.append(rounded_count(counts[-1] + 1))
    lo, hi = -1, len(counts) - 1  # holds(counts[hi]); lo: not known to hold
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if holds(counts[mid]):
            hi = mid
        else:
            lo = mid
    return rho(counts[hi])


def rounded_count(size: int) -> int:
    """max(|S|, 1) rounded up to the next ⌈2^(i/8)⌉ (1, 2, …, 16, 18, 20, 21, 23, 25, …: every
    count to 16, then at most 9.1% more): ρ at a larger count is only larger, and a release
    with many cells computes ρ at fewer than 100 counts (up to 4,097 edges)."""
    i = 0
    while math.ceil(2 ** (i / 8)) < size:
        i += 1
    return math.ceil(2 ** (i / 8))
