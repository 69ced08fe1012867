"""The exact privacy loss and the certificates (DESIGN §6, issue 4)."""

from __future__ import annotations

import pytest
from gmpy2 import mpq

import snapdp.parameters as parameters_module
from snapdp import ParameterError, SnappingMechanism
from snapdp.parameters import compute_parameters
from snapdp.verify import GridPoint, certify, privacy_loss
from snapdp.verify.certify import DEFAULT_GRID
from snapdp.verify.loss import privacy_loss_for


@pytest.mark.parametrize("point", DEFAULT_GRID[::3], ids=str)
def test_default_grid_subset_certifies_pure_epsilon(point: GridPoint) -> None:
    cert = certify(point)
    assert cert.passed and cert.pure
    assert cert.loss.delta == 0 and cert.loss.hockey_stick == 0
    assert cert.loss.loss <= point.epsilon
    assert cert.loss.loss <= cert.loss.seed004_bound


@pytest.mark.parametrize("eps", [0.1, 1.0, 2.0])
def test_loss_is_tight_for_full_sensitivity_pairs(eps: float) -> None:
    """Inputs one sensitivity apart spend the budget: ε − 1e-13 < loss < ε (γ costs ~3.5e-15)."""
    loss = privacy_loss(SnappingMechanism(eps, 1.0, -10.0, 10.0), 0.0, 1.0)
    assert eps - 1e-13 < loss.loss < eps
    assert loss.certified


def test_loss_is_symmetric() -> None:
    mech = SnappingMechanism(0.5, 1.0, 0.0, 100.0)
    a, b = privacy_loss(mech, 30.0, 31.0), privacy_loss(mech, 31.0, 30.0)
    assert a.loss == b.loss and a.delta == b.delta


def test_without_gamma_the_loss_exceeds_epsilon(monkeypatch: pytest.MonkeyPatch) -> None:
    """The experiment behind the γ = 2**-48 departure from DESIGN §2.3 (docs/verification.md)."""
    monkeypatch.setattr(parameters_module, "UNIFORM_GRANULARITY", mpq(0))
    params = compute_parameters(1.0, 1.0, -8.0, 8.0)
    loss = privacy_loss_for(params, 0.0, 1.0)
    assert loss.loss > 1 and not loss.certified
    assert loss.hockey_stick > 0


def test_wide_bounds_loss_above_epsilon_only_inside_the_stated_delta() -> None:
    """B̃ = 380 > 354: the deep tail (subnormal U*) breaks the ε bound, within the library's δ."""
    cert = certify(GridPoint(1.0, -380.0, 380.0, -380.0, -379.0))
    assert cert.loss.loss > 1 and not cert.pure
    assert 0 < cert.loss.hockey_stick <= cert.loss.parameters.delta
    assert cert.loss.delta > 0  # an output reachable from one input only
    assert cert.passed


def test_disjoint_supports_at_huge_epsilon() -> None:
    """ε = 1500: |Y| <= 744.5·λ′ < 1/2 so the two supports are disjoint: δ = 1, and so says the
    library."""
    cert = certify(GridPoint(1500.0, -1.0, 1.0, 0.0, 1.0))
    assert cert.loss.delta == 1
    assert cert.loss.parameters.delta == 1
    assert cert.passed


@pytest.mark.parametrize(
    "point",
    [
        GridPoint(1.0, -353.0, 353.0, -353.0, -352.0),
        GridPoint(1.0, -360.0, 360.0, 359.0, 360.0),
        GridPoint(500.0, -1.0, 1.0, 0.0, 1.0),
        GridPoint(700.0, -1.0, 1.0, 0.0, 1.0),
        GridPoint(0.001, -1e6, 1e6, -1e6, -1e6 + 1),
    ],
    ids=str,
)
def test_library_delta_bound_covers_the_exact_delta(point: GridPoint) -> None:
    cert = certify(point)
    assert cert.loss.delta <= cert.loss.parameters.delta
    assert cert.passed


def test_bad_neighbour_is_a_parameter_error() -> None:
    with pytest.raises(ParameterError, match="`neighbour`"):
        privacy_loss(SnappingMechanism(1.0, 1.0, 0.0, 1.0), 0.0, float("nan"))
