"""Tree-histogram quantiles (docs/data.md, "Quantiles"): the math, with independent oracles.

Oracles: dense least squares (numpy.linalg.lstsq) for the consistency step and the weight W,
brute force over neighbouring small tables for the sensitivity, exact counts for known
distributions, and seeded snapping releases for the coverage of the stated rank accuracy.
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binom

from snapdp import SnappingMechanism
from snapdp.data.statistics.math import quantile_tail as q_tail
from snapdp.data.statistics.math import quantile_tree as q
from snapdp.errors import ParameterError


def _dense_tree(spec: q.TreeSpec) -> np.ndarray:
    """A: one row per released node (levels 1..depth), one column per leaf."""
    rows = []
    for level in range(1, spec.depth + 1):
        size = spec.branching ** (spec.depth - level)
        for node in range(spec.nodes(level)):
            row = np.zeros(spec.leaves)
            row[node * size : (node + 1) * size] = 1
            rows.append(row)
    return np.array(rows)


def _counts(values: list[float], spec: q.TreeSpec) -> list[int]:
    edges = q.leaf_edges(spec)
    out = [0] * spec.leaves
    for v in values:
        v = min(max(Fraction(v), spec.lower), spec.upper)
        i = next((i for i in range(spec.leaves) if edges[i] <= v < edges[i + 1]), spec.leaves - 1)
        out[i] += 1
    return out


def test_tree_spec_resolution_and_depth() -> None:
    spec = q.tree_spec(0, 100, 1)
    assert spec.leaves >= 100
    assert spec.leaf_width <= 1
    assert spec.branching ** (spec.depth - 1) < 100 <= spec.leaves
    edges = q.leaf_edges(spec)
    assert edges[0] == 0 and edges[-1] == 100 and len(edges) == spec.leaves + 1
    assert all(b - a == spec.leaf_width for a, b in itertools.pairwise(edges))
    fixed = q.tree_spec(0, 100, 1, branching=2)
    assert (fixed.branching, fixed.depth) == (2, 7)


def test_tree_spec_chooses_the_smallest_bound() -> None:
    spec = q.tree_spec(-5, 5, Fraction(1, 10))
    chosen = spec.weight * spec.depth
    for b in q.BRANCHING_CANDIDATES:
        other = q.tree_spec(-5, 5, Fraction(1, 10), branching=b)
        assert q._score(spec.branching, spec.depth) <= q._score(b, other.depth)
    assert chosen > 0


@pytest.mark.parametrize(
    ("args", "name"),
    [
        ((0, 100, 0), "resolution"),
        ((0, 100, 0.001), "resolution"),
        ((5, 5, 1), "lower"),
        ((0, 100, 1, 1), "branching"),
    ],
)
def test_tree_spec_errors(args: tuple[object, ...], name: str) -> None:
    with pytest.raises(ParameterError, match=f"`{name}`"):
        q.tree_spec(*args)  # type: ignore[arg-type]


def test_level_counts_sum_exactly() -> None:
    spec = q.tree_spec(0, 27, 1, branching=3)
    leaves = list(range(27))
    levels = q.level_counts(leaves, spec)
    assert levels[-1] == leaves
    assert levels[0] == [sum(range(9)), sum(range(9, 18)), sum(range(18, 27))]
    assert [len(lv) for lv in levels] == [3, 9, 27]


def test_sensitivity_brute_force_over_neighbouring_tables() -> None:
    """Removing one unit (<= k rows) moves each level by L1 <= k, in <= min(k, b**l) nodes."""
    spec = q.tree_spec(0, 16, 1, branching=2)
    rng = np.random.default_rng(7)
    k = 3
    for _ in range(200):
        units = [list(rng.uniform(-2, 18, size=rng.integers(1, k + 1))) for _ in range(6)]
        full = q.level_counts(_counts([v for u in units for v in u], spec), spec)
        for drop in range(len(units)):
            rest = [v for i, u in enumerate(units) if i != drop for v in u]
            neighbour = q.level_counts(_counts(rest, spec), spec)
            for level, (a, b) in enumerate(zip(full, neighbour, strict=True), start=1):
                diff = [x - y for x, y in zip(a, b, strict=True)]
                assert sum(abs(d) for d in diff) == len(units[drop]) <= k
                assert sum(1 for d in diff if d) <= min(k, spec.nodes(level))


@pytest.mark.parametrize(("b", "depth"), [(2, 4), (3, 3), (4, 2), (5, 2), (10, 2)])
def test_consistency_matches_dense_least_squares(b: int, depth: int) -> None:
    spec = q.TreeSpec(Fraction(0), Fraction(1), b, depth, q._weight(b, depth))
    a = _dense_tree(spec)
    rng = np.random.default_rng(b * 10 + depth)
    noisy = a @ rng.integers(0, 30, spec.leaves) + rng.normal(0, 5, a.shape[0])
    split, start = [], 0
    for level in range(1, depth + 1):
        split.append(noisy[start : start + spec.nodes(level)])
        start += spec.nodes(level)
    z = q._apply_inverse(a.T @ noisy, b, depth)
    expected, *_ = np.linalg.lstsq(a, noisy, rcond=None)
    np.testing.assert_allclose(z, expected, atol=1e-9)
    # the weight W: max over edges of Σ|w|, CDF_t = q_tᵀ·pinv(A)·ỹ, so w = pinv(A)ᵀ·q_t
    pinv = np.linalg.pinv(a)
    w = max(
        np.abs(pinv.T @ np.concatenate((np.ones(t), np.zeros(spec.leaves - t)))).sum()
        for t in range(1, spec.leaves + 1)
    )
    assert w <= spec.weight <= w * (1 + 1e-8)
    # the public function: monotone CDF, non-negative leaves
    leaves = q.consistent_leaves(split, spec)
    assert (leaves >= 0).all()


@pytest.mark.parametrize(("b", "depth"), [(2, 5), (4, 3), (16, 2), (7, 2)])
def test_consistency_preserves_exact_trees(b: int, depth: int) -> None:
    spec = q.TreeSpec(Fraction(0), Fraction(1), b, depth, q._weight(b, depth))
    rng = np.random.default_rng(depth)
    for _ in range(5):
        leaves = rng.integers(0, 1000, spec.leaves)
        leaves[rng.random(spec.leaves) < 0.3] = 0
        levels = q.level_counts(leaves.tolist(), spec)
        got = q.consistent_leaves(levels, spec)
        np.testing.assert_allclose(got, leaves, atol=1e-7)


def test_isotonic_is_a_sup_norm_contraction() -> None:
    rng = np.random.default_rng(3)
    for _ in range(200):
        truth = np.cumsum(rng.integers(0, 5, 40)).astype(float)
        noisy = truth + rng.normal(0, 4, 40)
        fitted = np.maximum(q._isotonic(noisy), 0)
        assert (np.diff(fitted) >= 0).all()
        assert np.abs(fitted - truth).max() <= np.abs(noisy - truth).max() + 1e-9


def test_quantiles_of_known_distributions() -> None:
    spec = q.tree_spec(0, 100, 1, branching=10)
    uniform = [1] * 100
    assert q.quantiles_from_leaves(uniform, spec, [0, 0.25, 0.5, 1]) == (0.0, 25.0, 50.0, 100.0)
    # all mass in leaf [40, 41): every quantile inside it, interpolated
    point = [0] * 100
    point[40] = 8
    assert q.quantiles_from_leaves(point, spec, [0.5, 0.75]) == (40.5, 40.75)
    # two equal halves at leaves 10 and 90: the median is the top of leaf 10
    two = [0] * 100
    two[10] = two[90] = 5
    assert q.quantiles_from_leaves(two, spec, [0.5]) == (11.0,)
    # no information: the uniform spread over [L, U]
    assert q.quantiles_from_leaves([0] * 100, spec, [0.3]) == (30.0,)


def test_exact_tree_round_trip_gives_exact_quantiles() -> None:
    spec = q.tree_spec(0, 64, 1, branching=4)
    rng = np.random.default_rng(11)
    values = rng.integers(0, 64, 2000)
    leaves = np.bincount(values, minlength=64)
    consistent = q.consistent_leaves(q.level_counts(leaves.tolist(), spec), spec)
    got = q.quantiles_from_leaves(consistent, spec, [0.1, 0.5, 0.9])
    for p, v in zip([0.1, 0.5, 0.9], got, strict=True):
        # v lies in the leaf holding the true p-quantile (the sample's integer values)
        assert abs(v - np.quantile(values, p, method="inverted_cdf")) <= 1


@pytest.mark.parametrize("explicit_bounds", [False, True])
def test_rank_accuracy_coverage_seeded(explicit_bounds: bool) -> None:
    """The stated CDF bound holds in >= 1 − α of seeded releases (binomial test at 1e-6)."""
    spec = q.tree_spec(0, 50, 1, branching=4)
    k, eps, conf = 2, Fraction(1), 0.5  # a low confidence makes the test able to fail
    if explicit_bounds:  # the union bound only
        lo, hi = 0, 1 << 20
        acc = q_tail.rank_accuracy(spec, eps, k, conf, 3, lo, hi)
    else:  # node_bounds: the Chernoff bound
        lo, hi = q.node_bounds(spec, eps, k)
        acc = q_tail.rank_accuracy(spec, eps, k, conf, 3)
    assert acc.calibrated
    cals = q.level_calibrations(spec, eps, k, lo, hi)
    rng = np.random.default_rng(2026)
    values = np.clip(rng.normal(25, 8, 500), 0, 50)
    leaves = np.bincount(np.minimum(values.astype(int), 49), minlength=64)[: spec.leaves]
    levels = q.level_counts(leaves.tolist(), spec)
    truth = np.cumsum(leaves)
    runs, misses = 100, 0
    worst = 0.0
    for _ in range(runs):
        noisy = []
        for cal, level in zip(cals, levels, strict=True):
            mech = SnappingMechanism(cal.epsilon, k, lo, hi, rng=rng)
            noisy.append(mech.release_many(np.array(level, dtype=float)))
        cdf = np.cumsum(q.consistent_leaves(noisy, spec))
        err = np.abs(cdf - truth).max()
        worst = max(worst, err)
        misses += err > acc.cdf
    limit = binom.isf(1e-6, runs, 1 - conf)
    assert misses <= limit
    assert worst > 0  # noise was added


def test_node_bounds_are_out_of_reach() -> None:
    """No node's noise can reach the clamp: (λ′·1074·ln 2 + Λ)·k below the margin, any level."""
    spec = q.tree_spec(0, 100, 1)
    for eps, k in ((Fraction(1), 1), (Fraction(1, 10), 5)):
        lo, hi = q.node_bounds(spec, eps, k, max_rows=1000)
        assert lo == -hi
        for cal in q.level_calibrations(spec, eps, k, max_rows=1000):
            for e in (cal.epsilon, eps / spec.depth / k):  # calibrated, and the fallback
                p = SnappingMechanism(e, k, lo, hi).parameters
                reach = (p.scale * 1074 * 0.6931471805599454 + p.grid) * k
                assert 1000 + reach < hi


