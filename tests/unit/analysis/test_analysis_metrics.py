"""Error metrics: exact sums against brute force, Laplace against closed forms and quadrature."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from snapdp import ParameterError, SnappingMechanism
from snapdp.analysis.distribution import output_distribution
from snapdp.analysis.metrics import (
    clamped_laplace_metrics,
    error_metrics,
    error_quantile,
    laplace_metrics,
    laplace_quantile,
    laplace_tail,
    mixture_metrics,
    tail_probability,
)

CASES = [
    (1.0, 1.0, 0.0, 20.0, 13.3),
    (0.5, 2.0, -10.0, 30.0, 29.0),
    (0.2, 1.0, 0.0, 50.0, 70.0),
]


def _dist(eps, sens, lo, hi, v):
    return output_distribution(SnappingMechanism(eps, sens, lo, hi, rescale=False).parameters, v)


@pytest.mark.parametrize("case", CASES)
def test_moments_against_brute_force(case):
    d = _dist(*case)
    err = np.array([float(e) for e in d.errors()])
    p = np.array([float(q) for q in d.probabilities])
    m = error_metrics(d)
    assert m.bias == pytest.approx(float(np.sum(p * err)), rel=1e-12, abs=1e-15)
    assert m.mae == pytest.approx(float(np.sum(p * np.abs(err))), rel=1e-12)
    assert m.rmse == pytest.approx(math.sqrt(float(np.sum(p * err**2))), rel=1e-12)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("alpha", [0.5, 0.05, 0.01, 0.001])
def test_quantile_is_the_smallest_valid_error(case, alpha):
    d = _dist(*case)
    q = error_quantile(d, alpha)
    assert float(tail_probability(d, q)) <= alpha
    smaller = sorted({abs(float(e)) for e in d.errors()} | {0.0})
    below = [a for a in smaller if a < q]
    if below:
        assert float(tail_probability(d, below[-1])) > alpha


def test_mixture_of_one_is_the_metrics():
    d = _dist(*CASES[0])
    assert mixture_metrics([d]) == error_metrics(d)


def test_rounding_noise_closed_form():
    """Far from the bounds, with the true value spread uniformly over a grid cell, the snapped
    error is Laplace(λ′) plus an independent uniform rounding error on [−Λ/2, Λ/2): its MSE is
    2λ′² + Λ²/12. With K equally spaced offsets the discrepancy is O(Λ²/K²)."""
    mech = SnappingMechanism(0.75, 1.0, -200.0, 200.0, rescale=False)
    cell, lam = mech.Lambda, mech.scale
    k = 64
    dists = [output_distribution(mech.parameters, ((j + 0.5) / k - 0.5) * cell) for j in range(k)]
    m = mixture_metrics(dists)
    assert m.rmse**2 == pytest.approx(2 * lam**2 + cell**2 / 12, rel=1e-3)
    assert abs(m.bias) < 1e-12


def test_laplace_closed_forms_against_scipy():
    eps, sens = 0.4, 3.0
    lam = sens / eps
    m = laplace_metrics(eps, sens)
    law = stats.laplace(scale=lam)
    assert m.mae == pytest.approx(law.expect(abs), rel=1e-9)
    assert m.rmse == pytest.approx(law.std(), rel=1e-12)
    assert m.q95 == pytest.approx(stats.expon(scale=lam).ppf(0.95), rel=1e-12)
    assert laplace_quantile(eps, sens, 0.01) == pytest.approx(-lam * math.log(0.01))
    assert laplace_tail(eps, sens, 10.0) == pytest.approx(2 * law.sf(10.0), rel=1e-12)
    assert laplace_tail(eps, sens, -1.0) == 1.0


@pytest.mark.parametrize("value", [3.0, 9.5, 12.0])
def test_clamped_laplace_against_quadrature(value):
    eps, sens, lo, hi = 0.5, 1.0, 0.0, 10.0
    lam = sens / eps
    m = clamped_laplace_metrics(eps, sens, lo, hi, [value])
    dens = stats.laplace(scale=lam).pdf

    def err(y: float) -> float:
        return min(max(value + y, lo), hi) - value

    pts = [lo - value, hi - value, 0.0]

    def moment(f):
        return integrate.quad(lambda y: f(err(y)) * dens(y), -200, 200, points=pts, limit=200)[0]

    assert m.bias == pytest.approx(moment(lambda e: e), abs=1e-9)
    assert m.mae == pytest.approx(moment(abs), rel=1e-8)
    assert m.rmse == pytest.approx(math.sqrt(moment(lambda e: e * e)), rel=1e-8)
    for level, q in ((0.05, m.q95), (0.01, m.q99)):
        tail = integrate.quad(
            lambda y, q=q: (abs(err(y)) > q) * dens(y), -200, 200, points=[*pts, q, -q], limit=200
        )[0]
        assert tail <= level * (1 + 1e-6)


def test_clamped_laplace_with_wide_bounds_is_textbook():
    wide = clamped_laplace_metrics(1.0, 1.0, -1e4, 1e4, [0.0])
    text = laplace_metrics(1.0, 1.0)
    for name in ("mae", "rmse", "q95", "q99"):
        assert getattr(wide, name) == pytest.approx(getattr(text, name), rel=1e-9)


def test_bad_inputs():
    d = _dist(*CASES[0])
    with pytest.raises(ParameterError, match="alpha"):
        error_quantile(d, 1.5)
    with pytest.raises(ParameterError, match="epsilon"):
        laplace_metrics(0.0, 1.0)
    with pytest.raises(ParameterError, match="dists"):
        mixture_metrics([])
