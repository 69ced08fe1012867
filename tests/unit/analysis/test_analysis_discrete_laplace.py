"""The discrete Laplace baseline against independent exact computations.

Oracles: mpmath at 60 digits (a separate arbitrary-precision library from the module's MPFR) for
the pmf as a convolution of two geometric laws and for brute-force sums over every output; exact
rationals (Fraction) for the errors themselves.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import pytest

from snapdp import ParameterError
from snapdp.analysis.discrete_laplace import (
    discrete_accuracy,
    discrete_laplace,
    discrete_metrics,
    discrete_output_probabilities,
    discrete_pmf,
    discrete_tail,
)

mpmath.mp.dps = 60


def _q(dl) -> mpmath.mpf:
    eps = Fraction(int(dl.epsilon.numerator), int(dl.epsilon.denominator))
    return mpmath.exp(-mpmath.mpf(eps.numerator) / eps.denominator / dl.units)


@pytest.mark.parametrize(("epsilon", "sensitivity"), [(1, 1), (0.1, 1), (2.5, 3), (0.75, 2)])
def test_pmf_is_the_difference_of_two_geometric_laws(epsilon, sensitivity):
    """Z = G1 − G2, G ~ Geometric(1 − q) on {0, 1, ...}: P(Z = k) = Σ_j P(G = j + |k|)·P(G = j)."""
    dl = discrete_laplace(epsilon, sensitivity, 0, 100)
    q = _q(dl)
    for k in (-7, -1, 0, 1, 2, 13):
        conv = mpmath.nsum(
            lambda j, k=k: (1 - q) * q ** (j + abs(k)) * (1 - q) * q**j, [0, mpmath.inf]
        )
        assert abs(mpmath.mpf(discrete_pmf(dl, k)) / conv - 1) < mpmath.mpf(10) ** -55
    total = sum(mpmath.mpf(discrete_pmf(dl, k)) for k in range(-400, 401))
    assert abs(total - 1) < mpmath.mpf(10) ** -15 or epsilon < 0.5
    for k in (0, 1, 5):
        brute = 1 - sum(mpmath.mpf(discrete_pmf(dl, j)) for j in range(-k, k + 1))
        assert abs(mpmath.mpf(discrete_tail(dl, k)) - brute) < mpmath.mpf(10) ** -50


def _brute(epsilon, sensitivity, lower, upper, quantum, x):
    """Every output's probability summed with mpmath; errors as Fractions."""
    dl = discrete_laplace(epsilon, sensitivity, lower, upper, quantum)
    g = Fraction(int(dl.quantum.numerator), int(dl.quantum.denominator))
    q = _q(dl)
    c = (1 - q) / (1 + q)
    xf = Fraction(x)
    n = (xf / g + Fraction(1, 2)).__floor__()
    errs: dict[Fraction, mpmath.mpf] = {}
    for k in range(-3000, 3001):
        o = min(max(g * (n + k), Fraction(lower)), Fraction(upper))
        errs[o - xf] = errs.get(o - xf, 0) + c * q ** abs(k)
    return dl, errs


def _quantile(errs, level):
    merged: dict[Fraction, mpmath.mpf] = {}
    for e, p in errs.items():
        merged[abs(e)] = merged.get(abs(e), 0) + p
    above = sum(merged.values())
    cand = Fraction(0)
    for a, p in sorted(merged.items()):
        if above <= level:
            break
        above -= p
        cand = a
    return float(cand)


CASES = [
    (1, 1, 0, 100, None, 50),
    (1, 1, 0, 100, None, 98),
    (0.5, 1, 0, 10, None, 3),
    (1, 1, 0, 100, 0.25, 50.1),
    (1, 1, -5, 5, 0.5, -4.9),
    (0.3, 2, -7.3, 12.1, 0.7, 11.0),
    (2, 1.5, 0, 100, None, 33.3),
]


