"""The tree's value interval in two stages: which leaf edges the released CDF shows could matter,
and the bound over those edges only (docs/utility.md, "The tree's value ±: two stages").
Post-processing of released values and public parameters; nothing here reads the data."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from snapdp.data.statistics.math.quantile_stoploss import stop_loss_rho
from snapdp.data.statistics.math.quantile_tail import edge_tail_bound
from snapdp.data.statistics.math.sum_bound import NoiseKind

__all__ = ["FIRST_SHARE", "near_edges", "rounded_count", "split_alpha", "value_radius"]

FIRST_SHARE = 0.1
"""The share α₁/α of the first stage (|D| <= r₁ at every edge); the rest, α₂, pays for the
one-sided tails at the edges that could matter. A public constant."""


def split_alpha(alpha: float) -> tuple[float, float]:
    """(α₁, α₂) with α₁ + α₂ <= α (each rounded down: a smaller α only widens its bound)."""
    first = alpha * FIRST_SHARE
    second = (alpha - first) * (1 - 2**-50)
    return first, second


def near_edges(
    cdf: npt.NDArray[np.float64], probability: float, first: float
) -> npt.NDArray[np.intp]:
    """S: the edges (indices 0..n) where |g(e)| < 2·r₁ may hold, g = C̃ − p·Ñ the released
    least-squares CDF (``cdf``, Ñ its last entry) and r₁ = ``first``. The doubles' error of g
    is covered as in :func:`~snapdp.data.statistics.math.quantile_tree.value_interval`: every
    edge whose exact g is within 2·r₁ of 0 is in S (a superset, which only widens the bound)."""
    cum = np.asarray(cdf, dtype=np.float64)
    total = float(cum[-1])
    slack = 2 * first * (1 + 1e-9) + 1e-9 * (abs(total) + float(np.abs(cum).max()) + 1)
    return np.flatnonzero(np.abs(cum - probability * total) < slack)


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
    """r̂ = min(ρ(κ), r₂), κ = max(|S|, 1) rounded up (:func:`rounded_count`): the bound the
    value interval is read with, ρ at α₂ (the smaller of
    :func:`~snapdp.data.statistics.math.quantile_tail.edge_tail_bound`, Chernoff tails, and
    :func:`~snapdp.data.statistics.math.quantile_stoploss.stop_loss_rho`, each edge's tail the
    smaller of its Chernoff and its stop-loss bound; both are nondecreasing in κ) over the edges S
    (:func:`near_edges`, from r₁ = ``first``, the two-sided bound at α₁), capped by ``second``,
    the one-sided bound over all the edges at α₂ (what the planner states). Some p-quantile lies
    in the interval read with r̂ with probability >= 1 − α (docs/utility.md)."""
    k = rounded_count(len(near_edges(cdf, probability, first)))
    alpha2 = split_alpha(alpha)[1]
    # ρ over every edge can come out a few ulps above r₂ (the same bisection, summed in
    # another order): the cap keeps a row at or below the planner's figure.
    chernoff = edge_tail_bound(b, depth, kinds, alpha2, probability, k)
    return min(second, chernoff, stop_loss_rho(b, depth, kinds, alpha2, probability, k))


def rounded_count(size: int) -> int:
    """max(|S|, 1) rounded up to the next ⌈2^(i/8)⌉ (1, 2, …, 16, 18, 20, 21, 23, 25, …: every
    count to 16, then at most 9.1% more): ρ at a larger count is only larger, and a release
    with many cells computes ρ at fewer than 100 counts (up to 4,097 edges)."""
    i = 0
    while math.ceil(2 ** (i / 8)) < size:
        i += 1
    return math.ceil(2 ** (i / 8))
