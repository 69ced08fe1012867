"""The tree's value ± (docs/utility.md, "The tree's value ±: one tail per edge" and "The tree's
value ± on an integer column"), against oracles: the exact output distribution of a small tree's
nodes, and brute force over small integer tables."""

from __future__ import annotations

import functools
import itertools
import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from snapdp.data import Column, PrivateTable, Query, Schema
from snapdp.data.statistics import accuracy_of, calibrate, compile_query
from snapdp.data.statistics.kinds import quantiles as quantile_kind
from snapdp.data.statistics.kinds.quantiles import TREE
from snapdp.data.statistics.math import quantile_stages, quantile_stoploss
from snapdp.data.statistics.math import quantile_tail as qtail
from snapdp.data.statistics.math import quantile_tree as qtree
from snapdp.data.statistics.math.quantile_values import integer_interval, value_pm
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


def test_integer_interval_keeps_the_upper_quantile_when_the_lower_end_ties() -> None:
    """The event G(r) of docs/utility.md gives #(x < lo) <= p·n at e_lo (not <): brute force over
    every table of 1..5 integers in [0, 4], every p and every pair of ends with lo = L or
    #(x < lo) <= p·n, hi = U or #(x < hi) > p·n: q = x₍⌊pn⌋+1₎ lies in [lo, hi] and in the
    narrowed interval."""
    lower, upper = Fraction(0), Fraction(4)
    ties = 0
    for n in range(1, 6):
        for values in itertools.combinations_with_replacement(range(5), n):
            for p in PROBS:
                q = sorted(values)[math.floor(p * n)]
                for lo, hi in itertools.product(EDGES, EDGES):
                    below_lo = sum(x < lo for x in values)
                    if not (lo == lower or below_lo <= p * n):
                        continue
                    if not (hi == upper or sum(x < hi for x in values) > p * n):
                        continue
                    assert lo <= q <= hi
                    new_lo, new_hi = integer_interval(lo, hi, upper)
                    assert new_lo <= q <= new_hi, (values, p, lo, hi)
                    ties += lo != lower and below_lo == p * n
    assert ties > 0


def test_integer_interval_comes_back_inverted_when_it_holds_no_integer() -> None:
    """No p-quantile of integers lies in [3/2, 7/4], nor (by the docstring's argument) in
    [5/2, 3) below the upper bound: the claim has failed, and the caller states the bounds."""
    lo, hi = integer_interval(Fraction(3, 2), Fraction(7, 4), Fraction(4))
    assert lo > hi
    lo, hi = integer_interval(Fraction(5, 2), Fraction(3), Fraction(4))
    assert lo > hi
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


@functools.cache
def _node_outputs(count: int) -> tuple[np.ndarray, np.ndarray]:
    """The exact output distribution of one node of :func:`_small_tree` (ε = 1) holding
    ``count`` rows: its outputs and their masses, in the order of the outputs."""
    d = exact_distribution(_small_tree(Fraction(1))[1], count)
    labels = d.sorted_labels()
    return (
        np.array([d.outputs[lab] for lab in labels]),
        np.array([float(d.masses[lab]) for lab in labels]),
    )


def _joint(dists: tuple, counts: tuple[int, int], p: Fraction) -> tuple[Any, Any, Any, list[Any]]:
    """For a table of ``counts`` zeros and ones: its p-quantile set [q₋, q₊], the two nodes'
    joint output masses, and g = C̃ − p·Ñ at the edges 0, 1, 2 for every pair of outputs."""
    q_lo, q_hi = _quantile_set([0] * counts[0] + [1] * counts[1], p)
    (out0, m0), (out1, m1) = dists
    y0, y1 = out0[:, None], out1[None, :]
    pf = float(p)
    g = [-pf * (y0 + y1), y0 - pf * (y0 + y1), (1 - pf) * (y0 + y1)]
    return q_lo, q_hi, m0[:, None] * m1[None, :], g


