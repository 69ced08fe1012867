"""The stop-loss tail of the tree's value ± (docs/utility.md, "The tree's value ±: a stop-loss
tail per edge") against oracles: the exact output distribution of the snapping mechanism
(snapdp.verify.distribution), one node at a time and summed by brute force over small trees."""

from __future__ import annotations

import functools
import itertools
from fractions import Fraction

import numpy as np
import pytest

from snapdp.data.statistics.math import quantile_stages
from snapdp.data.statistics.math import quantile_stoploss as qs
from snapdp.data.statistics.math import quantile_tail as qtail
from snapdp.data.statistics.math import quantile_tree as qtree
from snapdp.data.statistics.math.sum_bound import noise_kind
from snapdp.mechanism import SnappingMechanism
from snapdp.rescaling import mechanism_parameters
from snapdp.verify.distribution import exact_distribution


@functools.cache
def _tree(b: int, eps: Fraction) -> tuple[SnappingMechanism, tuple]:
    """A depth-1 tree of ``b`` leaves over [0, b], one row per unit, as a release noises it."""
    spec = qtree.tree_spec(0, b, 1, branching=b)
    lo, hi = qtree.node_bounds(spec, eps, 1, 1000)
    (cal,) = qtree.level_calibrations(spec, eps, 1, lo, hi)
    mech = SnappingMechanism(cal.epsilon, 1, lo, hi)
    return mech, (noise_kind(mechanism_parameters(cal.epsilon, 1, lo, hi)),)


@functools.cache
def _errors(b: int, eps: Fraction, count: int) -> tuple[np.ndarray, np.ndarray]:
    """One node's exact error distribution (output − count) holding ``count`` rows."""
    d = exact_distribution(_tree(b, eps)[0], count)
    labels = d.sorted_labels()
    out = np.array([float(d.outputs[lab]) - count for lab in labels])
    return out, np.array([float(d.masses[lab]) for lab in labels])


def _stop_loss(z_step: float, reach: float, z: np.ndarray, t: np.ndarray) -> np.ndarray:
    points = -reach + z_step * np.arange(len(z))
    return np.array([(z * np.maximum(points - x, 0.0)).sum() for x in t])


def test_node_envelope_dominates_every_exact_node_error() -> None:
    """Z's stop-loss (plus its excess) is at least E(e − t)₊ and E(−e − t)₊ of the exact error
    distribution of a node at every count 0..16 (offsets spread over the grid), for every t;
    and close to it (Z is no crude shift: within 0.05 at t = 0)."""
    for b, eps in ((2, Fraction(1)), (3, Fraction(1, 2))):
        (kind,) = _tree(b, eps)[1]
        z_step, reach, z, excess = qs.node_envelope(kind)
        t = np.linspace(-3 * kind.scale_hi, 12 * kind.scale_hi, 61)
        bound = _stop_loss(z_step, reach, z, t) + excess
        worst_gap = np.inf
        for count in range(17):
            err, mass = _errors(b, eps, count)
            for sign in (1.0, -1.0):
                exact = np.array([(mass * np.maximum(sign * err - x, 0.0)).sum() for x in t])
                assert (exact <= bound * (1 + 1e-12)).all(), (b, count, sign)
                worst_gap = min(worst_gap, float(bound[20] - exact[20]))
        assert worst_gap < 0.05


def _exact_tail(b: int, eps: Fraction, counts: tuple[int, ...], w: np.ndarray, c: float) -> float:
    """max(P(D > c), P(D < −c)) for D = Σ wᵢeᵢ, by brute force over the nodes' exact errors."""
    values, masses = np.zeros(1), np.ones(1)
    for wi, n in zip(w, counts, strict=True):
        err, mass = _errors(b, eps, n)
        keep = mass > 1e-18
        values = (values[:, None] + wi * err[keep][None, :]).ravel()
        masses = (masses[:, None] * mass[keep][None, :]).ravel()
    return max(float(masses[values > c].sum()), float(masses[values < -c].sum()))


