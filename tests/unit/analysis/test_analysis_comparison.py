"""Seed 000's distance cases and the utility ratios, against quadrature and closed forms."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from scipy import integrate, stats

from snapdp import ParameterError, SnappingMechanism
from snapdp.analysis.comparison import distance_cases, utility_grid, utility_point


@pytest.mark.parametrize(
    ("setting", "value"),
    [((1.0, 1.0, 0.0, 20.0), 13.3), ((0.4, 2.0, -10.0, 10.0), 9.0), ((1.0, 1.0, 0.0, 20.0), 23.0)],
)
def test_case_probabilities_sum_to_one(setting, value):
    params = SnappingMechanism(*setting, rescale=False).parameters
    interior, clamped = distance_cases(params, value)
    assert interior.probability + clamped.probability == pytest.approx(1.0, abs=1e-14)
    inside = setting[2] <= value <= setting[3]
    assert (interior.case, clamped.case) == ((1, 3) if inside else (2, 4))


def test_clamped_case_expectation_and_tails_against_quadrature():
    """Case 3, upper clamp and lower clamp: E[|x + ρY ∓ B̃|; clamp] by numerical integration."""
    mech = SnappingMechanism(0.8, 1.0, -6.0, 6.0, rescale=False)
    params = mech.parameters
    x = 4.3
    _, clamped = distance_cases(params, x, multiples=(1.0, 3.0))
    lam_p = float(params.scale)
    rho = (1 / 0.8) / lam_p
    cell, b = mech.Lambda, 6.0
    k_plus = math.ceil(b / cell)
    s_plus, s_minus = k_plus * cell - cell / 2 - x, -k_plus * cell + cell / 2 - x
    dens = stats.laplace(scale=lam_p).pdf

    def piece(f, lo, hi, points=()):
        inner = [q for q in points if lo < q < hi]
        return integrate.quad(lambda y: f(y) * dens(y), lo, hi, points=inner or None, limit=200)[0]

    up = piece(lambda y: abs(x + rho * y - b), s_plus, 400)
    down = piece(lambda y: abs(x + rho * y + b), -400, s_minus)
    mass = piece(lambda y: 1.0, s_plus, 400) + piece(lambda y: 1.0, -400, s_minus)
    assert clamped.probability == pytest.approx(mass, rel=1e-9)
    assert clamped.expected_distance == pytest.approx((up + down) / mass, rel=1e-8)
    lam = 1 / 0.8
    for m, p in clamped.tail.items():
        t = m * lam
        jumps = [(sgn * t - x + c) / rho for sgn in (1, -1) for c in (b, -b)]
        tail = piece(lambda y, t=t: float(abs(x + rho * y - b) > t), s_plus, 400, jumps) + piece(
            lambda y, t=t: float(abs(x + rho * y + b) > t), -400, s_minus, jumps
        )
        assert p == pytest.approx(tail / mass, rel=1e-7, abs=1e-12)


def test_seed_bound_fails_exactly_when_a_power_of_two_lies_in_lambda_lambda_prime():
    """Seed 000: dist₁ <= Λ/2 < λ. At ε = 1, λ = 1 but Λ = 2 (λ′ > 1), so Λ/2 = λ: not '<'."""
    at_power = distance_cases(
        SnappingMechanism(1.0, 1.0, -50.0, 50.0, rescale=False).parameters, 0.3
    )[0]
    assert at_power.seed_bound == at_power.seed_claim == 1.0
    inside = distance_cases(
        SnappingMechanism(0.75, 1.0, -50.0, 50.0, rescale=False).parameters, 0.3
    )[0]
    assert inside.seed_bound < inside.seed_claim
    for c in (at_power, inside):
        # the exact supremum is Λ/2 plus the coupling term (1 − ρ)·|x − kΛ|, ~2**-48 relative
        assert c.seed_bound <= c.supremum <= c.seed_bound * (1 + 1e-12)


def test_utility_ratio_far_from_bounds_matches_the_rounding_model():
    """RMSE² = 2λ′² + Λ²/12 for a value spread over a cell: ratio √(1 + Λ²/(24λ²))·λ′/λ."""
    eps = 0.75
    point = utility_point(eps, 1.0, -100.0, 100.0, 0.0, offsets=64)
    mech = SnappingMechanism(eps, 1.0, -100.0, 100.0, rescale=False)
    lam = 1 / eps
    expected = math.sqrt((2 * mech.scale**2 + mech.Lambda**2 / 12) / (2 * lam**2))
    assert point.ratios["rmse"] == pytest.approx(expected, rel=1e-3)
    assert point.ratios_clamped["rmse"] == pytest.approx(expected, rel=1e-3)
    assert point.grid_over_lambda == pytest.approx(mech.Lambda * eps)


def test_grid_order_and_the_power_of_two_jump():
    points = utility_grid([1.0, 1.0 * (1 + 2.0**-40)], [50.0], [0.5], offsets=8)
    assert [p.epsilon for p in points] == [1.0, 1.0 * (1 + 2.0**-40)]
    assert points[0].grid_over_lambda == 2.0
    assert points[1].grid_over_lambda == pytest.approx(1.0)
    assert points[0].ratios["mae"] > points[1].ratios["mae"] * 1.05


def test_bad_inputs():
    params = SnappingMechanism(1.0, 1.0, 0.0, 1.0, rescale=False).parameters
    with pytest.raises(ParameterError, match="value"):
        distance_cases(params, math.inf)
    with pytest.raises(ParameterError, match="positions"):
        utility_grid([1.0], [2.0], [1.5])
    with pytest.raises(ParameterError, match="offsets"):
        utility_point(1.0, 1.0, 0.0, 1.0, 0.5, offsets=0)


@pytest.mark.parametrize("rescale", [False, True])
@pytest.mark.parametrize("value", [3.0, 50.53125, 97.0, 100.5, 103.0])
def test_distance_cases_at_a_sensitivity_of_17_16_against_quadrature(rescale, value):
    """The previous session saw a disagreement with a simulation at Δ = 17/16 (the rescaled
    sensitivity of ε = 1, Δ = 1). Independent oracle: numerical integration of |x + ρY − out|
    over Y's Laplace(λ′) density, cell by cell, in scaled units (x = (v − c)/Δ); no bug found."""
    if rescale:
        params = SnappingMechanism(1, 1, 0, 100).parameters
        assert params.sensitivity == Fraction(17, 16)
    else:
        params = SnappingMechanism(1, Fraction(17, 16), 0, 100, rescale=False).parameters
    interior, clamped = distance_cases(params, value, multiples=(0.5, 2.0))
    sens, lam_p, cell = float(params.sensitivity), float(params.scale), float(params.grid)
    bound, centre = float(params.bound), float(params.center)
    rho = (1 / float(params.epsilon)) / lam_p
    x = (value - centre) / sens
    xt = min(max(x, -bound), bound)
    dens = stats.laplace(scale=lam_p).pdf
    k_plus, k_minus = math.ceil(bound / cell), -math.ceil(bound / cell)
    pieces = [
        (k * cell - cell / 2 - xt, k * cell + cell / 2 - xt, k * cell)
        for k in range(k_minus + 1, k_plus)
    ]
    clamp_pieces = [
        (k_plus * cell - cell / 2 - xt, 400.0, bound),
        (-400.0, k_minus * cell + cell / 2 - xt, -bound),
    ]

    def moments(parts, t):
        mass = dist = tail = 0.0
        for lo, hi, out in parts:
            if hi <= -60 * lam_p or lo >= 60 * lam_p:
                continue
            f = lambda y, out=out: abs(x - out + rho * y)  # noqa: E731
            jumps = [q for q in ((out - x + s * t) / rho for s in (1, -1)) if lo < q < hi]
            mass += integrate.quad(dens, lo, hi, limit=200)[0]
            dist += integrate.quad(lambda y, f=f: f(y) * dens(y), lo, hi, limit=200)[0]
            tail += integrate.quad(
                lambda y, f=f: float(f(y) > t) * dens(y), lo, hi, points=jumps or None, limit=200
            )[0]
        return mass, dist, tail

    lam = 1 / float(params.epsilon)
    for case, parts in ((interior, pieces), (clamped, clamp_pieces)):
        mass, dist, tail = moments(parts, 2.0 * lam)
        assert case.probability == pytest.approx(mass, rel=1e-8, abs=1e-13)
        if mass > 1e-9:
            assert case.expected_distance == pytest.approx(dist / mass * sens, rel=1e-7)
            assert case.tail[2.0] == pytest.approx(tail / mass, rel=1e-6, abs=1e-10)
