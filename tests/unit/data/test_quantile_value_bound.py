"""The tree's value ± (docs/utility.md, "The tree's value ±: one tail per edge" and "The tree's
value ± on an integer column"), against oracles: the exact output distribution of a small tree's
nodes, and brute force over small integer tables."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from snapdp.data import Column, PrivateTable, Query, Schema
from snapdp.data.statistics.math import quantile_tail as qtail
from snapdp.data.statistics.math import quantile_tree as qtree
from snapdp.data.statistics.math.quantile_values import integer_interval
from snapdp.data.statistics.math.sum_bound import noise_kind
from snapdp.mechanism import SnappingMechanism
from snapdp.rescaling import mechanism_parameters
from snapdp.verify.distribution import exact_distribution


def _quantile_set(values: list[int], p: Fraction) -> tuple[int, int]:
    """[x₍⌈pn⌉₎, x₍⌊pn⌋+1₎]: every t with #(x < t) <= p·n <= #(x <= t) (0 < p < 1)."""
    x = sorted(values)
    return x[math.ceil(p * len(x)) - 1], x[math.floor(p * len(x))]


PROBS = tuple(Fraction(a, b) for a, b in ((1, 5), (1, 4), (1, 3), (1, 2), (2, 3), (3, 4)))
EDGES = tuple(Fraction(k, 2) for k in range(9))  # 0, 1/2, …, 4: integer and fractional edges


def test_integer_interval_holds_every_p_quantile_brute_force() -> None:
    """Every table of 1..5 integers in [0, 4], every p, every pair of ends the value interval can
    produce (lo = L or #(x < lo) < p·n; hi = U or #(x < hi) > p·n): every p-quantile lies in
    the narrowed interval, and it is narrower somewhere."""
    lower, upper = Fraction(0), Fraction(4)
    narrower = 0
    for n in range(1, 6):
        for values in itertools.combinations_with_replacement(range(5), n):
            for p in PROBS:
                q_lo, q_hi = _quantile_set(list(values), p)
                for lo, hi in itertools.product(EDGES, EDGES):
                    below_lo = sum(x < lo for x in values)
                    below_hi = sum(x < hi for x in values)
                    if not (lo == lower or below_lo < p * n):
                        continue
                    if not (hi == upper or below_hi > p * n):
                        continue
                    new_lo, new_hi = integer_interval(lo, hi, upper)
                    assert lo <= new_lo and new_hi <= hi
                    assert new_lo <= q_lo and q_hi <= new_hi, (values, p, lo, hi)
                    narrower += (new_lo, new_hi) != (lo, hi)
    assert narrower > 0


def test_integer_interval_keeps_an_interval_that_would_become_empty() -> None:
    assert integer_interval(Fraction(3, 2), Fraction(7, 4), Fraction(4)) == (
        Fraction(3, 2),
        Fraction(7, 4),
    )
    assert integer_interval(Fraction(1), Fraction(4), Fraction(4)) == (1, 4)  # hi = U: kept
    assert integer_interval(Fraction(1, 2), Fraction(3), Fraction(4)) == (1, 2)


def _small_tree(eps: Fraction) -> tuple[qtree.TreeSpec, SnappingMechanism, tuple]:
    """b = 2, depth 1 over [0, 2]: two leaves, both released (the nodes), as a release noises
    them (node bounds, the level's calibration)."""
    spec = qtree.tree_spec(0, 2, 1, branching=2)
    lo, hi = qtree.node_bounds(spec, eps, 1, 1000)
    (cal,) = qtree.level_calibrations(spec, eps, 1, lo, hi)
    mech = SnappingMechanism(cal.epsilon, 1, lo, hi)
    return spec, mech, (noise_kind(mechanism_parameters(cal.epsilon, 1, lo, hi)),)


