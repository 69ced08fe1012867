"""The exact privacy loss of the snapping mechanism between two inputs, and its certificate (§6).

From the two exact distributions P = P(·|x) and Q = P(·|x′) (exact rationals):

* ``loss``: max over outputs possible under both of |ln P(o) − ln Q(o)|, evaluated in MPFR at
  :data:`LOSS_PRECISION` bits (rounded to nearest; relative error <= 2**-250, far below anything
  reported), with the output where it is reached;
* ``delta``: the mass of outputs possible under one input and impossible under the other (the
  larger of the two directions), exactly;
* ``hockey_stick``: δ(ε) = max over the two directions of Σ_o max(0, P(o) − e^ε·Q(o)), the
  smallest δ for which the pair satisfies (ε, δ)-DP at the claimed ε — an upper bound, computed
  with e^ε rounded down;
* ``certified``: whether P(o) <= e^ε·Q(o) and Q(o) <= e^ε·P(o) for every o (so δ = 0 too) —
  decided exactly, by comparing each rational ratio with e^ε rounded down at high precision.
"""

from __future__ import annotations

from collections.abc import Callable

from msgspec import Struct

from snapdp import _exact
from snapdp._exact import mpfr, mpq
from snapdp._validation import Number, check_value
from snapdp.mechanism import SnappingMechanism
from snapdp.parameters import SnappingParameters
from snapdp.snapping import normalize
from snapdp.verify.distribution import ExactDistribution, OutputLabel, exact_distribution_for

__all__ = ["LOSS_PRECISION", "PrivacyLoss", "compare_distributions", "privacy_loss"]

LOSS_PRECISION = 256


class PrivacyLoss(Struct, frozen=True):
    """The exact privacy loss between two inputs (see the module docstring)."""

    parameters: SnappingParameters
    value: float
    neighbour: float
    loss: mpfr
    worst_output: OutputLabel | None
    worst_output_value: float | None
    delta: mpq
    hockey_stick: mpfr
    certified: bool
    seed004_bound: mpfr
    outputs: int
    evaluations: int
    claim_epsilon: mpq | None = None
    claim_sensitivity: mpq | None = None

    @property
    def epsilon(self) -> mpq:
        """The ε claimed, exactly: the mechanism's requested ε (for a rescaled mechanism the ε it
        was asked for, not the ε_r it runs §2 with; docs/mechanism.md)."""
        return self.parameters.epsilon if self.claim_epsilon is None else self.claim_epsilon

    @property
    def sensitivity(self) -> mpq:
        """The Δ of the claim (the requested sensitivity; Δ_r = r·Δ is ``parameters``')."""
        if self.claim_sensitivity is None:
            return self.parameters.sensitivity
        return self.claim_sensitivity

    @property
    def margin(self) -> mpfr:
        """ε − loss (positive when the loss is below the claim)."""
        ctx = _exact.nearest_context(LOSS_PRECISION)
        return ctx.sub(mpfr(self.epsilon, LOSS_PRECISION), self.loss)

    def summary(self) -> dict[str, object]:
        """A JSON-ready summary (floats and strings)."""
        p = self.parameters
        return {
            "epsilon": float(self.epsilon),
            "sensitivity": float(self.sensitivity),
            "mechanism_epsilon": float(p.epsilon),
            "mechanism_sensitivity": float(p.sensitivity),
            "lower": float(p.lower),
            "upper": float(p.upper),
            "value": self.value,
            "neighbour": self.neighbour,
            "precision": p.precision,
            "epsilon_prime": float(p.epsilon_prime),
            "scale": float(p.scale),
            "Lambda": float(p.grid),
            "bound_scaled": float(p.bound),
            "outputs": self.outputs,
            "evaluations": self.evaluations,
            "loss": float(self.loss),
            "loss_digits": f"{self.loss:.30f}",
            "epsilon_minus_loss": float(self.margin),
            "worst_output": self.worst_output_value,
            "delta": float(self.delta),
            "hockey_stick_delta": float(self.hockey_stick),
            "delta_bound_library": float(p.delta),
            "seed004_bound": f"ε + {float(mpq(self.seed004_bound) - p.epsilon):.3g}",
            "loss_at_most_epsilon": self.certified,
        }


def _exp_bounds(epsilon: mpq) -> tuple[mpq, mpq]:
    """(e^ε rounded down, e^ε rounded up) at LOSS_PRECISION bits, as exact rationals."""
    down = _exact.directed_context(LOSS_PRECISION, up=False)
    up = _exact.directed_context(LOSS_PRECISION, up=True)
    lo = down.exp(_exact.round_down(epsilon, LOSS_PRECISION))
    hi = up.exp(_exact.round_up(epsilon, LOSS_PRECISION))
    return mpq(lo), mpq(hi)