def test_edge_tails_bound_the_exact_tails_of_small_trees() -> None:
    """Each edge's stop-loss tail (what ρ takes when below the Chernoff one) is at least the
    exact one-sided tails of D = C̃(e) − p·Ñ − (C(e) − p·N), brute force over the exact
    outputs of every node, on trees of 2 and 3 leaves, several tables and p, at radii where the
    tails are between 1e-4 and 0.3; and below the Chernoff tail there (it is the tighter)."""
    tighter = 0
    for b, eps in ((2, Fraction(1)), (3, Fraction(1))):
        kinds = _tree(b, eps)[1]
        for p in (0.25, 0.5):
            weights = qtail._edge_weights(b, 1, np.arange(b + 1))
            v = weights - p * weights[-1][None, :]
            tables = qs._edge_tables(b, 1, kinds, p)
            phi, theta, _, _ = qtail._edge_exponents(b, 1, kinds, p)
            for c in (2.0, 4.0, 7.0, 11.0):
                bound = qs._tails_at(tables, c)
                chern = np.exp((phi - theta * c).min(axis=1))
                for counts in ((0,) * b, (3,) * b, tuple(range(1, b + 1)), (5,) + (0,) * (b - 1)):
                    for e in range(b + 1):
                        exact = _exact_tail(b, eps, counts, v[e], c)
                        assert exact <= bound[e], (b, p, c, counts, e, exact, bound[e])
                tighter += int((bound < chern).sum())
    assert tighter > 0


def test_stop_loss_rho_is_below_the_chernoff_rho_and_nondecreasing() -> None:
    """On a PUMS-like tree (ages [0, 100], b = 10, depth 2, ε = 1) ρ with stop-loss tails is
    nondecreasing in the count of edges and at least 10% below the Chernoff ρ at every count;
    on the two-leaf tree it is never above it."""
    spec = qtree.tree_spec(0, 100, 1)
    lo, hi = qtree.node_bounds(spec, Fraction(1), 1, 1000)
    cals = qtree.level_calibrations(spec, Fraction(1), 1, lo, hi)
    kinds = tuple(noise_kind(mechanism_parameters(c.epsilon, 1, lo, hi)) for c in cals)
    for p in (0.25, 0.5):
        ks = (1, 2, 5, 9, 16, 101)
        new = [qs.stop_loss_rho(10, 2, kinds, 0.045, p, k) for k in ks]
        old = [qtail.edge_tail_bound(10, 2, kinds, 0.045, p, k) for k in ks]
        assert all(x <= y for x, y in itertools.pairwise(new))
        assert all(x < 0.9 * y for x, y in zip(new, old, strict=True)), (new, old)
    small = _tree(2, Fraction(1))[1]
    for k in (1, 2, 3):
        assert qs.stop_loss_rho(2, 1, small, 0.05, 0.5, k) <= qtail.edge_tail_bound(
            2, 1, small, 0.05, 0.5, k
        )
    assert qs.stop_loss_rho(4, 6, kinds, 0.05, 0.5, 1) == float("inf")  # over MAX_EDGES


def test_value_radius_is_below_the_one_band_rule_on_a_dense_tree() -> None:
    """Ages [0, 100] (b = 10, depth 2, ε = 1), a released CDF of 1,000 rows spread evenly over
    [20, 80): the release's r̂ (r₁ with the stop-loss bound, S(ρ(κ)) in the band 2·r₁ − ρ(κ))
    is at least 10% below the rule it replaces (ρ by Chernoff tails, at the count of the edges
    within 2·r₁ of p·Ñ, r₁ the statement's), and never above r₂."""
    spec = qtree.tree_spec(0, 100, 1)
    lo, hi = qtree.node_bounds(spec, Fraction(1), 1, 1000)
    cals = qtree.level_calibrations(spec, Fraction(1), 1, lo, hi)
    kinds = tuple(noise_kind(mechanism_parameters(c.epsilon, 1, lo, hi)) for c in cals)
    cdf = np.clip((np.arange(101) - 20) * 1000 / 60, 0, 1000).astype(np.float64)
    alpha = 0.05
    alpha1, alpha2 = quantile_stages.split_alpha(alpha)
    for p in (0.25, 0.5, 0.75):
        first = qtail.tree_tail_bound(10, 2, kinds, alpha1, p)
        second = qtail.tree_tail_bound(10, 2, kinds, alpha2, p, one_sided=True)
        size = quantile_stages.rounded_count(len(quantile_stages.near_edges(cdf, p, first)))
        old = min(second, qtail.edge_tail_bound(10, 2, kinds, alpha2, p, size))
        new = quantile_stages.value_radius(cdf, 10, 2, kinds, alpha, p, first, second)
        assert new < 0.9 * old <= second, (p, new, old)


