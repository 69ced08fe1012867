"""The quantile tail bounds' early stops (issue 32 item 3): :func:`chernoff_cdf`,
:func:`_smallest_passing` and :func:`tree_tail_bound` give the same doubles, bit for bit, as
verbatim copies of the code before the change (kept below as the oracle), over a seeded grid
with edge cases and hypothesis draws; and the bisection stops once no halving can change it."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from snapdp import _exact
from snapdp._exact import mpq
from snapdp.data.statistics.math import quantile_tail as qt
from snapdp.data.statistics.math import quantile_tree as qtree
from snapdp.data.statistics.math.quantile_tree import TreeSpec, _weight_stats
from snapdp.data.statistics.math.sum_bound import noise_kind
from snapdp.rescaling import mechanism_parameters


# -- the oracle: verbatim copies of the code before the change (main at a7257a3) --------------
def _old_smallest_passing(fails: Callable[[float], bool], start: float, steps: int) -> float:
    hi = start
    while fails(hi):
        hi *= 2
    lo = 0.0
    for _ in range(steps):
        mid = (lo + hi) / 2
        if fails(mid):
            lo = mid
        else:
            hi = mid
    return hi


def _old_chernoff_cdf(
    spec: TreeSpec,
    scale: object,
    grid: object,
    k: int,
    alpha: float,
    total_nodes: int,
    probability: float | None = None,
) -> float:
    if probability is None:
        w1, s2, wmax = _weight_stats(spec.branching, spec.depth)
        edges = spec.leaves
    else:
        w1, s2, wmax = qt.target_weight_stats(spec.branching, spec.depth, float(probability))
        edges = spec.leaves + 1
    lam = float(_exact.round_up(mpq(scale) * (1 + mpq(1, 1 << 50)), 53)) * k  # λ″·k, up
    rounding = w1 * float(mpq(grid)) * k / 2
    # ln of the allowed tail per edge and side, with the (1 + 2**-51)^T factor
    log_target = math.log(alpha / (2 * edges)) - total_nodes * math.log1p(2.0**-51)

    def exponent(s: float) -> float:
        # min over θ in (0, 1/(λ·w∞)) of −θs + θ²λ²S₂/(1 − θ²λ²w∞²): convex, ternary search
        a, b = 0.0, (1 - 1e-12) / (lam * wmax)

        def f(t: float) -> float:
            return -t * s + t * t * lam * lam * s2 / (1 - t * t * lam * lam * wmax * wmax)

        for _ in range(200):
            m1, m2 = a + (b - a) / 3, b - (b - a) / 3
            if f(m1) <= f(m2):
                b = m2
            else:
                a = m1
        return f((a + b) / 2)  # an admissible θ: a valid (upper) bound on the minimum

    hi = _old_smallest_passing(lambda s: exponent(s) > log_target, lam * wmax, 100)
    return math.nextafter((hi + rounding) * (1 + 1e-9) + w1 * 2.0**-10, math.inf)


# -- the comparisons ---------------------------------------------------------------------------
TREES = [(2, 1), (2, 5), (3, 3), (4, 3), (10, 1), (10, 2), (16, 2)]


def _spec(b: int, depth: int) -> TreeSpec:
    return TreeSpec(Fraction(0), Fraction(1), b, depth, qtree._weight(b, depth))


def _grid_cases() -> list[tuple[int, int, object, object, int, float, float | None]]:
    rng = random.Random(20261127)
    cases: list[tuple[int, int, object, object, int, float, float | None]] = []
    edges_scale = [Fraction(1, 1000), Fraction(1), Fraction(7, 3), 1e6, 2.0**-20, 0.1]
    for b, depth in TREES:
        for scale in edges_scale:
            cases.append((b, depth, scale, Fraction(1, 64), 1, 0.05, None))
        for alpha in (1e-12, 1e-6, 0.5, 0.999):
            cases.append((b, depth, Fraction(3, 2), Fraction(1, 8), 3, alpha, None))
        for p in (0.0, 0.1, 0.5, 0.9, 1.0):
            cases.append((b, depth, Fraction(5), Fraction(1, 4), 1, 0.05, p))
        for _ in range(6):
            scale = Fraction(rng.randint(1, 10**6), rng.randint(1, 10**4))
            grid = Fraction(1, 2 ** rng.randint(0, 30))
            alpha = 10.0 ** rng.uniform(-12, -0.1)
            p = rng.choice([None, None, round(rng.random(), 3)])
            cases.append((b, depth, scale, grid, rng.randint(1, 9), alpha, p))
    return cases


@pytest.mark.parametrize(("b", "depth", "scale", "grid", "k", "alpha", "p"), _grid_cases())
def test_chernoff_cdf_is_bit_identical(
    b: int, depth: int, scale: object, grid: object, k: int, alpha: float, p: float | None
) -> None:
    spec = _spec(b, depth)
    nodes = sum(spec.nodes(lv) for lv in range(1, depth + 1))
    new = qt.chernoff_cdf(spec, scale, grid, k, alpha, nodes, p)
    old = _old_chernoff_cdf(spec, scale, grid, k, alpha, nodes, p)
    assert new == old and math.copysign(1, new) == math.copysign(1, old)


@settings(max_examples=60, deadline=None)
@given(
    tree=st.sampled_from(TREES[:5]),
    scale=st.floats(1e-6, 1e8),
    grid=st.floats(0.0, 1e3),
    k=st.integers(1, 50),
    alpha=st.floats(1e-15, 0.999),
    p=st.none() | st.floats(0.0, 1.0),
)
def test_chernoff_cdf_is_bit_identical_drawn(
    tree: tuple[int, int], scale: float, grid: float, k: int, alpha: float, p: float | None
) -> None:
    spec = _spec(*tree)
    nodes = sum(spec.nodes(lv) for lv in range(1, spec.depth + 1))
    new = qt.chernoff_cdf(spec, scale, grid, k, alpha, nodes, p)
    assert new == _old_chernoff_cdf(spec, scale, grid, k, alpha, nodes, p)


@settings(max_examples=400, deadline=None)
@given(
    threshold=st.floats(0.0, 1e300) | st.sampled_from([0.0, 5e-324, 1e-310, 1.0, 2.0**-1074]),
    start=st.floats(5e-324, 1e300) | st.sampled_from([5e-324, 1e-320, 1.0, 3.0]),
    steps=st.integers(0, 200),
    strict=st.booleans(),
)
def test_smallest_passing_is_bit_identical(
    threshold: float, start: float, steps: int, strict: bool
) -> None:
    def fails(x: float) -> bool:
        return x < threshold if strict else x <= threshold

    assert qt._smallest_passing(fails, start, steps) == _old_smallest_passing(fails, start, steps)


def test_smallest_passing_stops_when_nothing_can_change() -> None:
    """100 halvings of [0, 2) reach one ulp after ~53: the rest evaluate nothing (before the
    change, all 100 did)."""
    calls: list[float] = []

    def fails(x: float) -> bool:
        calls.append(x)
        return x < 1 / 3

    assert qt._smallest_passing(fails, 1.0, 100) == _old_smallest_passing(fails, 1.0, 100)
    calls.clear()
    qt._smallest_passing(fails, 1.0, 100)
    assert len(calls) <= 60


@pytest.mark.parametrize(("b", "depth"), [(2, 4), (10, 2), (4, 3)])
@pytest.mark.parametrize("p", [None, 0.5, 0.9])
@pytest.mark.parametrize("eps", [Fraction(1, 3), Fraction(2)])
def test_tree_tail_bound_is_bit_identical(
    monkeypatch: pytest.MonkeyPatch, b: int, depth: int, p: float | None, eps: Fraction
) -> None:
    spec = _spec(b, depth)
    lo, hi = qtree.node_bounds(spec, eps, 1, 100_000)
    cals = qtree.level_calibrations(spec, eps, 1, lo, hi)
    kinds = tuple(noise_kind(mechanism_parameters(c.epsilon, 1, lo, hi)) for c in cals)
    new = qt.tree_tail_bound.__wrapped__(b, depth, kinds, 0.05, p)
    monkeypatch.setattr(qt, "_smallest_passing", _old_smallest_passing)
    assert new == qt.tree_tail_bound.__wrapped__(b, depth, kinds, 0.05, p)
