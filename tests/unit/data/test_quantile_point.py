"""The exponential mechanism's point draw (issue 33): its middle-rank loss keeps the loss
sensitivity (brute force over neighbours), its stated rank ± holds at the stated rate (the exact
output distribution, no sampling), it releases the true quantile more often than the interval
loss on data with many rows per value, the probabilities' shares of ε are public and even out
their rank ±, and a neighbouring table gets the same method and notes (docs/utility.md,
"The point's loss: the middle rank")."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from tests.unit.data._engines import oracle_engine

from snapdp.data import Column, Ledger, PrivateTable, Query, Schema
from snapdp.data.statistics.math import exponential_grid as expq

PROBS = (Fraction(1, 4), Fraction(1, 2), Fraction(3, 4), Fraction(9, 10), Fraction(1, 10))


def _rank_distance(counts: list[int], j: int, p: Fraction) -> Fraction:
    """The distance from p·n to cell j's rank interval [Cⱼ, Cⱼ₊₁], exactly."""
    n, below = sum(counts), sum(counts[:j])
    return max(Fraction(below) - p * n, p * n - (below + counts[j]), Fraction(0))


def _distribution(params: expq.ExponentialParameters, losses: list[int]) -> list[float]:
    """The mechanism's output distribution r^−min(ℓ, C)/Σ, in doubles relative to the best
    candidate (exact enough: the test compares masses with α >= 10^-3)."""
    low = min(losses)
    lr = params.log_base
    w = [math.exp(-(min(x, params.cap) - low) * lr) for x in losses]
    total = math.fsum(w)
    return [x / total for x in w]


@pytest.mark.parametrize("middle", [0, 1, 3, 20])
def test_the_point_loss_moves_by_at_most_the_sensitivity(middle: int) -> None:
    """Adding or removing one row anywhere moves every cell's point loss by at most
    max(a, b − a), over all tables of up to four rows on five cells (brute force)."""
    cells = 5
    for p in PROBS:
        sens = expq.sensitivity(p, 1)
        worst = 0
        for size in range(5):
            for rows in itertools.combinations_with_replacement(range(cells), size):
                counts = [rows.count(j) for j in range(cells)]
                base = expq.losses(counts, p, 0, middle)
                for j in range(cells):  # add a row in cell j, and remove one if there is one
                    for step in (1, -1):
                        if counts[j] + step < 0:
                            continue
                        other = list(counts)
                        other[j] += step
                        moved = max(
                            abs(x - y)
                            for x, y in zip(base, expq.losses(other, p, 0, middle), strict=True)
                        )
                        assert moved <= sens, (p, counts, j, step)
                        worst = max(worst, moved)
        assert worst == sens  # and the bound is reached


def _tables() -> list[list[int]]:
    rng = np.random.default_rng(33)
    out = [
        [20] * 21,  # many rows per value
        [0] * 10 + [300] + [0] * 10,  # one value
        [260] + [0] * 19 + [740],  # two spikes, p·n inside the first off its middle
        [1] * 21,
        [int(x) for x in rng.integers(0, 40, size=21)],
        [
            int(x)
            for x in np.bincount(np.minimum(rng.exponential(3, 500).astype(int), 20), minlength=21)
        ],
    ]
    return out


@pytest.mark.parametrize("epsilon", [Fraction(1, 8), Fraction(1, 2), Fraction(2)])
def test_the_point_rank_pm_holds_at_its_rate(epsilon: Fraction) -> None:
    """The exact output distribution of the point draw puts at most α on cells whose rank
    interval lies farther than the stated rank ± (κ + t/b) from p·n, for α = 0.05 and 0.001,
    on uniform, one-value, two-spike, sparse, random and skewed tables."""
    for counts, p, alpha in itertools.product(_tables(), PROBS, (0.05, 0.001)):
        params = expq.parameters(epsilon, p, 1, len(counts))
        middle = expq.middle_slack(params, p, alpha)
        stated = expq.point_rank_bound(params, p, alpha, middle)
        probs = _distribution(params, expq.losses(counts, p, 0, middle))
        outside = math.fsum(q for j, q in enumerate(probs) if _rank_distance(counts, j, p) > stated)
        assert outside <= alpha, (counts, p, alpha, outside)


def test_the_middle_rank_finds_the_quantile_more_often() -> None:
    """On 21 values with 20 rows each (p·n inside a cell, away from its edges), the exact
    probability of releasing the cell holding the p-quantile is higher with the middle-rank loss
    than with the interval loss, at the same ε and sensitivity."""
    counts = [20] * 21
    for p in (Fraction(1, 4), Fraction(3, 4)):
        truth = next(j for j in range(21) if _rank_distance(counts, j, p) == 0)
        params = expq.parameters(Fraction(1, 8), p, 1, 21)
        middle = expq.middle_slack(params, p, 0.05)
        old = _distribution(params, expq.losses(counts, p))[truth]
        new = _distribution(params, expq.losses(counts, p, 0, middle))[truth]
        assert new > old + 0.05, (p, old, new)


def test_the_shares_follow_max_p_and_even_out_the_rank_pm() -> None:
    weights = expq.probability_weights((Fraction(1, 4), Fraction(1, 2), Fraction(3, 4)))
    assert weights == (Fraction(3, 8), Fraction(1, 4), Fraction(3, 8))
    assert sum(weights) == 1
    schema = Schema((Column("x", "integer", Fraction(0), Fraction(100)),))
    table = PrivateTable(schema=schema, engine=oracle_engine([{"x": "1"}]), ledger=Ledger(None, 9))
    query = Query(
        "quantiles", "x", quantiles=(Fraction(1, 4), Fraction(1, 2), Fraction(3, 4)),
        method="exponential",
    )  # fmt: skip
    stated = table.accuracy([query], 1)[0]
    assert max(stated.targets) - min(stated.targets) < 1  # every probability: the same rank ±


def test_a_neighbour_gets_the_same_method_and_notes() -> None:
    """The default method for quartiles is decided from public parameters: a table and its
    neighbour (one row fewer) release with the same notes, mechanisms' descriptions and
    rank ±."""
    rng = np.random.default_rng(6)
    rows = [{"x": str(v)} for v in rng.integers(20, 70, size=300)]
    schema = Schema((Column("x", "integer", Fraction(0), Fraction(100)),))
    query = Query("quantiles", "x", quantiles=(Fraction(1, 4), Fraction(1, 2), Fraction(3, 4)))
    out = []
    for data in (rows, rows[1:]):
        table = PrivateTable(
            schema=schema, engine=oracle_engine(data), ledger=Ledger(None, 10),
            rng=np.random.default_rng(1),
        )  # fmt: skip
        result = table.release([query], 1)[0]
        out.append((result.notes, result.mechanisms, [r.rank_accuracy for r in result.rows]))
    assert out[0] == out[1]
    assert any("chosen for its smaller planned" in n for n in out[0][0])