def test_rank_and_value_accuracy_statements() -> None:
    spec = q.tree_spec(0, 100, 1)
    acc = q_tail.rank_accuracy(spec, 1, 1, 0.95, 3)
    assert acc.rank == pytest.approx(2 * acc.cdf)
    union = q_tail.rank_accuracy(spec, 1, 1, 0.95, 3, 0, 1 << 40)
    assert union.cdf >= union.weight * union.node  # explicit bounds: the union bound
    assert acc.cdf < union.cdf / 2  # node_bounds: the Chernoff bound is much tighter
    # more ε: a smaller bound; more confidence: a larger one
    assert q_tail.rank_accuracy(spec, 2, 1, 0.95, 3).cdf < acc.cdf
    assert q_tail.rank_accuracy(spec, 1, 1, 0.999, 3).cdf > acc.cdf
    v = q_tail.value_accuracy(spec, acc, 10_000)
    assert v == pytest.approx(float(spec.leaf_width) + acc.rank * 100 / 10_000)
    assert q_tail.value_accuracy(spec, acc, 1) == 100  # capped at U − L
    with pytest.raises(ParameterError, match="`n_ref`"):
        q_tail.value_accuracy(spec, acc, 0)
    with pytest.raises(ParameterError, match="`confidence`"):
        q_tail.rank_accuracy(spec, 1, 1, 1.5, 3)


