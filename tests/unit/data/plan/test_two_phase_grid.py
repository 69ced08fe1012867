"""Phase two's ε stays on the public grid even when the ε first found misses its target by more
than a few grid steps (review: it fell back to an off-grid search, whose certificates no run
shares and none ship)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from snapdp.data.planner.two_phase import _on_grid, grid_up, grid_values


@pytest.mark.parametrize("needed", [Fraction(7, 3), Fraction(41, 7), Fraction(1234, 100)])
def test_a_far_miss_is_bisected_on_the_grid(needed: Fraction) -> None:
    def at(eps: Fraction) -> float:  # ± falls as ε grows; the target needs ε ≥ ``needed``
        return 1.0 if eps >= needed else 2.0

    found = Fraction(1, 10)  # far below: four grid steps up still miss
    limit = Fraction(50)
    eps = _on_grid(at, Fraction(1), found, limit)
    assert eps == grid_up(needed)
    assert eps in grid_values(found, limit)


def test_the_limit_is_taken_when_only_it_meets_and_none_when_it_misses() -> None:
    limit = Fraction(37, 3)  # not a grid value

    def meets_at_limit(eps: Fraction) -> float:
        return 1.0 if eps >= limit else 2.0

    assert _on_grid(meets_at_limit, Fraction(1), Fraction(1, 10), limit) == limit
    assert _on_grid(lambda e: 2.0, Fraction(1), Fraction(1, 10), limit) is None
