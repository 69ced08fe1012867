"""Seed 002's GetAccuracy, corrected: coverage checked against the exact distribution."""

from __future__ import annotations

import math

import pytest

from snapdp import ParameterError, SnappingMechanism
from snapdp.accuracy import accuracy_bound
from snapdp.analysis.distribution import output_distribution
from snapdp.analysis.getaccuracy import data_dependent_accuracy
from snapdp.analysis.metrics import error_quantile, tail_probability

SETTINGS = [(1.0, 1.0, 0.0, 20.0), (0.5, 2.0, -10.0, 30.0), (0.25, 1.0, 0.0, 10.0)]
ALPHAS = [0.6, 0.3, 0.1, 0.05, 0.01, 0.001]


def _positions(lo: float, hi: float) -> list[float]:
    w = hi - lo
    return [lo, lo + 0.01 * w, lo + 0.1 * w, lo + 0.5 * w, hi - 0.03 * w, hi, hi + 0.2 * w]


@pytest.mark.parametrize("setting", SETTINGS)
def test_coverage_is_exact_at_most_alpha(setting):
    params = SnappingMechanism(*setting, rescale=False).parameters
    lo, hi = setting[2], setting[3]
    for v in _positions(lo, hi):
        d = output_distribution(params, v)
        for a in ALPHAS:
            acc = data_dependent_accuracy(params, v, a)
            assert float(tail_probability(d, acc)) <= a, (v, a, acc)
            assert acc >= error_quantile(d, a)  # a valid bound is never below the exact quantile


@pytest.mark.parametrize("setting", SETTINGS)
def test_never_worse_than_the_stated_bound_plus_clamping(setting):
    params = SnappingMechanism(*setting, rescale=False).parameters
    lo, hi = setting[2], setting[3]
    for v in _positions(lo, hi):
        bias = max(lo - v, v - hi, 0.0)
        for a in ALPHAS:
            assert data_dependent_accuracy(params, v, a) <= accuracy_bound(params, a) + bias


def test_equals_the_stated_bound_far_from_the_bounds_and_beats_it_near():
    params = SnappingMechanism(1.0, 1.0, 0.0, 100.0, rescale=False).parameters
    assert data_dependent_accuracy(params, 50.0, 0.05) == accuracy_bound(params, 0.05)
    near = data_dependent_accuracy(params, 99.0, 0.05)
    assert near < accuracy_bound(params, 0.05)


def _seed_getaccuracy_as_written(params, value: float, alpha: float) -> float:
    """Seed 002 §6.2 GetAccuracy transcribed literally (f(D) >= 0, Δ = 1, scaled units)."""
    eps_p = float(params.epsilon_prime)
    lam_p = 1 / eps_p
    B = float(params.bound)
    f = value - float(params.center)

    def F(x: float) -> float:
        return 0.5 * math.exp(x / lam_p) if x < 0 else 1 - 0.5 * math.exp(-x / lam_p)

    def FZ_minus(z: float) -> float:
        return 1 - math.exp(-eps_p * z + 1)

    p_l = F(-B - f + lam_p)
    p_u = 1 - F(B - f - lam_p)
    if p_l >= alpha:
        return B + f
    if FZ_minus(B - f) >= 1 + p_l - alpha:
        return (1 - math.log(alpha - p_l)) / eps_p
    if FZ_minus(B - f) + p_u >= 1 + p_l - alpha:
        return B - f
    return (1 - math.log(alpha - p_l + p_u)) / eps_p


def test_the_seed_as_written_breaks_its_promise_near_the_bound():
    """Seed 002's P_U⁻ is an upper bound on P_U, used as a lower one: near the bound its Case 4
    returns an accuracy exceeded far more often than α (DESIGN §3 lists only the sign typo)."""
    params = SnappingMechanism(1.0, 1.0, -20.0, 20.0, rescale=False).parameters
    value, alpha = 19.5, 0.05
    seed_a = _seed_getaccuracy_as_written(params, value, alpha)
    d = output_distribution(params, value)
    assert float(tail_probability(d, seed_a)) > 3 * alpha
    ours = data_dependent_accuracy(params, value, alpha)
    assert float(tail_probability(d, ours)) <= alpha


def test_bad_inputs():
    params = SnappingMechanism(1.0, 1.0, 0.0, 1.0, rescale=False).parameters
    with pytest.raises(ParameterError, match="alpha"):
        data_dependent_accuracy(params, 0.5, 0.0)
    with pytest.raises(ParameterError, match="value"):
        data_dependent_accuracy(params, math.nan, 0.1)
