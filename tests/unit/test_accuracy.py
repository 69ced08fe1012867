"""The worst-case accuracy bound against brute force over the input's position (DESIGN §4, §5)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from tests.oracles import exact_distribution

from snapdp import SnappingMechanism

OFFSETS = 400


def worst_tail(m: SnappingMechanism, a: float) -> float:
    """max over inputs x in one grid cell (mid-range, clamps far away) of P(|output − x| > a)."""
    step = Fraction(m.Lambda) * Fraction(m.sensitivity)
    center = (Fraction(m.lower) + Fraction(m.upper)) / 2
    worst = 0.0
    for i in range(OFFSETS + 1):
        x = center + step * Fraction(i, OFFSETS) - step / 2
        dist = exact_distribution(m, x)
        tail = 0.0
        for key, prob in dist.items():
            out = (
                Fraction(m.upper)
                if key == "hi"
                else Fraction(m.lower)
                if key == "lo"
                else center + key * step
            )
            if abs(out - x) > Fraction(a):
                tail += prob
        worst = max(worst, tail)
    return worst


@pytest.mark.parametrize(
    ("eps", "sens", "alpha"),
    [(1.0, 1.0, 0.1), (1.0, 1.0, 0.3), (0.5, 2.0, 0.05), (0.7, 1.0, 0.2), (3.0, 0.5, 0.01)],
)
def test_bound_holds_at_every_offset_and_is_tight(eps: float, sens: float, alpha: float) -> None:
    half_width = 40 * sens / eps  # clamps 40λ away: their mass is negligible at these α
    m = SnappingMechanism(eps, sens, -half_width, half_width, rescale=False)
    a = m.accuracy(alpha)
    assert worst_tail(m, a) <= alpha * (1 + 1e-9)
    # just below, some position exceeds α (up to the offsets' resolution): the bound is tight
    assert worst_tail(m, a * (1 - 1e-3)) > alpha * 0.98