def _exact_miss(
    dists: tuple, counts: tuple[int, int], p: Fraction, r: float
) -> tuple[float, float]:
    """The exact probability that [e_lo, e_hi] (:func:`value_interval`, read without its slack,
    which only widens it) holds no p-quantile of the table (``counts`` zeros and ones), and the
    largest over the edges of one tail, P(D > r) or P(D < −r), of D the error of C̃ − p·Ñ."""
    values = [0] * counts[0] + [1] * counts[1]
    q_lo, q_hi = _quantile_set(values, p)
    (out0, m0), (out1, m1) = dists
    y0, y1 = out0[:, None], out1[None, :]
    mass = m0[:, None] * m1[None, :]
    pf = float(p)
    g = [-pf * (y0 + y1), y0 - pf * (y0 + y1), (1 - pf) * (y0 + y1)]  # edges 0, 1, 2
    f = [-pf * sum(counts), counts[0] - pf * sum(counts), (1 - pf) * sum(counts)]
    e_lo = np.zeros(mass.shape)  # the largest edge with g < −r, else L = 0
    for e in (1, 2):
        e_lo = np.where(g[e] < -r, e, e_lo)
    e_hi = np.full(mass.shape, 2.0)  # the smallest edge with g > r, else U = 2
    for e in (1, 0):
        e_hi = np.where(g[e] > r, e, e_hi)
    miss = (e_hi < q_lo) | (e_lo > q_hi)
    tails = [
        max(float(mass[(g[e] - f[e]) > r].sum()), float(mass[(g[e] - f[e]) < -r].sum()))
        for e in range(3)
    ]
    return float(mass[miss].sum()), max(tails)


@pytest.mark.parametrize("alpha", [0.05, 0.2])
def test_one_tail_per_edge_against_the_exact_output_distribution(alpha: float) -> None:
    """The one-sided bound rₚ (tree_tail_bound(…, one_sided=True)) against the exact output
    distribution of the two nodes: the value interval misses every p-quantile with probability
    <= α on sparse, even and one-sided tables (pN whole or not), the sum over the edges of one
    tail is <= α (and above α/10 somewhere: on two nodes the Chernoff step is loose, and a miss
    far rarer than α), and the bound is smaller than the two-sided one it replaces."""
    _, mech, kinds = _small_tree(Fraction(1))
    cache: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def dist(count: int) -> tuple[np.ndarray, np.ndarray]:
        if count not in cache:
            d = exact_distribution(mech, count)
            labels = d.sorted_labels()
            cache[count] = (
                np.array([d.outputs[lab] for lab in labels]),
                np.array([float(d.masses[lab]) for lab in labels]),
            )
        return cache[count]

    worst = 0.0  # the largest of 3·(one edge's larger tail): the bound is not vacuous
    for p in (Fraction(1, 4), Fraction(1, 2), Fraction(3, 4)):
        r = qtail.tree_tail_bound(2, 1, kinds, alpha, float(p), one_sided=True)
        assert r < qtail.tree_tail_bound(2, 1, kinds, alpha, float(p))
        for counts in ((0, 4), (4, 0), (2, 2), (1, 3), (3, 1), (0, 1), (5, 5), (12, 0)):
            miss, tail = _exact_miss((dist(counts[0]), dist(counts[1])), counts, p, r)
            assert miss <= alpha, (p, counts, miss)
            assert 3 * tail <= alpha * (1 + 1e-9)  # one tail at each of the 3 edges
            worst = max(worst, 3 * tail)
    assert worst > alpha / 10


def test_the_statement_reads_the_value_interval_from_one_tail_per_edge(tmp_path: Path) -> None:
    """PUMS-like ages [0, 100] at ε = 1: the value interval's bound is below the rank ±'s."""
    path = tmp_path / "ages.csv"
    path.write_text("age\n" + "\n".join(str(20 + i % 60) for i in range(1000)) + "\n")
    schema = Schema((Column("age", "integer", 0, 100),))
    table = PrivateTable(str(path), schema, total_epsilon=1)
    query = Query("quantiles", "age", quantiles=(Fraction(1, 4), Fraction(1, 2)), method="tree")
    (statement,) = table.accuracy([query], 1)
    assert len(statement.value_targets) == 2
    for one, two in zip(statement.value_targets, statement.targets, strict=True):
        assert one < 0.97 * two


def test_the_automatic_choice_compares_the_value_intervals_bound(tmp_path: Path) -> None:
    """A median of ages [0, 100] at ε = 15/2: the tree's value interval (one tail per edge) is
    now the narrower in ranks, so the default takes the tree (it took the exponential mechanism
    when the tree was compared by its two-sided bound). Public parameters only."""
    path = tmp_path / "ages.csv"
    path.write_text("age\n" + "\n".join(str(20 + i % 60) for i in range(100)) + "\n")
    table = PrivateTable(str(path), Schema((Column("age", "integer", 0, 100),)), total_epsilon=10)
    query = Query("quantiles", "age", quantiles=(Fraction(1, 2),))
    for eps, which in ((Fraction(15, 2), "the tree"), (Fraction(7), "the exponential mechanism")):
        (statement,) = table.accuracy([query], eps)
        assert any(n.startswith(f"quantile method: {which},") for n in statement.notes), eps
