"""No power-of-two penalty (docs/mechanism.md): the rescaled mechanism's ±, its exact privacy,
its fallbacks, and the vectorised path on rescaled parameters (bit for bit)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from snapdp import SnappingMechanism
from snapdp import rescaling as rescaling_module
from snapdp.accuracy import accuracy_bound, epsilon_for_accuracy
from snapdp.fast_plan import plan_for
from snapdp.parameters import compute_parameters
from snapdp.rescaling import RATIO_STEPS, mechanism_parameters, rescaling_for
from snapdp.shift import SLACK_BOUND
from snapdp.verify import privacy_loss

GOAL = 1.17  # issue 26: stated ± <= 1.17 × the ideal Laplace ± at every ε
LISTED = ["0.25", "0.3", "0.5", "0.7", "1", "1.5", "2", "4"]


def _q(x: object) -> Fraction:
    """An exact gmpy2 number (mpq or mpfr) as a Fraction of Python ints."""
    num, den = x.as_integer_ratio()  # type: ignore[attr-defined]
    return Fraction(int(num), int(den))


def _ratio(mech_or_params: object, eps: Fraction, alpha: float = 0.05) -> float:
    params = getattr(mech_or_params, "parameters", mech_or_params)
    ideal = float(1 / eps) * math.log(1 / alpha)  # λ·ln(1/α), Δ = 1
    return accuracy_bound(params, alpha) / ideal  # type: ignore[arg-type]


@pytest.mark.parametrize("eps", LISTED)
def test_stated_pm_is_within_goal_at_the_listed_epsilons(eps: str) -> None:
    e = Fraction(eps)
    mech = SnappingMechanism(eps, 1, 0, 10**6)  # wide bounds: the clamp does not help
    assert mech.rescaling.applied and mech.rescaling.certified, mech.rescaling.note
    assert _ratio(mech, e) <= GOAL
    for alpha in (0.1, 0.01, 0.001):
        assert _ratio(mech, e, alpha) <= GOAL
    old = SnappingMechanism(eps, 1, 0, 10**6, rescale=False)
    if eps in ("0.25", "0.5", "1", "2", "4"):  # the cliff of issue 26: 1.304 before
        assert _ratio(old, e) > 1.3


def test_stated_pm_is_within_goal_on_a_dense_sweep() -> None:
    """ε from 0.01 to 100, 400 log-spaced values (presumed certificates: the parameters are
    those of the certified mechanism whenever its certificate holds, checked above)."""
    worst = 0.0
    for i in range(401):
        e = Fraction(10 ** (-2 + 4 * i / 400)).limit_denominator(10**6)
        params = mechanism_parameters(e, 1, 0, 10**9, presume_certified=True)
        worst = max(worst, _ratio(params, e))
    assert worst <= GOAL


@pytest.mark.parametrize(("eps", "sens"), [("1", 1), ("0.5", 3), ("2", Fraction(1, 4)), ("0.3", 1)])
def test_rescaling_parameters_are_exact_and_public(eps: str, sens: int | Fraction) -> None:
    e = Fraction(eps)
    resc = rescaling_for(e, sens, -20, 20)
    assert resc.applied and resc.certified and resc.note is None
    assert resc.epsilon == e and resc.sensitivity == sens
    assert 1 <= resc.ratio < 2 and (resc.ratio * RATIO_STEPS).denominator == 1
    assert resc.mechanism_sensitivity == resc.ratio * sens
    assert resc.mechanism_epsilon == resc.ratio * (e - SLACK_BOUND)
    assert resc.certificate is not None and resc.certificate.certified
    mech = SnappingMechanism(eps, sens, -20, 20)
    params = mech.parameters
    assert params == compute_parameters(resc.mechanism_epsilon, resc.mechanism_sensitivity, -20, 20)
    grid = _q(params.grid) * resc.mechanism_sensitivity
    old = compute_parameters(e, sens, -20, 20)
    assert grid < _q(old.grid) * sens
    assert grid <= Fraction(17, 16) * sens / (e - SLACK_BOUND) * (1 + Fraction(1, 10**9))
    assert mech.grid_spacing == float(grid)
    assert mech.mechanism_sensitivity == float(resc.mechanism_sensitivity)
    assert mech.privacy.epsilon_exact == e  # the requested ε and Δ, not ε_r, Δ_r
    assert mech.privacy.relation == f"|f(D) − f(D′)| <= {mech.sensitivity!r}"


def test_fallbacks_never_claim_without_a_certificate(monkeypatch: pytest.MonkeyPatch) -> None:
    not_needed = rescaling_for(Fraction("1.0001"), 1, 0, 100)  # λ′ just below 1: grid ≈ λ
    assert not not_needed.applied and "already within" in (not_needed.note or "")
    delta = rescaling_for(Fraction(700), 1, 0, 100)  # δ > 0 there: r·Δ would raise it
    assert not delta.applied and "δ" in (delta.note or "")
    assert SnappingMechanism(1, 1, 0, 100, rescale=False).parameters == compute_parameters(
        1, 1, 0, 100
    )

    real = rescaling_module._certcache.certificate

    def failing(*args: object) -> object:
        cert = real(*args)  # type: ignore[arg-type]
        return type(cert)(**{**cert.__dict__, "certified": False, "note": "made to fail"})

    rescaling_module._rescaling.cache_clear()
    monkeypatch.setattr(rescaling_module._certcache, "certificate", failing)
    try:
        resc = rescaling_for(Fraction(1), 1, 0, 100)
        assert not resc.applied and not resc.certified and "made to fail" in (resc.note or "")
        mech = SnappingMechanism(1, 1, 0, 100)
        assert mech.parameters == compute_parameters(1, 1, 0, 100)  # today's mechanism
        assert mech.grid_spacing == 2.0
    finally:
        rescaling_module._rescaling.cache_clear()


def _brute_inputs(lo: int, hi: int, grid: Fraction, centre: Fraction) -> list[Fraction]:
    """Quarter steps over [lo − 1, hi + 1] (clamp edges), every cell edge of the grid ± 2**-40."""
    xs = {Fraction(lo - 1) + Fraction(k, 4) for k in range(4 * (hi - lo + 2) + 1)}
    k = 0
    while centre + (k - Fraction(1, 2)) * grid >= lo - grid:
        k -= 1
    while centre + (k + Fraction(1, 2)) * grid <= hi + grid:
        edge = centre + (k + Fraction(1, 2)) * grid
        xs.update({edge, edge - Fraction(1, 1 << 40), edge + Fraction(1, 1 << 40)})
        k += 1
    return sorted(xs)


@pytest.mark.parametrize(
    ("eps", "sens"),
    [("1", 1), ("0.5", 1), ("2", 1), ("0.7", 2), ("0.25", 1), ("1.5", 1), ("4", 1), ("0.3", 3)],
)
def test_exact_loss_of_every_neighbouring_pair_is_at_most_epsilon(eps: str, sens: int) -> None:
    """Brute force with the exact verifier: for inputs over and beyond the bounds, on and next to
    every cell edge, the loss against a neighbour at shift Δ, Δ/2 and 2**-60 is <= ε (the
    requested ε, not ε_r), and outputs possible under one input only carry mass <= stated δ."""
    lo, hi = 0, 6
    mech = SnappingMechanism(eps, sens, lo, hi)
    assert mech.rescaling.applied
    grid = Fraction(mech.grid_spacing)
    stated_delta = _q(mech.parameters.delta)
    e = Fraction(eps)
    worst = Fraction(0)
    for x in _brute_inputs(lo, hi, grid, Fraction(lo + hi, 2)):
        for d in (Fraction(sens), Fraction(sens, 2), Fraction(1, 1 << 60)):
            loss = privacy_loss(mech, x, x + d)
            assert _q(loss.delta) <= stated_delta
            assert loss.certified, (x, d)  # every ratio proven <= e^ε
            worst = max(worst, _q(loss.loss))
    assert worst <= e
    assert worst > e * (1 - Fraction(1, 10))  # the pairs reach the worst case (not vacuous)


@pytest.mark.parametrize(
    ("eps", "sens", "lower", "upper"),
    [("1", 1, 0, 100), ("0.5", 3, -50, 50), ("2", 0.1, 0, 10), ("0.3", 7, 0, 1e6)],
)
def test_vectorised_path_is_bit_identical_on_rescaled_parameters(
    eps: str, sens: float, lower: float, upper: float
) -> None:
    probe = SnappingMechanism(eps, sens, lower, upper)
    assert probe.rescaling.applied
    assert plan_for(probe.parameters) is not None  # Δ_r is a double: the fast path applies
    values = np.concatenate(
        [np.linspace(lower - 5, upper + 5, 3000), np.full(50, lower), np.full(50, upper)]
    )
    vector = SnappingMechanism(eps, sens, lower, upper, rng=np.random.default_rng(11))
    scalar = SnappingMechanism(eps, sens, lower, upper, rng=np.random.default_rng(11))
    fast = vector.release_many(values, threads=1)
    one_by_one = np.array([scalar._release_exact(float(v)) for v in values])
    assert np.array_equal(fast, one_by_one)


def test_epsilon_for_accuracy_meets_target_with_the_rescaled_mechanism() -> None:
    eps = epsilon_for_accuracy(3.5, 0.05, 1.0, 0.0, 1000.0)
    assert SnappingMechanism(eps, 1.0, 0.0, 1000.0).accuracy(0.05) <= 3.5
    below = math.nextafter(eps, 0.0)
    assert SnappingMechanism(below, 1.0, 0.0, 1000.0).accuracy(0.05) > 3.5
    old = epsilon_for_accuracy(3.5, 0.05, 1.0, 0.0, 1000.0, rescale=False)
    assert eps < old  # the penalty cost budget: less ε buys the same ±
