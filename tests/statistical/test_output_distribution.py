"""χ² tests of the released values against the exact distribution of DESIGN §5, and accuracy.

Fixed seeds make every run identical; thresholds are at α = 1e-6 so a correct implementation
would fail only with negligible probability for any other seed either.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats
from tests.oracles import exact_distribution

from snapdp import SnappingMechanism

THRESHOLD = 1e-6
N = 20_000


def categorize(m: SnappingMechanism, outputs: np.ndarray) -> dict[object, int]:
    center = (Fraction(m.lower) + Fraction(m.upper)) / 2
    step = Fraction(m.Lambda) * Fraction(m.mechanism_sensitivity)  # Δ_r·Λ, exact doubles
    counts: dict[object, int] = {}
    for out, n in zip(*np.unique(outputs, return_counts=True), strict=True):
        if out == m.upper:
            key: object = "hi"
        elif out == m.lower:
            key = "lo"
        else:
            key = round((Fraction(float(out)) - center) / step)
        counts[key] = counts.get(key, 0) + int(n)
    return counts


def chi_square_pvalue(expected: dict[object, float], observed: dict[object, int], n: int) -> float:
    assert set(observed) <= set(expected), (
        f"outputs outside the support: {set(observed) - set(expected)}"
    )
    order = ["lo", *sorted(k for k in expected if isinstance(k, int)), "hi"]
    bins: list[list[float]] = []
    acc_e, acc_o = 0.0, 0
    for key in order:
        acc_e += expected[key] * n
        acc_o += observed.get(key, 0)
        if acc_e >= 5:
            bins.append([acc_e, acc_o])
            acc_e, acc_o = 0.0, 0
    if bins:
        bins[-1][0] += acc_e
        bins[-1][1] += acc_o
    stat = sum((o - e) ** 2 / e for e, o in bins)
    return float(stats.chi2.sf(stat, len(bins) - 1))


CONFIGS = [
    # epsilon, sensitivity, lower, upper, value
    (1.0, 1.0, 0.0, 20.0, 10.0),  # Λ = 2, value mid-range on the grid
    (1.0, 1.0, 0.0, 20.0, 0.3),  # near the lower bound: the clamp binds often
    (0.5, 1.0, -10.0, 10.0, 3.7),  # 1/ε a power of two: Λ = 4
    (0.25, 2.0, -3.0, 17.0, 25.0),  # outside the bounds: clamped input, Δ = 2
    (2.0, 0.5, -1.0, 4.0, 1.2345),  # asymmetric bounds, Λ < 1
    (3.0, 1.0, -2.0, 2.0, -2.0),  # on a bound
    (0.1, 1.0, -50.0, 50.0, -math.inf),  # −inf clamps
    (1 / 3, 1.0, -5.0, 10.0, 2.0),  # 1/ε not a power of two
    (8.0, 0.25, 100.0, 101.0, 100.6),  # large ε, offset bounds
]


@pytest.mark.parametrize(("eps", "sens", "lo", "hi", "value"), CONFIGS)
def test_chi_square_against_exact_distribution(
    eps: float, sens: float, lo: float, hi: float, value: float
) -> None:
    m = SnappingMechanism(
        eps, sens, lo, hi, rng=np.random.default_rng(hash((eps, lo, value)) % 2**32)
    )
    outputs = m.release_many(np.full(N, value))
    expected = exact_distribution(m, value)
    assert math.isclose(sum(expected.values()), 1.0, rel_tol=1e-12)
    p = chi_square_pvalue(expected, categorize(m, outputs), N)
    assert p > THRESHOLD, p


def test_chi_square_detects_a_wrong_distribution() -> None:
    """The test has power: outputs for value 10 are rejected against the distribution for 11."""
    m = SnappingMechanism(1.0, 1.0, 0.0, 20.0, rng=np.random.default_rng(5))
    outputs = m.release_many(np.full(N, 10.0))
    assert chi_square_pvalue(exact_distribution(m, 11.0), categorize(m, outputs), N) < THRESHOLD


ACCURACY_CONFIGS = [
    (1.0, 1.0, 0.0, 100.0, 42.0),
    (1.0, 1.0, 0.0, 100.0, 43.0),  # off the grid by Λ/2
    (0.5, 1.0, -1000.0, 1000.0, 0.3),
    (0.3, 2.0, -1e4, 1e4, -77.7),
    (4.0, 1.0, 0.0, 10.0, 5.1),
]


@pytest.mark.parametrize(("eps", "sens", "lo", "hi", "value"), ACCURACY_CONFIGS)
def test_accuracy_holds_and_is_not_loose(
    eps: float, sens: float, lo: float, hi: float, value: float
) -> None:
    m = SnappingMechanism(
        eps, sens, lo, hi, rng=np.random.default_rng(int(eps * 1000) + int(value))
    )
    errors = np.abs(m.release_many(np.full(N, value)) - value)
    for alpha in (0.5, 0.1, 0.01):
        a = m.accuracy(alpha)
        exceed = int(np.sum(errors > a))
        # P(Binomial(N, α) >= exceed) must not be tiny: the rate is not above α
        assert stats.binom.sf(exceed - 1, N, alpha) > THRESHOLD, (alpha, exceed)
        if alpha <= 0.1:
            quantile = float(np.quantile(errors, 1 - alpha, method="inverted_cdf"))
            assert a <= 1.5 * quantile, (alpha, a, quantile)
