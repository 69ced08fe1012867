"""The tree's quantiles at p·Ñ, the least-squares total (issue 33): the crossing of the
consistent CDF is read at p·Ñ rather than at p·N̂, the total after the isotonic step (which can
only exceed Ñ), and the rank ± of the released value is then min((1 + p)·c, rₚ)
(docs/data.md, "The rank ± of a released quantile"; docs/utility.md, "Quartiles at p·Ñ").

The rank claim is deterministic given the noise: whatever the noise, if rₚ is at least the
largest error of C̃ − p·Ñ against C − p·N over the edges, the released value's leaf has its true
rank interval within rₚ of p·N (and within (1 + p)·c, c the largest CDF error). The test
checks it by brute force on small trees, heavy and spiky noise included.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from tests.unit.data._engines import oracle_engine

from snapdp.data import Column, Ledger, PrivateTable, Query, Schema
from snapdp.data.statistics.math import quantile_tail as qtail
from snapdp.data.statistics.math import quantile_tree as qmod

PROBS = (Fraction(0), Fraction(1, 10), Fraction(1, 4), Fraction(1, 2), Fraction(3, 4), Fraction(1))
_TOL = 1e-7  # the doubles' rounding of the least-squares CDF (counts below 10^4)


def _first_leaf(cum: np.ndarray, target: float) -> int:
    """The oracle: the first leaf j whose upper CDF value reaches ``target``."""
    for j in range(len(cum) - 1):
        if cum[j + 1] >= target:
            return j
    return len(cum) - 2


def test_exact_quantiles_reads_the_crossing_at_the_given_total() -> None:
    spec = qmod.tree_spec(0, 8, 1, branching=2)
    leaves = np.array([3.0, 0.0, 5.0, 2.0, 0.0, 0.0, 4.0, 6.0])
    cum = np.concatenate(([0.0], np.cumsum(leaves)))
    for total in (20.0, 14.0, 9.5, 0.0, -3.0, 25.0):
        got = qmod.exact_quantiles(leaves, spec, PROBS, total)
        for p, x in zip(PROBS, got, strict=True):
            target = float(p) * min(total, cum[-1])
            j = _first_leaf(cum, target)
            mass = cum[j + 1] - cum[j]
            frac = 0.0 if mass <= 0 else min(1.0, max(0.0, (target - cum[j]) / mass))
            assert x == j + Fraction(frac), (total, p)
    # without a total, N (the leaves' sum) as before
    assert qmod.exact_quantiles(leaves, spec, PROBS) == qmod.exact_quantiles(
        leaves, spec, PROBS, float(cum[-1])
    )


def _noisy_levels(
    spec: qmod.TreeSpec, truth: list[list[int]], rng: np.random.Generator, scale: float
) -> list[np.ndarray]:
    out = []
    for level in truth:
        noise = rng.laplace(0.0, scale, len(level))
        spikes = rng.random(len(level)) < 0.1  # an occasional large error, either sign
        noise[spikes] *= 8
        out.append(np.asarray(level, dtype=np.float64) + noise)
    return out


@pytest.mark.parametrize(("branching", "depth"), [(2, 3), (3, 2), (4, 2)])
def test_the_released_leaf_is_within_m_p_r_p_and_one_plus_p_c(branching: int, depth: int) -> None:
    spec = qmod.tree_spec(0, branching**depth, 1, branching=branching)
    rng = np.random.default_rng(3300 + branching)
    edges = spec.leaves + 1
    for trial in range(300):
        rows = int(rng.choice([0, 1, 3, 12, 60]))
        data = np.minimum(rng.gamma(1.2, spec.leaves / 4, rows).astype(int), spec.leaves - 1)
        leaves_true = np.bincount(data, minlength=spec.leaves)
        truth = qmod.level_counts(leaves_true.tolist(), spec)
        c_true = np.concatenate(([0.0], np.cumsum(leaves_true)))
        n = c_true[-1]
        scale = float(rng.choice([0.5, 2.0, 8.0]))
        noisy = _noisy_levels(spec, truth, rng, scale)
        ls = qmod.least_squares_cdf(noisy, spec)
        consistent = qmod.consistent_leaves(noisy, spec)
        n_ls = float(ls[-1])
        released = qmod.exact_quantiles(consistent, spec, PROBS, n_ls)
        c = float(np.abs(ls - c_true).max())  # the CDF's largest error, the total's included
        for p, x in zip(PROBS, released, strict=True):
            pf = float(p)
            r = float(np.abs((ls - pf * n_ls) - (c_true - pf * n)).max())
            bound = qtail.released_rank(pf, c, r) + _TOL * (1 + n + abs(n_ls))
            # the leaves whose closed range holds x (two when x is an edge)
            js = [j for j in range(edges - 1) if j <= x <= j + 1]
            ok = any(c_true[j] - pf * n <= bound and c_true[j + 1] - pf * n >= -bound for j in js)
            assert ok, (trial, p, x, r, c)


def test_a_flat_noisy_top_no_longer_moves_the_value_past_r_p() -> None:
    """One level of four leaves, 10 rows in the first; the CDF's errors (−8, 0, 0, −8) at the
    edges 1..4 give rₚ = 4 for the median (|error − Ñ's error/2| is 4 at every edge) and a
    pooled top N̂ = 10 − 8/3 > Ñ = 2. At p·N̂ the median's leaf would be 1, whose true rank 10
    is 5 > rₚ from p·N = 5; at p·Ñ it is leaf 0, within rₚ."""
    spec = qmod.tree_spec(0, 4, 1, branching=4)
    assert spec.depth == 1
    noisy = [np.array([2.0, 8.0, 0.0, -8.0])]  # true leaves (10, 0, 0, 0)
    c_true = np.array([0.0, 10.0, 10.0, 10.0, 10.0])
    ls = qmod.least_squares_cdf(noisy, spec)
    consistent = qmod.consistent_leaves(noisy, spec)
    half = Fraction(1, 2)
    r = float(np.abs((ls - 0.5 * ls[-1]) - (c_true - 5.0)).max())
    assert r == 4.0
    assert qtail.released_rank(0.5, float(np.abs(ls - c_true).max()), r) <= 4.0 * (1 + 1e-8)
    (now,) = qmod.exact_quantiles(consistent, spec, (half,), float(ls[-1]))
    (before,) = qmod.exact_quantiles(consistent, spec, (half,))  # at p·N̂
    assert 0 <= now <= 1  # leaf 0: true ranks [0, 10] around p·N = 5
    assert 1 < before <= 2  # leaf 1: true ranks [10, 10], 5 from p·N


@pytest.mark.parametrize(
    "edges", [(Fraction(60), Fraction(40)), (Fraction(5, 2), Fraction(3)), (Fraction(81, 2), 41)]
)
def test_an_inverted_value_interval_states_the_whole_range(
    monkeypatch: pytest.MonkeyPatch, edges: tuple[Fraction, Fraction]
) -> None:
    """The least-squares CDF need not be monotone, so the value interval's two edges can cross,
    and on an integer column an interval can hold no p-quantile of integers (only when the value
    claim has failed): the row then states the bounds, as the exponential mechanism's rows do,
    never an interval with lo > hi or a non-integer value with ±0."""

    def crossed(cdf: object, spec: qmod.TreeSpec, p: object, rank: float) -> tuple[Fraction, ...]:
        return edges

    monkeypatch.setattr(qmod, "value_interval", crossed)
    rng = np.random.default_rng(5)
    rows = [{"x": str(v)} for v in rng.integers(20, 70, size=200)]
    schema = Schema((Column("x", "integer", Fraction(0), Fraction(100)),))
    table = PrivateTable(
        schema=schema, engine=oracle_engine(rows), ledger=Ledger(None, 10), rng=rng
    )
    (result,) = table.release(
        [Query("quantiles", "x", quantiles=(Fraction(1, 2),), method="tree")], 1
    )
    (row,) = result.rows
    assert row.interval == (0.0, 100.0)
    assert 0 <= row.value <= 100 and row.accuracy >= max(row.value, 100 - row.value)
