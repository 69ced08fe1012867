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
from snapdp.data import quantiles as qmod

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
    w1, s2, wmax = qmod.target_weight_stats(b, depth, p)
    assert w1 == pytest.approx(np.abs(v).sum(axis=1).max(), rel=1e-6)
    assert s2 == pytest.approx((v * v).sum(axis=1).max(), rel=1e-6)
    assert wmax == pytest.approx(np.abs(v).max(), rel=1e-6)
    noisy = np.random.default_rng(3).normal(5, 2, len(rows))
    levels, start = [], 0
    for level in range(1, depth + 1):
        levels.append(noisy[start : start + b**level])
        start += b**level
    assert np.allclose(qmod.least_squares_cdf(levels, spec), w @ noisy)