def _ends(g: list[Any], r: Any) -> tuple[Any, Any]:
    """e_lo, the largest edge with g < −r (else L = 0), and e_hi, the smallest with g > r (else
    U = 2), for every pair of outputs (``r`` a number or one per pair)."""
    e_lo = np.zeros(np.shape(g[1]))
    for e in (1, 2):
        e_lo = np.where(g[e] < -r, e, e_lo)
    e_hi = np.full(np.shape(g[1]), 2.0)
    for e in (1, 0):
        e_hi = np.where(g[e] > r, e, e_hi)
    return e_lo, e_hi


def _exact_miss(
    dists: tuple, counts: tuple[int, int], p: Fraction, r: float
) -> tuple[float, float]:
    """The exact probability that [e_lo, e_hi] (:func:`value_interval`, read without its slack,
    which only widens it) holds no p-quantile of the table (``counts`` zeros and ones), and the
    largest over the edges of one tail, P(D > r) or P(D < −r), of D the error of C̃ − p·Ñ."""
    q_lo, q_hi, mass, g = _joint(dists, counts, p)
    pf = float(p)
    f = [-pf * sum(counts), counts[0] - pf * sum(counts), (1 - pf) * sum(counts)]
    e_lo, e_hi = _ends(g, r)
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
    _, _, kinds = _small_tree(Fraction(1))
    dist = _node_outputs

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
    """PUMS-like ages [0, 100] at ε = 1: one tail per edge over all the edges at α is below the
    rank ±'s two-sided bound; the statement carries the two stages' bounds: r₁ two-sided at
    α₁ < α (above the rank ±'s), r₂ one tail per edge at α₂ < α (above the one-stage bound)."""
    path = tmp_path / "ages.csv"
    path.write_text("age\n" + "\n".join(str(20 + i % 60) for i in range(1000)) + "\n")
    schema = Schema((Column("age", "integer", 0, 100),))
    table = PrivateTable(str(path), schema, total_epsilon=1)
    query = Query("quantiles", "age", quantiles=(Fraction(1, 4), Fraction(1, 2)), method="tree")
    (statement,) = table.accuracy([query], 1)
    assert len(statement.value_targets) == len(statement.value_first) == 2
    assert statement.alpha is not None
    bounds = (statement.targets, statement.value_first, statement.value_targets)
    for p, two, first, second in zip(query.quantiles, *bounds, strict=True):
        one = qtail.tree_tail_bound(10, 2, statement.kinds, statement.alpha, float(p), True)
        assert one < 0.97 * two < first
        assert one < second


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


# --- the two stages (docs/utility.md, "The tree's value ±: two stages") ---------------------


def _oracle_radius(g: list[Any], first: float, rho: dict[int, float], second: float) -> Any:
    """r̂ for every pair of outputs, by the rule of docs/utility.md ("two stages"): ρ(κ) for the
    smallest κ in 1, 2, 3 with max(#{e : |g(e)| < 2·r₁ − ρ(κ)}, 1) <= κ, or ρ(κ) = r₂."""
    r = np.full(np.shape(g[1]), rho[3])
    for k in (2, 1):  # the smallest κ that holds wins
        size = sum((np.abs(ge) < 2 * first - rho[k]).astype(int) for ge in g)
        r = np.where((np.maximum(size, 1) <= k) | (rho[k] >= second), rho[k], r)
    return r


def _two_stage_miss(
    dists: tuple, counts: tuple[int, int], p: Fraction, first: float, rho: dict[int, float],
    second: float,
) -> float:  # fmt: skip
    """The exact probability that the two-stage interval holds no p-quantile of the table
    (r̂ by :func:`_oracle_radius`, e_lo and e_hi read with it; a miss is e_hi < q₋, e_lo > q₊
    or an empty interval)."""
    q_lo, q_hi, mass, g = _joint(dists, counts, p)
    e_lo, e_hi = _ends(g, _oracle_radius(g, first, rho, second))
    miss = (e_hi < q_lo) | (e_lo > q_hi) | (e_lo > e_hi)
    return float(mass[miss].sum())