def seed004_bound(params: SnappingParameters) -> mpfr:
    """Seed 004's bound on the loss, ε + 12·B̃·ε·η + 2η, rounded up."""
    eta = params.eta
    e = params.epsilon
    return _exact.round_up(e + 12 * params.bound * e * eta + 2 * eta, LOSS_PRECISION)


def compare_distributions(
    first: ExactDistribution,
    second: ExactDistribution,
    value: float,
    neighbour: float,
    claim: tuple[mpq, mpq] | None = None,
) -> PrivacyLoss:
    """The privacy loss between two exact distributions of the same mechanism, certified
    against ``claim`` = (ε, Δ) (default: the parameters' own)."""
    params = first.parameters
    claim_eps = params.epsilon if claim is None else claim[0]
    exp_lo, _ = _exp_bounds(claim_eps)
    ctx = _exact.nearest_context(LOSS_PRECISION)
    labels = set(first.masses) | set(second.masses)
    worst: OutputLabel | None = None
    worst_ratio = mpq(1)
    only_first = mpq(0)
    only_second = mpq(0)
    excess_first = mpq(0)  # Σ max(0, P − e^ε Q), with e^ε rounded down: an upper bound
    excess_second = mpq(0)
    certified = True
    for label in labels:
        p = first.masses.get(label, mpq(0))
        q = second.masses.get(label, mpq(0))
        if p == 0 and q == 0:
            continue
        if q == 0:
            only_first += p
            excess_first += p
            continue
        if p == 0:
            only_second += q
            excess_second += q
            continue
        ratio = p / q if p >= q else q / p
        if ratio > worst_ratio:
            worst_ratio, worst = ratio, label
        if ratio > exp_lo:
            # not proven <= e^ε (a ratio in (e^ε↓, e^ε↑] would need more precision; the margins
            # seen are ~1e-15, far above 2**-250, so in practice this means a ratio above e^ε)
            certified = False
        excess_first += max(mpq(0), p - exp_lo * q)
        excess_second += max(mpq(0), q - exp_lo * p)
    if only_first > 0 or only_second > 0:
        certified = False  # an output possible under one input only: infinite loss there
    loss = ctx.log(mpfr(worst_ratio, LOSS_PRECISION)) if worst is not None else mpfr(0)
    hockey = _exact.round_up(max(excess_first, excess_second), 64)
    worst_value = None
    if worst is not None:
        worst_value = first.outputs.get(worst, second.outputs.get(worst))
    return PrivacyLoss(
        parameters=params,
        value=value,
        neighbour=neighbour,
        loss=loss,
        worst_output=worst,
        worst_output_value=worst_value,
        delta=max(only_first, only_second),
        hockey_stick=hockey,
        certified=certified,
        seed004_bound=seed004_bound(params),
        outputs=len(labels),
        evaluations=first.evaluations + second.evaluations,
        claim_epsilon=None if claim is None else claim[0],
        claim_sensitivity=None if claim is None else claim[1],
    )


def privacy_loss_for(
    params: SnappingParameters,
    value: Number,
    neighbour: Number,
    progress: Callable[[int], None] | None = None,
    claim: tuple[mpq, mpq] | None = None,
) -> PrivacyLoss:
    """:func:`privacy_loss` from parameters (e.g. an experiment's modified parameters)."""
    v = check_value("value", value)
    w = check_value("neighbour", neighbour)
    first = exact_distribution_for(params, normalize(params, v), progress)
    second = exact_distribution_for(params, normalize(params, w), progress)
    return compare_distributions(first, second, float(v), float(w), claim)


def privacy_loss(
    mechanism: SnappingMechanism,
    value: Number,
    neighbour: Number,
    progress: Callable[[int], None] | None = None,
) -> PrivacyLoss:
    """The exact privacy loss of ``mechanism`` between ``value`` and ``neighbour`` (DESIGN §6).

    The pair need not be neighbours; for |value − neighbour| <= sensitivity the result is what
    the ε claim covers. See the module docstring for what each field means and how it is exact.
    The loss is certified against the mechanism's requested ε (for a rescaled mechanism, not
    the ε_r it runs DESIGN §2 with; docs/mechanism.md, "No power-of-two penalty").
    """
    claim = (mpq(mechanism.epsilon), _exact.exact_rational(mechanism.sensitivity))
    return privacy_loss_for(mechanism.parameters, value, neighbour, progress, claim)
