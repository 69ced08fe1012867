"""The exact output distribution (DESIGN §5) against independent oracles."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from scipy import stats

from snapdp import ParameterError, SnappingMechanism
from snapdp._exact import mpq
from snapdp.analysis.distribution import output_distribution

SETTINGS = [
    # (epsilon, sensitivity, lower, upper, value)
    (1.0, 1.0, 0.0, 20.0, 13.3),
    (0.5, 1.0, 0.0, 20.0, 17.3),  # 1/ε a power of two: Λ = 2λ
    (0.3, 2.5, -40.0, 15.0, -39.0),
    (2.0, 1.0, 0.0, 1.0, 0.9),  # bounds narrower than the grid
    (1.0, 1.0, 0.0, 1e6, 1234.5),  # wide bounds: truncated window
    (0.1, 1.0, 0.0, 100.0, 250.0),  # value outside: clamped first
    (1.0, 3.0, 0.0, 30.0, 30.0),  # value on the bound
]


def _dist(eps, sens, lo, hi, v, **kw):
    return output_distribution(
        SnappingMechanism(eps, sens, lo, hi, rescale=False).parameters, v, **kw
    )


@pytest.mark.parametrize("setting", SETTINGS)
def test_sums_to_one_within_stated_error(setting):
    d = _dist(*setting)
    total = d.total() + d.truncated_mass
    assert abs(float(total - 1)) <= float(d.rounding_error)
    assert float(d.truncated_mass) < 2.0**-128


@pytest.mark.parametrize("setting", SETTINGS)
def test_support_is_the_grid_and_the_bounds(setting):
    eps, sens, lo, hi, v = setting
    mech = SnappingMechanism(eps, sens, lo, hi, rescale=False)
    d = output_distribution(mech.parameters, v)
    assert list(d.outputs) == sorted(set(d.outputs))
    center = Fraction(lo) / 2 + Fraction(hi) / 2
    cell = Fraction(mech.grid_spacing)
    for o in d.outputs:
        assert lo <= o <= hi
        if o not in (lo, hi):
            assert ((Fraction(o) - center) / cell).denominator == 1


@pytest.mark.parametrize("setting", SETTINGS[:4] + SETTINGS[5:])
def test_probabilities_match_scipy_laplace(setting):
    """Independent oracle: each cell's mass from scipy's Laplace CDF in double precision."""
    eps, sens, lo, hi, v = setting
    mech = SnappingMechanism(eps, sens, lo, hi, rescale=False)
    d = output_distribution(mech.parameters, v)
    lam = float(mech.parameters.scale)
    xt = float(d.x_tilde)
    law = stats.laplace(loc=xt, scale=lam)
    cell = mech.Lambda
    c = lo / 2 + hi / 2
    for o, p in zip(d.outputs, d.probabilities, strict=True):
        k_grid = (o - c) / sens / cell
        if o == hi:
            expected = law.sf(math.ceil(mech.bound / cell - 1e-12) * cell - cell / 2)
        elif o == lo:
            expected = law.cdf(-math.ceil(mech.bound / cell - 1e-12) * cell + cell / 2)
        else:
            expected = law.cdf(k_grid * cell + cell / 2) - law.cdf(k_grid * cell - cell / 2)
        assert float(p) == pytest.approx(expected, rel=1e-9, abs=1e-15)


def test_higher_precision_agrees():
    params = SnappingMechanism(0.7, 1, -5, 5, rescale=False).parameters
    a = output_distribution(params, 1.25, precision=160)
    b = output_distribution(params, 1.25, precision=400)
    assert a.outputs == b.outputs
    for p, q in zip(a.probabilities, b.probabilities, strict=True):
        assert abs(float((p - q) / q)) < 2.0**-150


def test_small_tail_bits_truncate_and_account():
    params = SnappingMechanism(1.0, 1, 0, 1e4, rescale=False).parameters
    d = output_distribution(params, 5000, tail_bits=8)
    assert 0 < float(d.truncated_mass) < 2.0**-8
    assert abs(float(d.total() + d.truncated_mass - 1)) <= float(d.rounding_error)
    full = output_distribution(params, 5000)
    assert len(full.outputs) > len(d.outputs)


def test_binding_mass_on_the_bound_closed_form():
    """x̃ = B̃ = k₊Λ: P(upper) = 1 − ½·exp(−Λ/(2λ′)); P(lower) = ½·exp(−(2B̃ − Λ/2)/λ′)."""
    mech = SnappingMechanism(1.0, 1, -8, 8, rescale=False)
    params = mech.parameters
    d = output_distribution(params, 8)
    lam, cell = float(params.scale), mech.Lambda
    assert float(d.upper_mass) == pytest.approx(1 - 0.5 * math.exp(-cell / 2 / lam), rel=1e-14)
    assert float(d.lower_mass) == pytest.approx(0.5 * math.exp(-(16 - cell / 2) / lam), rel=1e-12)
    assert d.value == mpq(8)


@pytest.mark.parametrize("bad", [math.nan, math.inf, "3", None])
def test_bad_value(bad):
    params = SnappingMechanism(1.0, 1, 0, 10, rescale=False).parameters
    with pytest.raises(ParameterError, match="value"):
        output_distribution(params, bad)