def _rank_statement_holds(
    values: np.ndarray,
    spec: q.TreeSpec,
    estimates: tuple[float, ...],
    probs: tuple[float, ...],
    r: float,
) -> bool:
    """Each q̂ lies in a leaf [e_j, e_j+1] holding a value whose true rank is within ± r of p·N."""
    edges = [float(e) for e in q.leaf_edges(spec)]
    n = len(values)
    for est, p in zip(estimates, probs, strict=True):
        j = min(max(int(np.searchsorted(edges, est, side="right")) - 1, 0), spec.leaves - 1)
        if est == edges[j] and j > 0:  # on an edge: either neighbouring leaf will do
            j -= 1
        below_left = np.sum(values < edges[j])
        upto_right = np.sum(values <= edges[j + 1])
        if not (below_left <= p * n + r and upto_right >= p * n - r):
            return False
    return True


def _pums_age_coverage(path: str) -> None:
    import pandas as pd

    values = pd.read_csv(path)["age"].to_numpy(dtype=float)
    spec = q.tree_spec(0, 100, 1)
    k, eps, conf = 1, Fraction(1, 2), 0.5
    probs = (0.1, 0.25, 0.5, 0.75, 0.9)
    acc = q_tail.rank_accuracy(spec, eps, k, conf, len(probs))
    lo, hi = q.node_bounds(spec, eps, k)
    cals = q.level_calibrations(spec, eps, k)
    leaves = np.bincount(np.minimum(np.clip(values, 0, 100).astype(int), 99), minlength=100)
    levels = q.level_counts(leaves.tolist(), spec)
    rng = np.random.default_rng(1123)
    runs, misses = 100, 0
    for _ in range(runs):
        noisy = [
            SnappingMechanism(cal.epsilon, k, lo, hi, rng=rng).release_many(np.array(lv, float))
            for cal, lv in zip(cals, levels, strict=True)
        ]
        est = q.quantiles_from_leaves(q.consistent_leaves(noisy, spec), spec, probs)
        misses += not _rank_statement_holds(values, spec, est, probs, acc.rank)
    assert misses <= binom.isf(1e-6, runs, 1 - conf)


def test_rank_statement_coverage_on_pums_age(pums: Path) -> None:
    """The stated rank accuracy of the released quantiles holds on PUMS age (seeded releases)."""
    _pums_age_coverage(str(pums / "PUMS.csv"))
