"""The closed-form Laplace integrals of analysis._laplace against scipy quadrature."""

from __future__ import annotations

import pytest
from scipy import integrate, stats

from snapdp import _exact
from snapdp._exact import mpfr, mpq
from snapdp.analysis import _laplace

S = 1.7
INTERVALS = [(None, None), (None, -0.4), (-2.5, 0.3), (0.2, 3.1), (1.5, None), (-3.0, -1.0)]


def _quad(f, lo, hi):
    a = -60.0 if lo is None else float(lo)
    b = 60.0 if hi is None else float(hi)
    dens = stats.laplace(scale=S).pdf
    pts = [p for p in (0.0, -0.35 / 0.8, 0.65 / 0.8, -1.35 / 0.8) if a < p < b]
    return integrate.quad(lambda y: f(y) * dens(y), a, b, points=pts or None, limit=200)[0]


def _q(x):
    return None if x is None else mpq(_exact.exact_rational(x))


@pytest.mark.parametrize(("lo", "hi"), INTERVALS)
def test_mass_and_expectations(lo, hi):
    with _exact.working_precision(160):
        s = mpfr(_exact.exact_rational(S))
        mass = float(_laplace.mass(_q(lo), _q(hi), s))
        lin = float(_laplace.linear_expectation(mpq(7, 20), mpq(4, 5), _q(lo), _q(hi), s))
        ab = float(_laplace.abs_linear_expectation(mpq(7, 20), mpq(4, 5), _q(lo), _q(hi), s))
        tail = float(_laplace.abs_linear_tail(mpq(7, 20), mpq(4, 5), mpq(1), _q(lo), _q(hi), s))
    assert mass == pytest.approx(_quad(lambda y: 1.0, lo, hi), rel=1e-9, abs=1e-14)
    assert lin == pytest.approx(_quad(lambda y: 0.35 + 0.8 * y, lo, hi), rel=1e-9, abs=1e-14)
    assert ab == pytest.approx(_quad(lambda y: abs(0.35 + 0.8 * y), lo, hi), rel=1e-9, abs=1e-14)
    expected_tail = _quad(lambda y: float(abs(0.35 + 0.8 * y) > 1), lo, hi)
    assert tail == pytest.approx(expected_tail, rel=1e-6, abs=1e-9)


def test_cdf_and_sf_are_complements():
    with _exact.working_precision(200):
        s = mpfr(2)
        for t in (mpq(-5), mpq(0), mpq(3, 7)):
            assert abs(float(_laplace.cdf(t, s) + _laplace.sf(t, s) - 1)) < 1e-55
