"""The exact distribution against independent oracles: the implementation itself evaluated on
random draws, the continuous Laplace masses of DESIGN §5 at 300 bits, and exact total mass 1."""

from __future__ import annotations

import itertools

import gmpy2
import numpy as np
import pytest
from gmpy2 import mpfr, mpq

from snapdp import ParameterError, SnappingMechanism
from snapdp.randomness import SeededSource, draw_uniform
from snapdp.snapping import normalize, snapped_output
from snapdp.verify import exact_distribution
from snapdp.verify.distribution import (
    LAST_PATTERN,
    _SignSweep,
    class_bounds,
    output_label,
    pattern_value,
    value_pattern,
)

CASES = [
    (1.0, 1.0, -8.0, 8.0, 0.0),
    (1.0, 1.0, -8.0, 8.0, 7.25),
    (0.1, 1.0, 0.0, 100.0, 3.0),
    (2.0, 1.0, 0.0, 100.0, 99.5),
    (0.5, 3.0, -10.0, 20.0, -1e9),  # clamped input
    (1.0, 1.0, -1000.0, 1000.0, -1000.0),  # deep tail reaches subnormal U*
    (700.0, 1.0, -1.0, 1.0, 0.0),  # λ′ tiny: ~1000 reachable outputs
]


@pytest.mark.parametrize(("eps", "sens", "lo", "hi", "x"), CASES)
def test_total_mass_is_exactly_one(eps: float, sens: float, lo: float, hi: float, x: float) -> None:
    dist = exact_distribution(SnappingMechanism(eps, sens, lo, hi, rescale=False), x)
    assert dist.total() == 1


@pytest.mark.parametrize(("eps", "sens", "lo", "hi", "x"), CASES[:5])
def test_boundaries_are_where_the_implementation_changes_output(
    eps: float, sens: float, lo: float, hi: float, x: float
) -> None:
    mech = SnappingMechanism(eps, sens, lo, hi, rescale=False)
    params = mech.parameters
    x_tilde = normalize(params, x)
    for sign in (1, -1):
        sweep = _SignSweep(params, x_tilde, sign)
        intervals = list(sweep.intervals())
        for cls, start, stop in intervals:
            probe = _SignSweep(params, x_tilde, sign)
            assert probe.clamped(start) == cls
            assert probe.clamped(stop - 1) == cls
            if start > 1:
                assert probe.clamped(start - 1) != cls
        # consecutive intervals tile the patterns 1 .. pattern(1.0) − 1
        assert intervals[0][1] == 1
        assert intervals[-1][2] == LAST_PATTERN + 1
        assert all(a[2] == b[1] for a, b in itertools.pairwise(intervals))


def test_random_draws_land_in_their_interval() -> None:
    """2000 draws of the real sampler: each output equals the output of the interval it is in."""
    mech = SnappingMechanism(1.0, 1.0, -8.0, 8.0, rescale=False)
    params = mech.parameters
    x_tilde = normalize(params, 0.5)
    lookup = {}
    for sign in (1, -1):
        lookup[sign] = list(_SignSweep(params, x_tilde, sign).intervals())
    dist = exact_distribution(mech, 0.5)
    source = SeededSource(np.random.default_rng(1234))
    for _ in range(2000):
        draw = draw_uniform(source)
        pattern = value_pattern(draw.u)
        (cls,) = [c for c, a, b in lookup[draw.sign] if a <= pattern < b]
        out = snapped_output(params, x_tilde, draw.sign, draw.u)
        assert dist.outputs[output_label(params, cls)] == out


def _ideal_mass(params: object, x_tilde: mpq, label: object) -> mpfr:
    """DESIGN §5 with the implementation's λ′, at 300 bits (an independent formula)."""
    with gmpy2.context(gmpy2.get_context(), precision=300):
        lam = mpfr(params.scale)  # type: ignore[attr-defined]
        grid = params.grid  # type: ignore[attr-defined]
        k_lo, k_hi = class_bounds(params)  # type: ignore[arg-type]

        def cdf(t: mpq) -> mpfr:
            t_f = mpfr(t)
            return gmpy2.exp(t_f / lam) / 2 if t < 0 else 1 - gmpy2.exp(-t_f / lam) / 2

        if label == "lower":
            return cdf((k_lo + mpq(1, 2)) * grid - x_tilde)
        if label == "upper":
            return 1 - cdf((k_hi - mpq(1, 2)) * grid - x_tilde)
        k = int(label)  # type: ignore[call-overload]
        return cdf((k + mpq(1, 2)) * grid - x_tilde) - cdf((k - mpq(1, 2)) * grid - x_tilde)


@pytest.mark.parametrize(("eps", "sens", "lo", "hi", "x"), CASES[:4])
def test_masses_match_continuous_laplace(
    eps: float, sens: float, lo: float, hi: float, x: float
) -> None:
    """Masses are sums of ulps: within a relative 2**-50 of the ideal interval probability."""
    mech = SnappingMechanism(eps, sens, lo, hi, rescale=False)
    dist = exact_distribution(mech, x)
    for label, mass in dist.masses.items():
        ideal = _ideal_mass(mech.parameters, dist.x_tilde, label)
        assert abs(mpfr(mass) / ideal - 1) < 2.0**-50


def test_outputs_are_the_mechanism_doubles() -> None:
    mech = SnappingMechanism(1.0, 2.0, 0.0, 20.0, rescale=False)
    dist = exact_distribution(mech, 3.0)
    assert set(dist.outputs.values()) == {0.0, 20.0} | {10.0 + 4.0 * k for k in range(-2, 3)}
    assert pattern_value(value_pattern(0.3)) == 0.3


def test_bad_value_is_a_parameter_error() -> None:
    with pytest.raises(ParameterError, match="`value`"):
        exact_distribution(SnappingMechanism(1.0, 1.0, 0.0, 1.0, rescale=False), float("nan"))