@pytest.mark.parametrize("case", CASES)
def test_metrics_against_brute_force(case):
    dl, errs = _brute(*case)
    got = discrete_metrics(dl, case[-1])

    def mp(e: Fraction) -> mpmath.mpf:
        return mpmath.mpf(e.numerator) / e.denominator

    bias = sum(p * mp(e) for e, p in errs.items())
    mae = sum(p * abs(mp(e)) for e, p in errs.items())
    rmse = mpmath.sqrt(sum(p * mp(e) ** 2 for e, p in errs.items()))
    assert got.bias == pytest.approx(float(bias), rel=1e-12, abs=1e-14)
    assert got.mae == pytest.approx(float(mae), rel=1e-12)
    assert got.rmse == pytest.approx(float(rmse), rel=1e-12)
    assert got.q95 == pytest.approx(_quantile(errs, 0.05), rel=1e-15)
    assert got.q99 == pytest.approx(_quantile(errs, 0.01), rel=1e-15)


def test_listed_output_probabilities_match_brute_force():
    dl, errs = _brute(1, 1, 0, 100, None, 98)
    outs, probs, mass = discrete_output_probabilities(dl, 98)
    assert outs[0] == 0.0 and outs[-1] == 100.0
    assert mass == pytest.approx(1.0, abs=1e-15)
    for o, p in zip(outs, probs, strict=True):
        assert p == pytest.approx(float(errs[Fraction(o) - 98]), rel=1e-12)


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1, 1.7, 4])
@pytest.mark.parametrize("alpha", [0.05, 0.01])
def test_integer_accuracy_is_the_exact_worst_case(epsilon, alpha):
    """For an integer statistic the ± k is the smallest integer with P(|Z| > k) <= alpha."""
    dl = discrete_laplace(epsilon, 1, -1000, 1000)
    a = discrete_accuracy(dl, alpha)
    assert a == int(a)
    q = _q(dl)
    assert 2 * q ** (int(a) + 1) / (1 + q) <= alpha
    if a > 0:
        assert 2 * q ** int(a) / (1 + q) > alpha


@pytest.mark.parametrize(("epsilon", "quantum"), [(1, 0.25), (0.4, 0.5), (2, 0.1), (1, 1.0)])
def test_real_valued_accuracy_covers_every_rounding_offset(epsilon, quantum):
    """Brute force over many true values: the stated ± is met by all (coverage) and the
    quantile of the worst of them reaches it (tightness, up to the offsets tried)."""
    dl = discrete_laplace(epsilon, 1, -1000, 1000, quantum)
    a = discrete_accuracy(dl, 0.05)
    worst = 0.0
    for i in range(41):
        x = Fraction(i, 40) * Fraction(quantum)  # offsets over one quantum, both tie directions
        m = discrete_metrics(dl, x)
        assert m.q95 <= a
        worst = max(worst, m.q95)
    assert worst == pytest.approx(a, rel=1e-12)


def test_accuracy_of_the_issue_example_and_the_cap():
    assert discrete_accuracy(discrete_laplace(1, 1, 0, 100), 0.05) == 3.0
    assert discrete_accuracy(discrete_laplace(1, 1, 0, 100), 0.01) == 4.0
    assert discrete_accuracy(discrete_laplace(0.001, 1, 0, 100), 0.05) == 100.0
    # integers near 1e300 are not doubles: one ulp of the bound is added
    wide = discrete_accuracy(discrete_laplace(1, 1, 0, 1e300), 0.05)
    assert wide > 3.0 and wide < 1e300


def test_defaults_and_errors():
    assert discrete_laplace(1, 2, 0, 10).quantum == 1 and discrete_laplace(1, 2, 0, 10).units == 2
    real = discrete_laplace(1, 0.5, 0, 10)
    assert real.quantum == Fraction(1, 2) and real.units == 1 and not real.integer_valued
    assert discrete_laplace(1, 1, 0, 10, 0.3).units == 4  # ⌈1/0.3⌉
    with pytest.raises(ParameterError, match="quantum"):
        discrete_laplace(1, 1, 0, 10, 1e-300)
    with pytest.raises(ParameterError, match="lower"):
        discrete_laplace(1, 1, 10, 0)
