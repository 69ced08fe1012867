"""The ± of released quantiles (docs/data.md, "Quantiles"): the rank ± from the tail bound over
the tree's noises and the value ± read from the released tree, coverage-tested.

Seeded releases through the oracle engine of a skewed integer column; each release counts as a
miss when any of its quantiles falls outside its stated ± (in values: the true quantile outside
the stated interval, or farther than the ± from the value; in ranks: no value within one leaf
of the released one has a true rank within the rank ± of p·N). The statements hold for every
quantile of a release at once, so misses are counted per release against a binomial threshold
at alpha = 1e-6.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import binom
from tests.data_oracle import OracleEngine

from snapdp.data import Column, PrivateTable, Query, Schema
from snapdp.data.statistics.math import quantile_tail as qmod_tail
from snapdp.data.statistics.math import quantile_tree as qmod
from snapdp.data.statistics.math.sum_bound import noise_kind
from snapdp.mechanism import SnappingMechanism
from snapdp.rescaling import mechanism_parameters

PROBS = (Fraction(1, 10), Fraction(1, 2), Fraction(9, 10))
SCHEMA = Schema((Column("v", "integer", Fraction(0), Fraction(50)),), max_rows=100_000)


def _values() -> np.ndarray:
    rng = np.random.default_rng(11)
    return np.minimum(rng.gamma(2.0, 6.0, 600).astype(int), 60)  # skewed, some above U


def _true_quantile_ok(clamped: np.ndarray, p: float, lo: float, hi: float) -> bool:
    """Every true p-quantile q (#{x < q} <= p·N <= #{x <= q}) lies in [lo, hi]."""
    n = len(clamped)
    xs = np.sort(clamped)
    candidates = [float(x) for x in np.unique(xs)]
    quantiles = [
        q for q in candidates if np.sum(xs < q) <= p * n <= np.sum(xs <= q)
    ]  # the quantile set is an interval of data values (or between two of them)
    return all(lo <= q <= hi for q in quantiles)


def _rank_ok(clamped: np.ndarray, p: float, value: float, rank: float) -> bool:
    n = len(clamped)
    left, right = np.floor(value) - 1, np.ceil(value) + 1  # one leaf (width 1) either side
    below = np.sum(clamped < left)
    upto = np.sum(clamped <= right)
    return bool(below <= p * n + rank and upto >= p * n - rank)


@pytest.mark.parametrize("confidence", [0.5, 0.95])
def test_value_and_rank_accuracy_cover(confidence: float) -> None:
    values = _values()
    clamped = np.clip(values, 0, 50)
    rows = [{"v": int(x)} for x in values]
    runs, misses_value, misses_rank = 100, 0, 0
    widths = []
    for seed in range(runs):
        table = PrivateTable(
            engine=OracleEngine(rows),
            schema=SCHEMA,
            total_epsilon=100,
            rng=np.random.default_rng(seed),
        )
        q = Query("quantiles", "v", quantiles=PROBS, resolution=Fraction(1))
        result = table.release([q], "0.5", confidence=confidence)[0]
        bad_value = bad_rank = False
        for row in result.rows:
            assert row.interval is not None and row.rank_accuracy is not None
            lo, hi = row.interval
            assert lo <= row.value <= hi
            assert max(row.value - lo, hi - row.value) <= row.accuracy
            p = float(row.quantile or 0)
            bad_value |= not _true_quantile_ok(clamped, p, lo, hi)
            bad_rank |= not _rank_ok(clamped, p, row.value, row.rank_accuracy)
            widths.append(row.accuracy)
        misses_value += bad_value
        misses_rank += bad_rank
    limit = binom.isf(1e-6, runs, 1 - confidence)
    assert misses_value <= limit
    assert misses_rank <= limit
    # no longer the worst case over all data (the whole range [0, 50])
    assert float(np.median(widths)) < 25


def test_value_accuracy_is_read_from_the_tree() -> None:
    """A more concentrated column gives a narrower ± at the same ε (before: the same ±)."""
    widths = {}
    for name, spread in (("narrow", 1.0), ("wide", 12.0)):
        rng = np.random.default_rng(5)
        rows = [{"v": int(np.clip(round(25 + spread * x), 0, 50))} for x in rng.normal(size=800)]
        table = PrivateTable(
            engine=OracleEngine(rows), schema=SCHEMA, total_epsilon=10, rng=np.random.default_rng(1)
        )
        q = Query("quantiles", "v", quantiles=(Fraction(1, 2),), resolution=Fraction(1))
        widths[name] = table.release([q], 1)[0].rows[0].accuracy
    assert widths["narrow"] < widths["wide"]


@pytest.mark.parametrize(("b", "depth", "p"), [(3, 2, 0.3), (2, 3, 0.5), (4, 2, 0.9)])
def test_target_weights_match_dense_least_squares(b: int, depth: int, p: float) -> None:
    """W, S₂, w∞ of C̃(t) − p·Ñ and the least-squares CDF, against numpy's pseudo-inverse."""
    spec = qmod.tree_spec(0, b**depth, 1, branching=b)
    rows = []
    for level in range(1, depth + 1):
        size = b ** (depth - level)
        for node in range(b**level):
            row = np.zeros(b**depth)
            row[node * size : (node + 1) * size] = 1
            rows.append(row)
    a = np.array(rows)
    cum = np.tril(np.ones((b**depth + 1, b**depth)), -1)  # edge t sums the leaves before it
    w = cum @ np.linalg.pinv(a)  # CDF weights on the nodes, edges 0..n
    v = w - p * w[-1][None, :]
    w1, s2, wmax = qmod_tail.target_weight_stats(b, depth, p)
    assert w1 == pytest.approx(np.abs(v).sum(axis=1).max(), rel=1e-6)
    assert s2 == pytest.approx((v * v).sum(axis=1).max(), rel=1e-6)
    assert wmax == pytest.approx(np.abs(v).max(), rel=1e-6)
    noisy = np.random.default_rng(3).normal(5, 2, len(rows))
    levels, start = [], 0
    for level in range(1, depth + 1):
        levels.append(noisy[start : start + b**level])
        start += b**level
    assert np.allclose(qmod.least_squares_cdf(levels, spec), w @ noisy)


def _spec_kinds(b: int, depth: int, eps: Fraction) -> tuple[qmod.TreeSpec, tuple, tuple]:
    spec = qmod.tree_spec(0, b**depth, 1, branching=b)
    lo, hi = qmod.node_bounds(spec, eps, 1, 100_000)
    cals = qmod.level_calibrations(spec, eps, 1, lo, hi)
    params = tuple(mechanism_parameters(c.epsilon, 1, lo, hi) for c in cals)
    return spec, cals, tuple(noise_kind(p) for p in params)


@pytest.mark.parametrize(
    ("b", "depth", "eps"),
    [(10, 2, Fraction(1)), (10, 2, Fraction(1, 3)), (2, 6, Fraction(1, 2)), (4, 3, Fraction(2))],
)
def test_tree_tail_bound_is_below_the_old_bounds(b: int, depth: int, eps: Fraction) -> None:
    """The averaged tail bound against the Chernoff bound with Λ/2 per unit of weight (and the
    union bound) it replaces: never larger, and for b = 10, depth 2 at least 30% smaller."""
    spec, cals, kinds = _spec_kinds(b, depth, eps)
    lo, hi = qmod.node_bounds(spec, eps, 1, 100_000)
    params = [mechanism_parameters(c.epsilon, 1, lo, hi) for c in cals]
    scale = max(p.scale * p.sensitivity for p in params)
    grid = max(p.grid * p.sensitivity for p in params)
    nodes = sum(spec.nodes(lv) for lv in range(1, depth + 1))
    alpha = 0.05
    old = qmod_tail.chernoff_cdf(spec, scale, grid, 1, alpha, nodes)
    new = qmod_tail.tree_tail_bound(b, depth, kinds, alpha)
    assert new <= old
    assert qmod_tail.rank_accuracy(spec, eps, 1, 1 - alpha, 1).cdf <= new  # rank_accuracy takes it
    for p in (0.1, 0.5, 0.75):
        old_p = qmod_tail.chernoff_cdf(spec, scale, grid, 1, alpha, nodes, p)
        assert qmod_tail.tree_tail_bound(b, depth, kinds, alpha, p) <= old_p
    if b == 10:
        assert new <= 0.7 * old


def _ls_errors(b: int, depth: int, eps: Fraction, runs: int, seed: int) -> tuple:
    """The least-squares CDF's errors at the edges 0..n over seeded releases of a fixed, skewed
    tree (the release's own mechanisms, the default node bounds): (errors runs × edges, N)."""
    spec, cals, _ = _spec_kinds(b, depth, eps)
    lo, hi = qmod.node_bounds(spec, eps, 1, 100_000)
    rng = np.random.default_rng(seed)
    leaves = np.bincount(np.minimum(rng.gamma(1.5, 4.0, 300).astype(int), spec.leaves - 1),
                         minlength=spec.leaves)  # fmt: skip
    truth = qmod.level_counts(leaves.tolist(), spec)
    noisy_levels = []
    for cal, counts in zip(cals, truth, strict=True):
        mech = SnappingMechanism(cal.epsilon, 1, lo, hi, rng=np.random.default_rng(seed + 1))
        noisy_levels.append(mech.release_many(np.tile(counts, (runs, 1)).astype(np.float64)))
    cdf_true = np.concatenate(([0.0], np.cumsum(leaves)))
    errors = np.array([
        qmod.least_squares_cdf([lv[r] for lv in noisy_levels], spec) - cdf_true
        for r in range(runs)
    ])  # fmt: skip
    return errors, float(cdf_true[-1])


@pytest.mark.parametrize("confidence", [0.5, 0.9])
def test_tree_tail_bound_covers(confidence: float) -> None:
    """Seeded coverage of the CDF ± and of the per-p ± at every edge at once (misses per release
    against the binomial threshold at 1e-6); the bound is also not vacuous (some release comes
    within half of it)."""
    b, depth, eps, runs = 4, 3, Fraction(1, 2), 400
    _, _, kinds = _spec_kinds(b, depth, eps)
    errors, _ = _ls_errors(b, depth, eps, runs, 7)
    alpha = 1 - confidence
    limit = binom.isf(1e-6, runs, alpha)
    c = qmod_tail.tree_tail_bound(b, depth, kinds, alpha)
    worst = np.abs(errors).max(axis=1)
    assert int((worst > c).sum()) <= limit
    assert float((worst <= c).mean()) >= confidence  # seeded: the coverage itself
    assert worst.max() > c / 2
    for p in (0.25, 0.5, 0.9):
        r = qmod_tail.tree_tail_bound(b, depth, kinds, alpha, p)
        combo = np.abs(errors - p * errors[:, -1:]).max(axis=1)  # (C̃ − p·Ñ) − (C − p·N)
        assert int((combo > r).sum()) <= limit
        assert float((combo <= r).mean()) >= confidence
        assert qmod_tail.released_rank(p, c, r) <= (1 + p) * c * (1 + 1e-8)


def test_released_rank_holds_after_the_isotonic_step() -> None:
    """The rank ± of released quantiles against the true ranks of the released value's leaf
    edges, over seeded releases at 50% confidence: m_p·rₚ alone (the argument of
    released_rank), and released_rank itself, which takes it for p = 1/4 and 1/2 on this tree
    (misses per release against the binomial threshold at 1e-6)."""
    b, depth, eps, runs, alpha = 8, 2, Fraction(1, 2), 400, 0.5
    spec, cals, kinds = _spec_kinds(b, depth, eps)
    lo, hi = qmod.node_bounds(spec, eps, 1, 100_000)
    rng = np.random.default_rng(7)
    leaves = np.bincount(np.minimum(rng.gamma(1.5, 4.0, 300).astype(int), spec.leaves - 1),
                         minlength=spec.leaves)  # fmt: skip
    truth = qmod.level_counts(leaves.tolist(), spec)
    cdf_true = np.concatenate(([0.0], np.cumsum(leaves)))
    n = cdf_true[-1]
    mechs = [SnappingMechanism(c.epsilon, 1, lo, hi, rng=np.random.default_rng(8)) for c in cals]
    c = qmod_tail.tree_tail_bound(b, depth, kinds, alpha)
    probs = (0.1, 0.25, 0.5, 0.75)
    targets = {p: qmod_tail.tree_tail_bound(b, depth, kinds, alpha, p) for p in probs}
    alone = {p: max(1 + 2 * p, p / (1 - p)) * targets[p] for p in probs}
    ranks = {p: qmod_tail.released_rank(p, c, targets[p]) for p in probs}
    assert ranks[0.25] < 1.25 * c and ranks[0.5] < 1.5 * c  # the rₚ branch is the one tested
    misses = misses_alone = 0
    for _ in range(runs):
        noisy = [
            m.release_many(np.asarray(t, dtype=np.float64))
            for m, t in zip(mechs, truth, strict=True)
        ]
        est = qmod.consistent_leaves(noisy, spec)
        cum = np.concatenate(([0.0], np.cumsum(est)))
        total = min(float(qmod.least_squares_cdf(noisy, spec)[-1]), cum[-1])  # Ñ, as released
        bad = bad_alone = False
        for p in probs:  # the released value's leaf j, as exact_quantiles finds it at p·Ñ
            j = min(int(np.searchsorted(cum[1:], p * total, side="left")), spec.leaves - 1)
            if not cum[-1] > 0:  # no total: the value L + p(U − L), in leaf ⌊p·n⌋
                j = min(int(p * spec.leaves), spec.leaves - 1)
            high, low = cdf_true[j] - p * n, cdf_true[j + 1] - p * n
            bad |= not (high <= ranks[p] and low >= -ranks[p])
            bad_alone |= not (high <= alone[p] and low >= -alone[p])
        misses += bad
        misses_alone += bad_alone
    assert misses <= binom.isf(1e-6, runs, alpha)
    assert misses_alone <= binom.isf(1e-6, runs, alpha)
    assert 1 - max(misses, misses_alone) / runs >= 1 - alpha  # seeded: the coverage itself
