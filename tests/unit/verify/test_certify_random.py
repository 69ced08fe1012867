"""The library's (ε, δ) claim holds, exactly, on random parameters and neighbouring pairs."""

from __future__ import annotations

import math
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from snapdp.verify import GridPoint, certify


def neighbour_of(value: float, step: float, sensitivity: float) -> float:
    """value + step·Δ in doubles, moved toward value until |x − x′| <= Δ holds exactly.

    (Without this, the rounding of value + Δ can put the pair more than Δ apart, and the exact
    loss then rightly exceeds ε by ~ulp(value)/Δ·ε.)
    """
    neighbour = value + step * sensitivity
    while abs(Fraction(neighbour) - Fraction(value)) > Fraction(sensitivity):
        neighbour = math.nextafter(neighbour, value)
    return neighbour


@settings(max_examples=25, deadline=None, derandomize=True)
@given(
    epsilon=st.floats(0.01, 20.0),
    sensitivity=st.floats(0.1, 10.0),
    lower=st.floats(-1000.0, 1000.0),
    width=st.floats(0.5, 2000.0),
    position=st.floats(0.0, 1.0),
    step=st.floats(-1.0, 1.0),
)
def test_random_points_pass(
    epsilon: float, sensitivity: float, lower: float, width: float, position: float, step: float
) -> None:
    upper = lower + width
    value = lower + position * width
    point = GridPoint(
        epsilon, lower, upper, value, neighbour_of(value, step, sensitivity), sensitivity
    )
    cert = certify(point)
    assert cert.passed
    if cert.loss.parameters.delta == 0:
        assert cert.pure and cert.loss.loss <= epsilon
