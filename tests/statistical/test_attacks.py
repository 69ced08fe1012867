"""Attacks as code (issue 4): Mironov's distinguisher and the precision attack.

Thresholds: every statistical decision is a test at α <= 1e-6 with fixed seeds. What is run:
textbook and numpy Laplace at 10**6 releases per input; snapping at 10**6 draws per input from its
*exact* distribution, and 10**6 real releases per input through the vectorised
``SnappingMechanism.release_many``.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chi2_contingency, norm

from snapdp import LaplaceMechanism, SnappingMechanism
from snapdp.verify import exact_distribution
from snapdp.verify.attacks import (
    could_be_zero_numpy,
    could_be_zero_snapping,
    could_be_zero_textbook,
    exact_feature_distribution,
    multiple_of_power_of_two,
    sample_exact,
    trailing_zero_bits,
)

ALPHA = 1e-6
N = 10**6
N_REAL = 10**6


def _two_proportion_p(hits_a: int, hits_b: int, n_a: int, n_b: int) -> float:
    """Two-sided p-value of the pooled two-proportion z-test (1.0 when both rates are 0 or 1)."""
    pooled = (hits_a + hits_b) / (n_a + n_b)
    if pooled in (0.0, 1.0):
        return 1.0
    se = np.sqrt(pooled * (1 - pooled) * (1 / n_a + 1 / n_b))
    z = (hits_a / n_a - hits_b / n_b) / se
    return float(2 * norm.sf(abs(z)))


def test_mironov_distinguisher_breaks_textbook_laplace() -> None:
    scale = LaplaceMechanism(1 / 3, 1.0).scale
    rates = {}
    for seed, x in ((1, 0.0), (2, 1.0)):
        mech = LaplaceMechanism(1 / 3, 1.0, rng=np.random.default_rng(seed))
        flags = could_be_zero_textbook(mech.release_many(np.full(N, x)), scale)
        rates[x] = int(flags.sum())
    assert rates[0.0] == N  # exact: every output of 0 can come from 0
    assert _two_proportion_p(rates[0.0], rates[1.0], N, N) < ALPHA
    assert 0.3 < rates[1.0] / N < 0.6  # measured 0.425; Mironov reports ~0.38 on his sampler


def test_mironov_distinguisher_breaks_numpy_laplace() -> None:
    rates = {}
    for seed, x in ((3, 0.0), (4, 1.0)):
        outputs = np.random.default_rng(seed).laplace(x, 3.0, N)
        rates[x] = int(could_be_zero_numpy(outputs, 3.0).sum())
    assert rates[0.0] == N
    assert _two_proportion_p(rates[0.0], rates[1.0], N, N) < ALPHA
    assert rates[1.0] / N < 0.5  # measured 0.214


def test_mironov_distinguisher_fails_on_snapping() -> None:
    mech = SnappingMechanism(1 / 3, 1.0, -12.0, 12.0)
    dist0 = exact_distribution(mech, 0.0)
    dist1 = exact_distribution(mech, 1.0)
    assert dist0.support() == dist1.support()  # exact: same outputs possible
    counts = {}
    for seed, (x, dist) in enumerate(((0.0, dist0), (1.0, dist1)), start=5):
        sample = sample_exact(dist, N, np.random.default_rng(seed))
        counts[x] = int(could_be_zero_snapping(dist0, sample).sum())
    assert _two_proportion_p(counts[0.0], counts[1.0], N, N) > ALPHA
    # the real release path
    real = {}
    for seed, x in ((7, 0.0), (8, 1.0)):
        m = SnappingMechanism(1 / 3, 1.0, -12.0, 12.0, rng=np.random.default_rng(seed))
        real[x] = int(could_be_zero_snapping(dist0, m.release_many(np.full(N_REAL, x))).sum())
    assert _two_proportion_p(real[0.0], real[1.0], N_REAL, N_REAL) > ALPHA
    assert real[0.0] == real[1.0] == N_REAL


def _chi2_p(a: np.ndarray, b: np.ndarray) -> float:
    ca, cb = np.bincount(a, minlength=53), np.bincount(b, minlength=53)
    keep = (ca + cb) > 0
    if keep.sum() < 2:
        return 1.0
    return float(chi2_contingency(np.vstack([ca[keep], cb[keep]]))[1])


def test_precision_attack_breaks_textbook_laplace() -> None:
    """Trailing significand bits separate inputs 2**-53 apart, and 0 from 1 (Haney et al.)."""
    bits = {}
    for seed, x in ((11, 0.0), (12, 1.0), (13, 1 - 2.0**-53)):
        mech = LaplaceMechanism(1 / 3, 1.0, rng=np.random.default_rng(seed))
        bits[x] = trailing_zero_bits(mech.release_many(np.full(N, x)))
    assert _chi2_p(bits[0.0], bits[1.0]) < ALPHA
    assert _chi2_p(bits[1.0], bits[1 - 2.0**-53]) < ALPHA


def test_precision_attack_on_input_two_to_minus_sixty_textbook() -> None:
    """Input 2**-60 produces outputs input 0 cannot: one such output is proof (no test needed)."""
    mech = LaplaceMechanism(1 / 3, 1.0, rng=np.random.default_rng(14))
    outputs = mech.release_many(np.full(N, 2.0**-60))
    assert not could_be_zero_textbook(outputs, mech.scale).all()


INPUTS = (0.0, 1.0, 2.0**-60, 1 - 2.0**-53)


@pytest.mark.parametrize("rescale", [False, True])
def test_precision_features_of_snapping_are_functions_of_the_grid_index(rescale: bool) -> None:
    """Exact: same support for all four inputs; every output a multiple of Λ = 2 (of 2**-4 when
    rescaled: the grid is 17/16); the trailing-bit distribution identical to 1e-15 for inputs
    closer than 2**-52, and within e^ε otherwise."""
    mech = SnappingMechanism(1.0, 1.0, -8.0, 8.0, rescale=rescale)
    dists = {x: exact_distribution(mech, x) for x in INPUTS}
    supports = {dists[x].support() for x in INPUTS}
    assert len(supports) == 1
    outputs = np.array(list(dists[0.0].outputs.values()))
    for j in range(-1 if not rescale else 4, 61):
        assert multiple_of_power_of_two(outputs, j).all()
    feature = {lab: int(trailing_zero_bits([o])[0]) for lab, o in dists[0.0].outputs.items()}
    feats = {x: exact_feature_distribution(dists[x], feature) for x in INPUTS}
    for a, b in ((0.0, 2.0**-60), (1.0, 1 - 2.0**-53)):
        tv = sum(abs(feats[a][k] - feats[b][k]) for k in feats[a]) / 2
        assert tv < 1e-15
    ratio = max(
        max(feats[0.0][k] / feats[1.0][k], feats[1.0][k] / feats[0.0][k]) for k in feats[0.0]
    )
    assert ratio <= np.e


@pytest.mark.parametrize(("a", "b"), [(0.0, 2.0**-60), (1.0, 1 - 2.0**-53)])
def test_precision_features_of_snapping_releases_are_indistinguishable(a: float, b: float) -> None:
    """Empirical, on the real release path: the χ² test of trailing bits does not reject."""
    bits = []
    for seed, x in ((21, a), (22, b)):
        mech = SnappingMechanism(1.0, 1.0, -8.0, 8.0, rng=np.random.default_rng(seed))
        bits.append(trailing_zero_bits(mech.release_many(np.full(N_REAL, x))))
    assert _chi2_p(bits[0], bits[1]) > ALPHA