@pytest.mark.parametrize("alpha", [0.05, 0.2])
def test_two_stage_interval_against_the_exact_output_distribution(alpha: float) -> None:
    """The two-stage interval (r₁ the smaller of the two-sided Chernoff and stop-loss bounds at
    α₁; r̂ = ρ(κ) at α₂ for the smallest κ with |S(ρ(κ))| <= κ, S(r) the edges the released CDF
    shows within 2·r₁ − r of p·Ñ; ρ the smaller of the Chernoff and the stop-loss one) against
    the exact output distribution of the two nodes: it misses every p-quantile with probability
    <= α on sparse, even and one-sided tables (pN whole or not, an empty interval counted as a
    miss); the radius the release computes (quantile_stages.value_radius) is the oracle's on a
    spread of released outputs."""
    _, _, kinds = _small_tree(Fraction(1))
    dist = _node_outputs
    alpha1, alpha2 = quantile_stages.split_alpha(alpha)
    assert alpha1 + alpha2 <= alpha
    for p in (Fraction(1, 4), Fraction(1, 2), Fraction(3, 4)):
        pf = float(p)
        chernoff_first = qtail.tree_tail_bound(2, 1, kinds, alpha1, pf)
        first = min(chernoff_first, quantile_stoploss.stop_loss_rho(2, 1, kinds, alpha1 / 2, pf, 3))
        assert first == quantile_stages.first_radius(2, 1, kinds, alpha, pf, chernoff_first)
        second = qtail.tree_tail_bound(2, 1, kinds, alpha2, pf, one_sided=True)
        rho = {
            k: min(
                second,
                qtail.edge_tail_bound(2, 1, kinds, alpha2, pf, k),
                quantile_stoploss.stop_loss_rho(2, 1, kinds, alpha2, pf, k),
            )
            for k in (1, 2, 3)
        }
        assert rho[1] < rho[3] <= second
        for counts in ((0, 4), (4, 0), (2, 2), (1, 3), (3, 1), (0, 1), (5, 5), (12, 0)):
            miss = _two_stage_miss(
                (dist(counts[0]), dist(counts[1])), counts, p, first, rho, second
            )
            assert miss <= alpha, (p, counts, miss)
        out0 = dist(2)[0]
        for y0, y1 in itertools.product(out0[:: max(1, len(out0) // 15)], repeat=2):
            cdf = np.array([0.0, y0, y0 + y1])
            g = list(cdf - pf * (y0 + y1))
            want = float(_oracle_radius(g, first, rho, second))
            got = quantile_stages.value_radius(cdf, 2, 1, kinds, alpha, pf, chernoff_first, second)
            assert got == want


def test_edge_tail_bound_is_nondecreasing_and_ends_below_the_union_bound() -> None:
    """ρ(k) (the bound over any k edges at α) never decreases with k, equals the union over all
    the edges at k = #edges up to the bisection's last step, and is well below it at one edge
    (a b = 10, depth 2 tree: 101 edges; and the two-leaf tree: 3). The count ρ is taken at
    (|S| rounded up) is |S| to 16, then at most 10% more, nondecreasing, with few values."""
    _, _, small = _small_tree(Fraction(1))
    spec = qtree.tree_spec(0, 100, 1)
    lo, hi = qtree.node_bounds(spec, Fraction(1), 1, 1000)
    cals = qtree.level_calibrations(spec, Fraction(1), 1, lo, hi)
    kinds = tuple(noise_kind(mechanism_parameters(c.epsilon, 1, lo, hi)) for c in cals)
    for b, depth, ks in ((2, 1, small), (spec.branching, spec.depth, kinds)):
        edges = b**depth + 1
        for p in (0.25, 0.5):
            rho = [qtail.edge_tail_bound(b, depth, ks, 0.05, p, k) for k in range(1, edges + 1)]
            assert all(x <= y for x, y in itertools.pairwise(rho))
            union = qtail.tree_tail_bound(b, depth, ks, 0.05, p, one_sided=True)
            assert abs(rho[-1] - union) <= 1e-6 * union
            assert qtail.edge_tail_bound(b, depth, ks, 0.05, p, 10 * edges) == rho[-1]
            if edges > 3:
                assert rho[0] < 0.8 * union
    counts = [quantile_stages.rounded_count(k) for k in range(5000)]
    assert counts[1:17] == list(range(1, 17))
    assert all(max(k, 1) <= c <= max(k, 1) * 1.1 for k, c in enumerate(counts))
    assert all(x <= y for x, y in itertools.pairwise(counts)) and len(set(counts)) < 100


def test_near_edges_against_exact_rationals() -> None:
    """S (quantile_stages.near_edges) against |g| < 2·r₁ computed in rationals from the same
    doubles: it holds every edge the exact rule holds (what the proof needs) and none beyond
    2·r₁ plus the doubles' slack; the exact boundary |g| = 2·r₁ is not in the exact S."""
    rng = np.random.default_rng(33)
    first = 3.7
    r1 = Fraction(first)
    for trial in range(300):
        n = int(rng.integers(1, 12))
        steps = rng.normal(2.0, 3.0, n)
        if trial % 3 == 0:
            steps = np.round(steps)
        cdf = np.concatenate(([0.0], np.cumsum(steps)))
        p = float(rng.choice([0.25, 0.5, 0.75]))
        got = set(quantile_stages.near_edges(cdf, p, first).tolist())
        total = Fraction(cdf[-1])
        g = [Fraction(c) - Fraction(p) * total for c in cdf]
        exact = {e for e, ge in enumerate(g) if abs(ge) < 2 * r1}
        wide = {e for e, ge in enumerate(g) if abs(ge) < 2 * r1 * (1 + Fraction(1, 10**6)) + 1}
        assert exact <= got <= wide, (cdf, p)
    cdf = np.array([0.0, 2 * first, 4 * first])  # p = 1/2: g = −2r₁, 0, 2r₁ exactly
    assert set(quantile_stages.near_edges(cdf, 0.5, first).tolist()) >= {1}
    assert {e for e, ge in enumerate([-2 * r1, 0, 2 * r1]) if abs(ge) < 2 * r1} == {1}


def test_dense_table_states_a_smaller_value_pm() -> None:
    """10,000 values spread evenly over [20, 80) of a decimal column [0, 100] (1,024 leaves), a
    tree median and quartiles at ε = 1, released CDF = the true one: the two-stage interval
    (few edges lie within 2·r₁ of p·Ñ) states a strictly smaller ± than the interval read with
    the one-stage bound over all the edges at α (what rows stated before this change)."""
    schema = Schema((Column("x", "decimal", 0, 100),))
    probs = (Fraction(1, 4), Fraction(1, 2), Fraction(3, 4))
    query = Query("quantiles", "x", quantiles=probs, method="tree")
    compiled = compile_query(query, schema, Fraction(1))
    noises = calibrate(compiled)
    statement = accuracy_of(compiled, noises, 0.95, 0.05)
    tree = compiled.tree
    leaves = [0] * tree.leaves
    for i in range(10_000):
        leaves[int((20 + Fraction(60 * i, 10_000) - tree.lower) / tree.leaf_width)] += 1
    levels = qtree.level_counts(leaves, tree)
    noisy = {f"level{lv}": np.array(c, dtype=float) for lv, c in enumerate(levels, start=1)}
    rows = TREE.rows(compiled, statement, noisy, 0, ())
    one_stage = quantile_kind._bounds_at(compiled, noises, 0.05, probs, 1)[1]
    ls_cdf = qtree.least_squares_cdf(list(noisy.values()), tree)
    before = []
    for row, p, r in zip(rows, probs, one_stage, strict=True):
        lo, hi = qtree.value_interval(ls_cdf, tree, p, r)
        before.append(value_pm(row.value, lo, hi))
        assert row.accuracy <= before[-1]
    assert sum(row.accuracy for row in rows) < 0.95 * sum(before)
