"""The quantile tree's branching factor per number of leaves, pinned (docs/data.md, "Quantiles").

:func:`~snapdp.data.statistics.math.quantile_tree.tree_spec` uses the b in 2..16 that minimises
the stated CDF error bound W(b)·depth(b)·ln(T(b)/0.05) for the n = ⌈(upper − lower)/resolution⌉
leaves needed. Each candidate's depth is the smallest d with b**d >= n, so the score of every
candidate, and the choice, is constant between the n where some depth steps up; computing it
takes fifteen weight computations, tens of milliseconds in every fresh process. The table below
is that choice for every n up to :data:`~.quantile_tree.MAX_LEAVES`, as (first n, b) runs;
tests/unit/data/test_tree_branching.py recomputes it by the search for every n, so it is the
search's result, not a second rule. It is public: n comes from declared bounds and resolution.
"""

from __future__ import annotations

import bisect

__all__ = ["BRANCHING_RUNS", "branching_for"]

#: (the first n of a run, the branching chosen from that n until the next run's first n).
BRANCHING_RUNS: tuple[tuple[int, int], ...] = (
    (1, 2), (3, 3), (4, 4), (5, 5), (6, 6), (7, 7), (8, 8), (9, 9), (10, 10), (11, 11),
    (12, 12), (13, 13), (14, 14), (15, 15), (16, 4), (17, 5), (26, 3), (28, 6), (37, 7),
    (50, 8), (65, 9), (82, 10), (101, 11), (122, 5), (126, 12), (145, 13), (170, 6), (217, 15),
    (226, 4), (257, 7), (344, 8), (513, 5), (626, 9), (730, 10), (1001, 4), (1025, 6),
    (1297, 11), (1332, 12), (1729, 7), (2402, 14), (2745, 5), (3126, 15), (3376, 8),
)  # fmt: skip

_FIRSTS = tuple(first for first, _ in BRANCHING_RUNS)


def branching_for(needed: int) -> int:
    """The branching for a tree of ``needed`` leaves (1 <= needed <= MAX_LEAVES)."""
    return BRANCHING_RUNS[bisect.bisect_right(_FIRSTS, needed) - 1][1]
