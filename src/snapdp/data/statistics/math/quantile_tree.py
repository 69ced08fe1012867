"""Quantiles from a b-ary tree histogram: the math only (no engine, no I/O). See docs/data.md.

A bounded numeric column [L, U] is cut into b**depth equal leaves no wider than the declared
resolution. The engine counts the rows per leaf (values clamped to [L, U]); :func:`level_counts`
sums them into the levels 1..depth of the tree (the root, the total, is not released); the caller
adds noise with one snapping mechanism per level (:func:`level_calibrations`: ε split equally over
the levels); :func:`consistent_leaves` post-processes the noisy tree into consistent,
non-negative leaf counts with a monotone CDF; :func:`quantiles_from_leaves` reads the quantiles.
:func:`rank_accuracy` and :func:`value_accuracy` state the accuracy before anything is spent.

Privacy: a row lies in exactly one node per level, so a unit with at most k rows (the per-unit row
bound) moves one level's node counts by d₁, …, d_m with Σdᵢ <= k: each level is a histogram with L1
sensitivity k, calibrated as in :mod:`snapdp.data.statistics.calibration`. The levels are released
with ε/depth each and compose to ε (sequential composition over the levels); their δ add up.
Everything after the noise is post-processing of public quantities.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np
import numpy.typing as npt
from msgspec import Struct

from snapdp._rational import shown_rational
from snapdp._validation import check_count, check_epsilon, check_finite, check_positive_finite
from snapdp.data.model.schema import DEFAULT_MAX_ROWS
from snapdp.data.statistics.calibration import Calibration, calibrate_l1
from snapdp.data.statistics.math.tree_branching import branching_for
from snapdp.errors import ParameterError

__all__ = [
    "BRANCHING_CANDIDATES",
    "MAX_LEAVES",
    "TreeSpec",
    "band_slack",
    "consistent_leaves",
    "exact_quantiles",
    "integer_in_leaf",
    "leaf_edges",
    "least_squares_cdf",
    "level_calibrations",
    "level_counts",
    "node_bounds",
    "quantiles_from_leaves",
    "tree_spec",
    "value_interval",
]

MAX_LEAVES = 4096
"""The largest number of leaves a tree may have (the declared resolution must allow it)."""

BRANCHING_CANDIDATES = tuple(range(2, 17))
"""The branching factors :func:`tree_spec` chooses among."""

_REFERENCE_ALPHA = 0.05  # the confidence the branching factor is optimised for (any is close)
_WEIGHT_INFLATION = 1 + 1e-9  # W is summed in doubles; its relative error is far below this


class TreeSpec(Struct, frozen=True):
    """A b-ary tree over [lower, upper]: ``branching``**``depth`` leaves of width ``leaf_width``.

    Levels are numbered 1..depth (level 1: the b children of the root; level depth: the leaves);
    level l has b**l nodes, each covering b**(depth − l) consecutive leaves. ``weight`` is W, the
    largest Σ|wᵢ| of the least-squares CDF estimate at a leaf edge as a combination of node
    counts (see :func:`rank_accuracy`).
    """

    lower: Fraction
    upper: Fraction
    branching: int
    depth: int
    weight: float

    @property
    def leaves(self) -> int:
        """The number of leaves, b**depth."""
        return int(self.branching**self.depth)

    @property
    def leaf_width(self) -> Fraction:
        """(upper − lower)/b**depth, exactly."""
        return (self.upper - self.lower) / self.leaves

    def nodes(self, level: int) -> int:
        """The number of nodes at ``level`` (1..depth): b**level."""
        return int(self.branching**level)


def tree_spec(
    lower: object, upper: object, resolution: object, branching: int | None = None
) -> TreeSpec:
    """The tree for [lower, upper] with leaves no wider than ``resolution``.

    depth = the smallest d with b**d >= (upper − lower)/resolution (at least 1). Without a
    ``branching``, b is the candidate in 2..16 minimising W(b)·depth(b)·ln(T(b)/0.05) — the
    stated CDF error bound of :func:`rank_accuracy` up to the factor 1/ε·row_bound shared by all
    candidates (T = the number of released nodes, each node's noise scale grows with depth since
    the levels split ε); the choice is pinned per n in :mod:`.tree_branching`, which a test
    checks against :func:`searched_branching`. OpenDP picks b from a data-size heuristic; ours
    minimises the bound we state, from public parameters only. At most :data:`MAX_LEAVES`
    leaves. See docs/data.md.
    """
    lo = Fraction(check_finite("lower", lower))
    hi = Fraction(check_finite("upper", upper))
    if not lo < hi:
        raise ParameterError(
            f"`lower` must be < `upper`, not {shown_rational(lo)} >= {shown_rational(hi)}",
            parameter="lower",
        )
    res = Fraction(check_positive_finite("resolution", resolution))
    needed = max(1, math.ceil((hi - lo) / res))
    if needed > MAX_LEAVES:
        raise ParameterError(
            f"`resolution` = {shown_rational(res)} needs {needed} leaves over "
            f"[{shown_rational(lo)}, {shown_rational(hi)}]; at most {MAX_LEAVES} are allowed "
            "(choose a coarser resolution)",
            parameter="resolution",
        )
    if branching is not None:
        if isinstance(branching, bool) or not isinstance(branching, int) or branching < 2:
            raise ParameterError(
                f"`branching` must be an integer >= 2, not {branching!r}", parameter="branching"
            )
        depth = _depth_for(branching, needed)
        if branching**depth > MAX_LEAVES:
            raise ParameterError(
                f"`branching` = {branching} needs {branching**depth} leaves; at most "
                f"{MAX_LEAVES} are allowed",
                parameter="branching",
            )
        return TreeSpec(lo, hi, branching, depth, _weight(branching, depth))
    b = branching_for(needed)  # the search's choice, pinned (searched_branching)
    depth = _depth_for(b, needed)
    return TreeSpec(lo, hi, b, depth, _weight(b, depth))


def searched_branching(needed: int) -> int:
    """The candidate minimising W(b)·depth(b)·ln(T(b)/0.05) among those whose tree fits,
    computed (the pinned table of :mod:`.tree_branching` is this, for every n)."""
    best: tuple[float, int] | None = None
    for b in BRANCHING_CANDIDATES:
        depth = _depth_for(b, needed)
        if b**depth > MAX_LEAVES:
            continue
        score = _score(b, depth)
        if best is None or score < best[0]:
            best = (score, b)
    assert best is not None  # b = 2 always fits: 2**⌈log2 needed⌉ <= MAX_LEAVES (a power of 2)
    return best[1]


def leaf_edges(spec: TreeSpec) -> tuple[Fraction, ...]:
    """The b**depth + 1 leaf edges L = e₀ < e₁ < … < e_n = U, exactly.

    Leaf i is [eᵢ, eᵢ₊₁); the last leaf is closed, [e_{n−1}, U]. The engine counts values clamped
    to [L, U] (so a value below L counts in leaf 0, one at or above U in the last leaf).
    """
    w = spec.leaf_width
    return (*tuple(spec.lower + i * w for i in range(spec.leaves)), spec.upper)


def level_counts(leaf_counts: Sequence[int], spec: TreeSpec) -> list[list[int]]:
    """The exact node counts of levels 1..depth (level depth = the leaves), as Python ints."""
    if len(leaf_counts) != spec.leaves:
        raise ParameterError(
            f"`leaf_counts` must have {spec.leaves} entries (one per leaf), not {len(leaf_counts)}",
            parameter="leaf_counts",
        )
    levels = [[int(c) for c in leaf_counts]]
    for _ in range(spec.depth - 1):
        below = levels[0]
        b = spec.branching
        levels.insert(0, [sum(below[i : i + b]) for i in range(0, len(below), b)])
    return levels


def node_bounds(
    spec: TreeSpec, epsilon: object, row_bound: int, max_rows: int = DEFAULT_MAX_ROWS
) -> tuple[int, int]:
    """Symmetric count-mechanism bounds ±B that the noise of a node can never reach.

    B = max_rows + ⌈1500·k·depth·k/ε⌉. Every node gets ε_node >= ε/(depth·k) (the fallback of
    :func:`level_calibrations` is ε/(depth·m), m <= k), so λ′ <= 2/ε_node, Λ <= 2λ′, and the noise
    of one release reaches at most (λ′·1074·ln 2 + Λ)·k <= 1494·k/ε_node (U* >= 2**-1074). A true
    count in [0, max_rows] therefore never meets the clamp: each node's error is exactly
    k·(Y + R), Y the noise and |R| <= Λ/2 the snapping, which :func:`rank_accuracy` uses.
    """
    eps = check_epsilon("epsilon", epsilon)
    k = _check_row_bound(row_bound)
    check_count("max_rows", max_rows)
    margin = math.ceil(Fraction(1500 * k * spec.depth * k) / eps)
    return -(max_rows + margin), max_rows + margin


def level_calibrations(
    spec: TreeSpec,
    epsilon: object,
    row_bound: int,
    lower: object | None = None,
    upper: object | None = None,
    max_rows: int = DEFAULT_MAX_ROWS,
) -> tuple[Calibration, ...]:
    """How to noise each level l = 1..depth: ε/depth each, L1-calibrated (docs/data.md).

    Level l is a histogram of b**l cells with L1 sensitivity ``row_bound`` (k) that a unit
    touches in at most m = min(k, b**l) cells; each level's nodes get
    ``calibrate_l1(ε/depth, k, lower, upper, m)``: when certified, every node of the level gets
    noise for Δ = k at that calibration's ε; when not, ε/(depth·m) at Δ = k (a unit's rows may
    all fall in one node). [lower, upper] are the count mechanism's public bounds; by default
    :func:`node_bounds` (recommended: the tighter accuracy statement needs them).
    """
    eps = check_epsilon("epsilon", epsilon)
    k = _check_row_bound(row_bound)
    lo, hi = _bounds(spec, eps, k, lower, upper, max_rows)
    eps_level = eps / spec.depth
    return tuple(
        calibrate_l1(eps_level, k, lo, hi, min(k, spec.nodes(level)))
        for level in range(1, spec.depth + 1)
    )


def _bounds(
    spec: TreeSpec,
    eps: Fraction,
    k: int,
    lower: object | None,
    upper: object | None,
    max_rows: int,
) -> tuple[Fraction, Fraction]:
    if (lower is None) != (upper is None):
        raise ParameterError(
            "`lower` and `upper` must be given together (or neither, for node_bounds)",
            parameter="lower",
        )
    if lower is None:
        lo, hi = node_bounds(spec, eps, k, max_rows)
        return Fraction(lo), Fraction(hi)
    return Fraction(check_finite("lower", lower)), Fraction(check_finite("upper", upper))


def consistent_leaves(
    noisy_levels: Sequence[Sequence[float]], spec: TreeSpec
) -> npt.NDArray[np.float64]:
    """Consistent, non-negative leaf counts with a monotone CDF from the noisy levels 1..depth.

    1. Least squares (Hay et al. 2010): the leaf vector z minimising Σ over all released nodes of
       (node sum of z − noisy node)², every node weighted equally (equal ε per level). For a
       complete tree AᵀA = Σₗ sₗ·Eₗ (Eₗ: the average over level-l blocks of sₗ = b**(depth−l)
       leaves) has the nested projections Dⱼ = Eⱼ − Eⱼ₋₁ as eigenspaces with eigenvalues
       μⱼ = Σ_{l>=j} sₗ, so z = Σⱼ Dⱼ(Aᵀy)/μⱼ, computed with block averages.
    2. The CDF of z at the leaf edges is made monotone by isotonic regression (pool adjacent
       violators) and clipped at 0; the leaves are its differences, hence >= 0.
    Step 2 never moves the CDF farther from a monotone, non-negative true CDF in the largest
    error (isotonic regression is a sup-norm contraction toward monotone sequences), so the bound
    of :func:`rank_accuracy` holds for the result. Pure post-processing.
    """
    b, depth, n = spec.branching, spec.depth, spec.leaves
    if len(noisy_levels) != depth:
        raise ParameterError(
            f"`noisy_levels` must have {depth} levels (1..depth), not {len(noisy_levels)}",
            parameter="noisy_levels",
        )
    levels = []
    for level, values in enumerate(noisy_levels, start=1):
        arr = np.asarray(values, dtype=np.float64)
        if arr.shape != (b**level,):
            raise ParameterError(
                f"`noisy_levels` level {level} must have {b**level} nodes, not {arr.shape}",
                parameter="noisy_levels",
            )
        levels.append(arr)
    # Aᵀy: each leaf gets the sum of its ancestors' noisy values (levels 1..depth)
    aty = np.zeros(n)
    for level, arr in enumerate(levels, start=1):
        aty += np.repeat(arr, b ** (depth - level))
    z = _apply_inverse(aty, b, depth)
    cdf = np.cumsum(z)
    cdf = np.maximum(_isotonic(cdf), 0.0)
    return np.diff(np.concatenate(([0.0], cdf)))


def quantiles_from_leaves(
    leaves: Sequence[float] | npt.NDArray[np.float64],
    spec: TreeSpec,
    probabilities: Sequence[object],
) -> tuple[float, ...]:
    """The p-quantiles of :func:`exact_quantiles`, each as its nearest double (which may lie
    just outside [L, U] when L or U is not a double; a release rounds into the bounds instead,
    see :mod:`snapdp.data.statistics.math.quantile_values`)."""
    return tuple(float(x) for x in exact_quantiles(leaves, spec, probabilities))


def exact_quantiles(
    leaves: Sequence[float] | npt.NDArray[np.float64],
    spec: TreeSpec,
    probabilities: Sequence[object],
    total: float | None = None,
) -> tuple[Fraction, ...]:
    """The p-quantiles from non-negative leaf counts, interpolated linearly within a leaf, as
    exact rationals in [L, U].

    With C₀ = 0, Cⱼ the cumulative count up to edge eⱼ, N = C_n and T = min(``total``, N) (N
    without it; a release passes Ñ <= N, docs/data.md, "The rank ± of a released quantile"),
    the p-quantile is in the first leaf j with C_{j+1} >= p·T, at eⱼ + (p·T − Cⱼ)/leafⱼ·w (rows
    spread evenly over the leaf); N <= 0 gives L + p·(U − L). Non-decreasing in p. The position
    in the leaf is found in doubles; the value is formed and clamped to [L, U] exactly.
    """
    arr = np.asarray(leaves, dtype=np.float64)
    if arr.shape != (spec.leaves,):
        raise ParameterError(
            f"`leaves` must have {spec.leaves} entries, not {arr.shape}", parameter="leaves"
        )
    probs = [Fraction(check_finite("probabilities", p)) for p in probabilities]
    if any(not 0 <= p <= 1 for p in probs):
        raise ParameterError("`probabilities` must lie in [0, 1]", parameter="probabilities")
    lo, width = spec.lower, spec.leaf_width
    cdf = np.concatenate(([0.0], np.cumsum(np.maximum(arr, 0.0))))
    reach = cdf[-1] if total is None else min(float(total), cdf[-1])
    out = []
    for p in probs:
        if not cdf[-1] > 0:
            out.append(lo + p * (spec.upper - spec.lower))
            continue
        target = float(p) * reach
        j = min(int(np.searchsorted(cdf[1:], target, side="left")), spec.leaves - 1)
        mass = cdf[j + 1] - cdf[j]
        frac = 0.0 if mass <= 0 else min(1.0, max(0.0, (target - cdf[j]) / mass))
        out.append(min(spec.upper, lo + (j + Fraction(frac)) * width))
    return tuple(out)


def integer_in_leaf(value: Fraction, spec: TreeSpec) -> Fraction:
    """For an integer column: the integer at ``value``'s place among the integers of its leaf,
    ⌊value⌋ moved into the leaf [eⱼ, eⱼ₊₁) (the last leaf closed at U); ``value`` itself when
    the leaf holds no integer. Post-processing of :func:`exact_quantiles`: the released value
    stays in the same leaf, and an integer column's p-quantile is an integer (docs/data.md,
    "Quantiles")."""
    width = spec.leaf_width
    j = min(max(math.floor((value - spec.lower) / width), 0), spec.leaves - 1)
    edge = spec.lower + j * width
    first = math.ceil(edge)
    last = math.floor(spec.upper) if j == spec.leaves - 1 else math.ceil(edge + width) - 1
    if first > last:
        return value
    return Fraction(min(max(math.floor(value), first), last))


def value_interval(
    cdf: Sequence[float] | npt.NDArray[np.float64],
    spec: TreeSpec,
    probability: object,
    rank: float,
) -> tuple[Fraction, Fraction]:
    """Where the true p-quantile lies, read from a released CDF (post-processing): two leaf
    edges, exactly.

    ``cdf``: C̃ at the leaf edges e₀..e_n, Ñ = C̃(e_n); ``rank``: a bound r on
    |(C̃(e) − p·Ñ) − (C(e) − p·N)| at every edge at once (C the true CDF, counting the rows below
    an edge; N = C(U)). Then every true p-quantile q of the clamped values (a value with
    #{x < q} <= p·N <= #{x <= q}) lies in [e_lo, e_hi]: e_lo the largest edge with
    C̃(e) − p·Ñ < −r (there C(e) < p·N, so q >= e), e_hi the smallest edge with C̃(e) − p·Ñ > r
    (there C(e) > p·N, so q <= e); L and U when there is none. It holds whenever r does. A
    release passes an r that bounds one tail per edge (the sum over the edges of each one's
    larger tail <= α): then *some* p-quantile lies in [e_lo, e_hi] with probability >= 1 − α
    (docs/utility.md, "The tree's value ±: one tail per edge").
    """
    cum = np.asarray(cdf, dtype=np.float64)
    p = float(check_finite("probability", probability))
    total = float(cum[-1])
    slack = band_slack(cum, rank)
    d = cum - p * total
    below = np.flatnonzero(d < -slack)
    above = np.flatnonzero(d > slack)
    lo, width = spec.lower, spec.leaf_width
    e_lo = lo + int(below[-1]) * width if len(below) else lo
    e_hi = lo + int(above[0]) * width if len(above) else spec.upper
    return max(e_lo, lo), min(e_hi, spec.upper)


def band_slack(cum: npt.NDArray[np.float64], band: float) -> float:
    """``band`` widened by more than the doubles' rounding of the released CDF ``cum``: every
    edge whose exact C̃ − p·Ñ lies within ``band`` of 0 lies within this of 0 in doubles."""
    return band * (1 + 1e-9) + 1e-9 * (abs(float(cum[-1])) + float(np.abs(cum).max()) + 1)


# --------------------------------------------------------------------------------------------
# implementation


def _frac(x: object) -> Fraction:
    return Fraction(check_finite("bound", x))


def _check_row_bound(row_bound: object) -> int:
    return check_count("row_bound", row_bound)


def _depth_for(b: int, needed: int) -> int:
    depth = 1
    while b**depth < needed:
        depth += 1
    return depth


def _score(b: int, depth: int) -> float:
    total = sum(b**level for level in range(1, depth + 1))
    return _weight(b, depth) * depth * math.log(total / _REFERENCE_ALPHA)


def _eigenvalues(b: int, depth: int) -> list[float]:
    """μⱼ = Σ_{l>=j} b**(depth − l), j = 1..depth."""
    sizes = [b ** (depth - level) for level in range(1, depth + 1)]
    return [float(sum(sizes[j - 1 :])) for j in range(1, depth + 1)]


def _block_average(x: npt.NDArray[np.float64], size: int) -> npt.NDArray[np.float64]:
    """Eₗ: the average over consecutive blocks of ``size`` along the last axis, repeated back."""
    shape = (*x.shape[:-1], x.shape[-1] // size, size)
    means = x.reshape(shape).mean(axis=-1)
    return np.repeat(means, size, axis=-1)


def _apply_inverse(x: npt.NDArray[np.float64], b: int, depth: int) -> npt.NDArray[np.float64]:
    """(AᵀA)⁻¹x = Σⱼ (Eⱼ − Eⱼ₋₁)x/μⱼ (E₀ = 0, E_depth = identity), along the last axis."""
    mu = _eigenvalues(b, depth)
    out = np.zeros_like(x)
    previous = np.zeros_like(x)
    for j in range(1, depth + 1):
        current = x if j == depth else _block_average(x, b ** (depth - j))
        out += (current - previous) / mu[j - 1]
        previous = current
    return out


def _weight(b: int, depth: int) -> float:
    """W = max over leaf edges t of Σ over nodes of |w_{t,i}| (see :func:`_weight_stats`)."""
    return _weight_stats(b, depth)[0]


@functools.lru_cache(maxsize=512)
def _weight_stats(b: int, depth: int) -> tuple[float, float, float]:
    """(W, S₂, w∞): maxₜ Σᵢ|w_{t,i}|, maxₜ Σᵢ w_{t,i}², maxₜᵢ |w_{t,i}|, w_t = A(AᵀA)⁻¹q_t.

    q_t is 1 on the leaves before edge t. Computed in doubles in chunks of edges; each inflated
    by 1e-9 relative (far above the rounding error of these short sums).
    """
    n = b**depth
    w1 = s2 = wmax = 0.0
    chunk = max(1, min(n, (1 << 22) // n))
    leaves = np.arange(n)
    for start in range(1, n + 1, chunk):
        ts = np.arange(start, min(n, start + chunk - 1) + 1)
        q = (leaves[None, :] < ts[:, None]).astype(np.float64)
        z = _apply_inverse(q, b, depth)
        prefix = np.concatenate((np.zeros((len(ts), 1)), np.cumsum(z, axis=1)), axis=1)
        abs_sum = np.zeros(len(ts))
        sq_sum = np.zeros(len(ts))
        for level in range(1, depth + 1):
            size = b ** (depth - level)
            node_sums = prefix[:, size::size] - prefix[:, 0:n:size]
            abs_sum += np.abs(node_sums).sum(axis=1)
            sq_sum += (node_sums * node_sums).sum(axis=1)
            wmax = max(wmax, float(np.abs(node_sums).max()))
        w1 = max(w1, float(abs_sum.max()))
        s2 = max(s2, float(sq_sum.max()))
    return w1 * _WEIGHT_INFLATION, s2 * _WEIGHT_INFLATION, wmax * _WEIGHT_INFLATION


def least_squares_cdf(
    noisy_levels: Sequence[Sequence[float]], spec: TreeSpec
) -> npt.NDArray[np.float64]:
    """The least-squares CDF at the leaf edges 0..n (step 1 of :func:`consistent_leaves`, before
    the isotonic step): C̃(e₀) = 0, C̃(eⱼ) = Σ_{i<j} zᵢ."""
    b, depth, n = spec.branching, spec.depth, spec.leaves
    aty = np.zeros(n)
    for level, values in enumerate(noisy_levels, start=1):
        aty += np.repeat(np.asarray(values, dtype=np.float64), b ** (depth - level))
    return np.concatenate(([0.0], np.cumsum(_apply_inverse(aty, b, depth))))


def _isotonic(y: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """The non-decreasing least-squares fit to y (pool adjacent violators, equal weights)."""
    values: list[float] = []
    counts: list[int] = []
    for v in y.tolist():
        values.append(v)
        counts.append(1)
        while len(values) > 1 and values[-2] > values[-1]:
            c = counts[-2] + counts[-1]
            values[-2] = (values[-2] * counts[-2] + values[-1] * counts[-1]) / c
            counts[-2] = c
            values.pop()
            counts.pop()
    return np.repeat(np.asarray(values), counts)
