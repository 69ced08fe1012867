"""End to end: real releases (sampler + pipeline) follow the exact distribution (χ², α = 1e-6)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chisquare

from snapdp import SnappingMechanism
from snapdp.verify import exact_distribution


@pytest.mark.parametrize(("eps", "lo", "hi", "x"), [(1.0, -8.0, 8.0, 0.5), (0.5, 0.0, 100.0, 3.0)])
def test_real_releases_follow_the_exact_distribution(
    eps: float, lo: float, hi: float, x: float
) -> None:
    n = 20_000
    dist = exact_distribution(SnappingMechanism(eps, 1.0, lo, hi), x)
    labels = dist.sorted_labels()
    expected = np.array([float(dist.masses[lab]) for lab in labels]) * n
    keep = expected >= 5  # pool the far tails into one cell
    mech = SnappingMechanism(eps, 1.0, lo, hi, rng=np.random.default_rng(99))
    out = mech.release_many(np.full(n, x))
    values = np.array([dist.outputs[lab] for lab in labels])
    assert np.isin(out, values).all()
    counts = np.array([(out == v).sum() for v in values])
    obs = np.append(counts[keep], counts[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    assert chisquare(obs, exp * obs.sum() / exp.sum()).pvalue > 1e-6
