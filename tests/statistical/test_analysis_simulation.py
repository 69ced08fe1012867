"""The exact analysis against the mechanism's own seeded releases (χ², fixed seeds, α = 1e-6).

The ideal distribution of DESIGN §5 differs from the implementation's by a relative ~2**-50 per
output, far below what 2·10**4 samples can see, so a χ² test against it is a distribution test
of the mechanism. Seeds are fixed: these tests are deterministic.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from snapdp import SnappingMechanism
from snapdp.analysis.comparison import coupled_distance, distance_cases
from snapdp.analysis.distribution import output_distribution
from snapdp.analysis.metrics import error_metrics
from snapdp.randomness import SeededSource, draw_uniform

ALPHA = 1e-6
N = 20_000


def _chi2_pvalue(observed: dict[float, int], expected: dict[float, float], n: int) -> float:
    """Pearson χ² with cells of expected count < 5 pooled into one."""
    obs, exp, pool_o, pool_e = [], [], 0, 0.0
    for out, p in expected.items():
        if n * p >= 5:
            obs.append(observed.get(out, 0))
            exp.append(n * p)
        else:
            pool_o += observed.get(out, 0)
            pool_e += n * p
    if pool_e > 0:
        obs.append(pool_o)
        exp.append(pool_e)
    unexpected = sum(c for o, c in observed.items() if o not in expected)
    assert unexpected == 0, "outputs outside the exact support"
    stat = sum((o - e) ** 2 / e for o, e in zip(obs, exp, strict=True))
    return float(stats.chi2.sf(stat, len(obs) - 1))


@pytest.mark.parametrize(
    ("setting", "value", "seed"),
    [
        ((1.0, 1.0, 0.0, 20.0), 13.3, 11),
        ((0.5, 1.0, 0.0, 20.0), 17.3, 12),  # Λ = 2λ, clamp binding often
        ((0.3, 2.5, -40.0, 15.0), 100.0, 13),  # value outside the bounds
    ],
)
def test_release_many_matches_the_exact_distribution(setting, value, seed):
    mech = SnappingMechanism(*setting, rng=np.random.default_rng(seed), rescale=False)
    dist = output_distribution(mech.parameters, value)
    expected = {o: float(p) for o, p in zip(dist.outputs, dist.probabilities, strict=True)}
    sample = mech.release_many(np.full(N, value))
    outs, counts = np.unique(sample, return_counts=True)
    observed = {float(o): int(c) for o, c in zip(outs, counts, strict=True)}
    assert _chi2_pvalue(observed, expected, N) > ALPHA
    # and the metrics: the sample MAE within 5.5 standard errors of the exact MAE
    m = error_metrics(dist)
    err = np.abs(sample - value)
    assert abs(err.mean() - m.mae) < 5.5 * err.std() / np.sqrt(N)


def test_coupled_distances_respect_the_case_bounds_and_expectations():
    mech = SnappingMechanism(1.0, 1.0, 0.0, 20.0, rescale=False)
    params = mech.parameters
    source = SeededSource(np.random.default_rng(21))
    value = 18.7
    interior, clamped = distance_cases(params, value)
    by_case: dict[int, list[float]] = {1: [], 3: []}
    n = 6000
    for _ in range(n):
        draw = draw_uniform(source)
        case, dist = coupled_distance(params, value, draw.sign, draw.u)
        by_case[case].append(float(dist))
    ones, threes = np.array(by_case[1]), np.array(by_case[3])
    assert ones.max() <= interior.supremum
    # frequencies and conditional means agree with the exact values
    assert stats.binomtest(len(threes), n, clamped.probability).pvalue > ALPHA
    for arr, case in ((ones, interior), (threes, clamped)):
        se = arr.std() / np.sqrt(arr.size)
        assert abs(arr.mean() - case.expected_distance) < 5.5 * se


def test_coupled_distances_outside_the_bounds():
    """Cases 2 and 4 for a value past the upper bound: the case-2 supremum holds draw by draw."""
    params = SnappingMechanism(0.8, 1.0, -5.0, 5.0, rescale=False).parameters
    source = SeededSource(np.random.default_rng(22))
    value = 7.5
    interior, clamped = distance_cases(params, value)
    n = 4000
    cases, twos = [], []
    for _ in range(n):
        draw = draw_uniform(source)
        case, dist = coupled_distance(params, value, draw.sign, draw.u)
        cases.append(case)
        if case == 2:
            twos.append(float(dist))
    assert set(cases) <= {2, 4}
    assert max(twos) <= interior.supremum
    assert stats.binomtest(cases.count(4), n, clamped.probability).pvalue > ALPHA