def test_tails_at_finds_the_smallest_ratio() -> None:
    """The tail read at the three grid points by the tangent's meeting point is, on every edge of
    a PUMS-like tree and at radii 5..40, the smallest E(D − t)₊/(c − t) over all the grid points
    t < c (to 1e-9): the shortcut loses nothing."""
    spec = qtree.tree_spec(0, 100, 1)
    lo, hi = qtree.node_bounds(spec, Fraction(1), 1, 1000)
    cals = qtree.level_calibrations(spec, Fraction(1), 1, lo, hi)
    kinds = tuple(noise_kind(mechanism_parameters(c.epsilon, 1, lo, hi)) for c in cals)
    tables = qs._edge_tables(10, 2, kinds, 0.25)
    points, pi, _ = tables
    for c in np.linspace(5.0, 40.0, 15):
        with np.errstate(divide="ignore", invalid="ignore"):
            full = np.where(points < c, pi / (c - points), np.inf).min(axis=1)
        fast = qs._tails_at(tables, float(c))
        assert np.allclose(fast, np.minimum(full * (1 + 1e-9), 1.0), rtol=1e-9, atol=0)


def test_levels_with_different_kinds_and_equal_weights() -> None:
    """A unit of up to 12 rows on a tree of b = 5, depth 2 over [0, 25], p = 1/4: the two
    levels' noise kinds differ (each level's ε is split over min(12, b**l) nodes), and some
    edges have a level-1 and a level-2 group of equal |w| and count. ρ is still computed (it raised
    TypeError ordering the groups, after the release's noise was drawn), nondecreasing in the
    count of edges and never above the Chernoff ρ; r₁ too."""
    spec = qtree.tree_spec(0, 25, 1)
    assert (spec.branching, spec.depth) == (5, 2)
    lo, hi = qtree.node_bounds(spec, Fraction(1), 12, 1000)
    cals = qtree.level_calibrations(spec, Fraction(1), 12, lo, hi)
    kinds = tuple(noise_kind(mechanism_parameters(c.epsilon, 12, lo, hi)) for c in cals)
    assert kinds[0] != kinds[1]
    edge, level, value, count, _ = qtail._tree_groups(5, 2, 0.25)
    rows = zip(edge, value, count, level, strict=True)
    pairs = {(int(e), float(v), int(c), int(lv)) for e, v, c, lv in rows}
    assert any((e, v, c, 1 - lv) in pairs for e, v, c, lv in pairs)  # the case that raised
    ks = (1, 2, 5, 26)
    rho = [qs.stop_loss_rho(5, 2, kinds, 0.045, 0.25, k) for k in ks]
    assert all(x <= y for x, y in itertools.pairwise(rho))
    assert all(
        r <= qtail.edge_tail_bound(5, 2, kinds, 0.045, 0.25, k)
        for r, k in zip(rho, ks, strict=True)
    )
    first = qtail.tree_tail_bound(5, 2, kinds, 0.005, 0.25)
    assert 0 < quantile_stages.first_radius(5, 2, kinds, 0.05, 0.25, first) <= first


def test_the_cached_tables_are_read_only() -> None:
    """The envelope, each edge's table and the tree's tables are cached for the process: none
    can be written into by a caller (a write would change every later release's ±)."""
    kinds = _tree(2, Fraction(1))[1]
    tables = qs._edge_tables(2, 1, kinds, 0.5)
    _step, _reach, z, _excess = qs.node_envelope(kinds[0])
    groups = ((0.5, 2, kinds[0]),)
    _step, points, bound = qs.edge_stop_loss(groups)
    for array in (*tables, z, points, bound):
        assert not array.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 0.0


def test_the_chernoff_tables_are_read_only_too() -> None:
    """quantile_tail's cached weight groups and Chernoff exponents, like the stop-loss tables:
    a caller writing into one would change every later bound in the process."""
    from snapdp.data.statistics.math import quantile_tail as qt

    kinds = _tree(2, Fraction(1))[1]
    phi, theta, _top, _rounding = qt._edge_exponents(2, 1, kinds, 0.5)
    for array in (*qt._tree_groups(2, 1, 0.5), phi, theta):
        assert not array.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 0
