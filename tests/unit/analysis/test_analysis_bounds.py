"""Bounds from a binding probability γ (DESIGN §3), checked with the exact distribution."""

from __future__ import annotations

import math

import pytest

from snapdp import ParameterError, SnappingMechanism
from snapdp.analysis.bounds import binding_probability_bound, bounds_for_binding_probability
from snapdp.analysis.distribution import output_distribution

CASES = [
    # epsilon, sensitivity, data_lower, data_upper, gamma
    (1.0, 1.0, 0.0, 100.0, 0.05),
    (0.5, 10.0, -50.0, 50.0, 0.001),
    (0.1, 2.0, 3.0, 3.0, 0.2),  # a single possible value
    (3.0, 0.5, 10.0, 12.0, 1e-6),
]


@pytest.mark.parametrize("case", CASES)
def test_binding_probability_at_most_gamma_exactly(case):
    eps, sens, dlo, dhi, gamma = case
    lower, upper = bounds_for_binding_probability(eps, sens, dlo, dhi, gamma)
    assert lower <= dlo and upper >= dhi
    params = SnappingMechanism(eps, sens, lower, upper, rescale=False).parameters
    for t in (0.0, 0.3, 0.5, 1.0):
        v = dlo + t * (dhi - dlo)
        p = float(output_distribution(params, v).binding_probability)
        assert p <= gamma
        assert p <= binding_probability_bound(params, v, v)
    assert binding_probability_bound(params, dlo, dhi) <= gamma


@pytest.mark.parametrize("sens", [1.0, 10.0])
def test_widening_is_the_formula_times_sensitivity(sens):
    """upper − data_upper = Δ·(Λ/2)·(1 + 2·ln(1/γ)) — the ×Δ the prototype forgot."""
    eps, gamma = 0.5, 0.01
    lower, upper = bounds_for_binding_probability(eps, sens, 0.0, 100.0, gamma)
    cell = SnappingMechanism(eps, sens, lower, upper, rescale=False).Lambda
    expected = sens * cell / 2 * (1 + 2 * math.log(1 / gamma))
    assert upper - 100.0 == pytest.approx(expected, rel=1e-12)
    assert 0.0 - lower == pytest.approx(expected, rel=1e-12)


def test_smaller_gamma_means_wider_bounds():
    """The port that wrote 1 − 2·ln(1 − γ) got this backwards."""
    widths = [
        bounds_for_binding_probability(1.0, 1.0, 0.0, 10.0, g)[1] for g in (0.5, 0.1, 0.01, 1e-4)
    ]
    assert widths == sorted(widths) and len(set(widths)) == 4


def test_a_tight_gamma_is_nearly_reached_with_the_one_sided_formula():
    """The formula is not wildly conservative: at a data end the exact probability of binding is
    within two orders of magnitude of γ."""
    lower, upper = bounds_for_binding_probability(0.75, 1.0, 0.0, 10.0, 0.01)
    params = SnappingMechanism(0.75, 1.0, lower, upper, rescale=False).parameters
    p = float(output_distribution(params, 10.0).binding_probability)
    assert 0.01 / 100 <= p <= 0.01


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"gamma": 0.0}, "gamma"),
        ({"gamma": 1.0}, "gamma"),
        ({"data_lower": 5.0, "data_upper": 1.0}, "data_lower"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"data_upper": math.inf}, "data_upper"),
    ],
)
def test_bad_inputs(kwargs, name):
    args = {"epsilon": 1.0, "sensitivity": 1.0, "data_lower": 0.0, "data_upper": 1.0}
    args["gamma"] = 0.1
    args.update(kwargs)
    with pytest.raises(ParameterError, match=name):
        bounds_for_binding_probability(**args)
