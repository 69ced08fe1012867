"""p, η, ε′, λ′ and Λ against an independent exact recomputation (DESIGN §2.2–2.3)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from snapdp import ParameterError, SnappingMechanism
from snapdp.parameters import UNIFORM_GRANULARITY

GAMMA = Fraction(1, 2**48)


def ceil_log2(q: Fraction) -> int:
    n = 0
    while Fraction(2) ** n < q:
        n += 1
    while Fraction(2) ** (n - 1) >= q:
        n -= 1
    return n


def bits_of(q: Fraction) -> int:
    """Significant bits of a dyadic rational (odd numerator after removing powers of two)."""
    assert q.denominator & (q.denominator - 1) == 0
    num = abs(q.numerator)
    while num and num % 2 == 0:
        num //= 2
    return num.bit_length()


CASES = [
    # epsilon, sensitivity, lower, upper
    (1.0, 1.0, 0.0, 100.0),
    (0.5, 1.0, -10.0, 10.0),  # 1/ε a power of two
    (0.25, 2.0, -3.0, 7.5),  # 1/ε a power of two, asymmetric
    (1 / 3, 1.0, -1.0, 1.0),
    (2.0**20, 1.0, -1e6, 1e6),  # huge ε: tiny Λ
    (1e-10, 1.0, 0.0, 1.0),  # tiny ε
    (1e-3, 5.0, -1e3, 1e3),
    (10.0, 0.1, 0.0, 1.0),
    (1e300, 1.0, -1.0, 1.0),
    (0.7, 1e-300, -1e300, 1e300),  # huge B̃: precision grows beyond 118
    (3.0, 7, -5, 12),  # ints
    (Fraction(1, 3), Fraction(2, 3), Fraction(-1, 7), Fraction(5, 7)),  # exact rationals
]


@pytest.mark.parametrize(("eps", "sens", "lo", "hi"), CASES)
def test_parameters_match_exact_recomputation(
    eps: float, sens: float, lo: float, hi: float
) -> None:
    m = SnappingMechanism(eps, sens, lo, hi, rescale=False)
    e, d, lq, hq = Fraction(eps), Fraction(sens), Fraction(lo), Fraction(hi)
    b_tilde = (hq - lq) / 2 / d
    p = max(118, 2 - ceil_log2(e), ceil_log2(max(b_tilde, Fraction(1))) + 64)
    assert m.precision == p
    eta = Fraction(1, 2**p)
    assert Fraction(m.parameters.eta) == eta
    assert m.eta == (math.ldexp(1.0, -p))
    # ε′ = (ε − 2η − γ)/(1 + 12·B̃·η), rounded toward zero at p bits
    exact = (e - 2 * eta - GAMMA) / (1 + 12 * b_tilde * eta)
    eps_p = Fraction(*m.parameters.epsilon_prime.as_integer_ratio())
    assert 0 < eps_p <= exact
    assert bits_of(eps_p) <= p
    assert exact - eps_p < Fraction(2) ** (ceil_log2(exact) - p)  # within one p-bit ulp, below
    # λ′ = 1/ε′ rounded toward +∞ at p bits
    lam = Fraction(*m.parameters.scale.as_integer_ratio())
    assert lam >= 1 / eps_p
    assert bits_of(lam) <= p
    assert lam - 1 / eps_p < Fraction(2) ** (ceil_log2(lam) - p)
    # Λ: the smallest power of two >= λ′, never below it
    big_lambda = Fraction(2) ** m.parameters.lambda_exponent
    assert big_lambda >= lam > big_lambda / 2
    assert Fraction(m.Lambda) == big_lambda
    assert Fraction(m.parameters.bound) == b_tilde
    assert Fraction(m.parameters.center) == (lq + hq) / 2
    assert UNIFORM_GRANULARITY == GAMMA


def test_epsilon_one_gives_grid_two() -> None:
    """DESIGN §2.3: for ε = 1, λ′ is just above 1, so Λ = 2 (never the λ′ rounded down to 1)."""
    m = SnappingMechanism(1.0, 1.0, -5.0, 5.0, rescale=False)
    assert m.scale > 1.0 or Fraction(*m.parameters.scale.as_integer_ratio()) > 1
    assert m.Lambda == 2.0


@pytest.mark.parametrize("k", range(-10, 11))
def test_power_of_two_reciprocals_step_up(k: int) -> None:
    """1/ε = 2**k exactly: λ′ > 2**k, so Λ = 2**(k+1): the jump at powers of two."""
    m = SnappingMechanism(2.0**-k, 1.0, -1.0, 1.0, rescale=False)
    assert m.Lambda == 2.0 ** (k + 1)


def test_grid_spacing_in_data_units() -> None:
    m = SnappingMechanism(1.0, 3.0, 0.0, 100.0, rescale=False)
    assert m.grid_spacing == 6.0


def test_precision_grows_with_bound_and_small_epsilon() -> None:
    assert SnappingMechanism(1.0, 1.0, -(2.0**100), 2.0**100, rescale=False).precision == 100 + 64
    assert SnappingMechanism(1.0, 1.0, -1.0, 1.0, rescale=False).precision == 118


def test_epsilon_below_granularity_is_refused() -> None:
    with pytest.raises(ParameterError, match="too small"):
        SnappingMechanism(2.0**-49, 1.0, 0.0, 1.0, rescale=False)
    SnappingMechanism(2.0**-47, 1.0, 0.0, 1.0, rescale=False)  # above 2**-48 + 2η: accepted


def test_privacy_statement_is_pure_for_narrow_bounds_and_honest_for_wide() -> None:
    narrow = SnappingMechanism(1.0, 1.0, -100.0, 100.0, rescale=False)
    assert float(narrow.parameters.delta) == 0.0  # the outputs: pure ε
    assert 0 < narrow.privacy.delta <= 2.0**-80  # plus release_many's timing (docs/fast-path.md)
    assert "(ε = 1, δ <= " in str(narrow.privacy)
    wide = SnappingMechanism(1.0, 1.0, -1e6, 1e6, rescale=False)
    assert 0 < float(wide.parameters.delta) < 1e-300
    assert 0 < wide.privacy.delta <= 2.0**-80
    assert "δ <=" in str(wide.privacy)
    huge_eps = SnappingMechanism(
        2000.0, 1.0, -10.0, 10.0, rescale=False
    )  # supports of neighbours disjoint
    assert huge_eps.privacy.delta == 1.0


def test_seeded_mechanism_says_not_private() -> None:
    m = SnappingMechanism(1.0, 1.0, 0.0, 1.0, rng=np.random.default_rng(0), rescale=False)
    assert "NOT PRIVATE" in repr(m)
    assert "NOT PRIVATE" in str(m.privacy)
    assert "NOT PRIVATE" not in repr(SnappingMechanism(1.0, 1.0, 0.0, 1.0, rescale=False))
