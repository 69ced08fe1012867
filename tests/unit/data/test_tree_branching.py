"""The quantile tree's branching is pinned per number of leaves (src/snapdp/data/statistics/math/
tree_branching.py): the table is the search's choice for every n, and tree_spec builds the tree
the search would."""

from __future__ import annotations

import math
from fractions import Fraction

from snapdp.data.statistics.math import quantile_tree
from snapdp.data.statistics.math.tree_branching import BRANCHING_RUNS, branching_for


def test_the_pinned_branching_is_the_searched_one_for_every_number_of_leaves() -> None:
    for needed in range(1, quantile_tree.MAX_LEAVES + 1):
        assert branching_for(needed) == quantile_tree.searched_branching(needed), needed


def test_the_runs_are_increasing_and_start_at_one() -> None:
    firsts = [first for first, _ in BRANCHING_RUNS]
    assert firsts[0] == 1 and firsts == sorted(set(firsts))
    assert all(b in quantile_tree.BRANCHING_CANDIDATES for _, b in BRANCHING_RUNS)


def test_tree_spec_builds_the_searched_tree() -> None:
    for lower, upper, resolution in [
        (0, 100, 1),
        (-50, 50, Fraction(100, 1024)),
        (0, 1, Fraction(1, 4096)),
    ]:
        spec = quantile_tree.tree_spec(lower, upper, resolution)
        b = quantile_tree.searched_branching(_needed(lower, upper, resolution))
        assert spec == quantile_tree.tree_spec(lower, upper, resolution, branching=b)


def _needed(lower: int, upper: int, resolution: int | Fraction) -> int:
    return max(1, math.ceil((Fraction(upper) - Fraction(lower)) / Fraction(resolution)))
