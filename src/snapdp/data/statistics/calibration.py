"""L1 calibration of a grouped release, justified by an exact per-shift certificate (DESIGN §8.4).

A histogram whose cells a privacy unit moves by d₁, …, d_m (Σdᵢ <= Δ₁, at most m cells) can give
*every* cell noise for Δ₁ at (almost) the full ε instead of ε/m, provided each cell's mechanism
loses at most ε·d/Δ₁ (plus a tiny additive slack) for a shift d <= Δ₁. For the ideal Laplace
mechanism this is a theorem; for the implementation it has to be checked, which
:func:`shift_certificate` does with the exact verifier (:mod:`snapdp.verify`), and
:func:`calibrate_l1` turns into the ε each cell's mechanism gets. See docs/data.md, "Calibrated to
the whole table (L1)".

Both functions depend only on public parameters (never on data), are deterministic and are
cached per exact parameter set.
"""

from __future__ import annotations

import functools
from fractions import Fraction

from msgspec import Struct

from snapdp._rational import shown_number
from snapdp._validation import check_count, check_epsilon, check_finite, check_positive_finite
from snapdp.errors import ParameterError
from snapdp.rescaling import rescaling_for
from snapdp.shift import (
    EXHAUSTIVE_INPUTS,
    SLACK_BOUND,
    SMALL_SENSITIVITY,
    ShiftCertificate,
    ShiftLoss,
    _shift_certificate,
    shift_certificate,
)

__all__ = [
    "EXHAUSTIVE_INPUTS",
    "SLACK_BOUND",
    "SMALL_SENSITIVITY",
    "Calibration",
    "ShiftCertificate",
    "ShiftLoss",
    "calibrate_l1",
    "shift_certificate",
]


class Calibration(Struct, frozen=True):
    """How each cell of a grouped release is calibrated (see :func:`calibrate_l1`).

    Attributes:
        epsilon: the ε each cell's mechanism gets (exact).
        sensitivity: the sensitivity each cell's mechanism gets (Δ₁ when certified; when not,
            the caller uses its per-cell sensitivity and this field repeats Δ₁ for reference).
        certified: True: every cell gets (``epsilon``, Δ₁); False: fall back to ε/m per cell
            with the per-cell sensitivity (today's rule) and show ``note``.
        slack: the per-cell slack subtracted (m·slack in all), exact; 0 when not certified.
        delta: the δ of the whole grouped release under this calibration (m·δ per cell), exact.
        groups_touched: m, the number of cells one unit can change.
        note: a public, data-free sentence for the result when not certified (else None).
    """

    epsilon: Fraction
    sensitivity: Fraction
    certified: bool
    slack: Fraction
    delta: Fraction
    groups_touched: int
    note: str | None


def calibrate_l1(
    epsilon: object,
    l1_sensitivity: object,
    lower: object,
    upper: object,
    groups_touched: int,
) -> Calibration:
    """The ε for every cell of a grouped release with L1 sensitivity Δ₁ (DESIGN §8.4).

    Composition argument: a unit moves cell i by dᵢ with Σdᵢ <= Δ₁ and touches at most m =
    ``groups_touched`` cells. Each cell's mechanism (Δ₁, ε_cal, [lower, upper]) loses at most
    ε_cal·dᵢ/Δ₁ + s for its shift (the certificate, s = its ``slack_bound``), so the whole release
    loses at most Σ(ε_cal·dᵢ/Δ₁ + s) <= ε_cal + m·s <= ε with ε_cal = ε − m·s, and its δ is at most
    m times the per-cell δ (0 in the usual case). The certificate is computed for the final
    (ε_cal, Δ₁, bounds) — the slack could depend on ε_cal, so this iterates until
    ε_cal + m·s(ε_cal) <= ε (at most 4 rounds).

    If no certificate can be obtained (the loss is not <= linear + :data:`SLACK_BOUND`, ε too
    small, m·s >= ε), returns ``certified=False`` with a public note: the caller then gives each
    cell ε/m with its own per-cell sensitivity. Data-free and cached. See docs/data.md.
    """
    eps = check_epsilon("epsilon", epsilon)
    delta_1 = Fraction(check_positive_finite("l1_sensitivity", l1_sensitivity))
    lo = Fraction(check_finite("lower", lower))
    hi = Fraction(check_finite("upper", upper))
    if not lo < hi:
        raise ParameterError(
            f"`lower` must be < `upper`, not {shown_number(lo)} >= {shown_number(hi)}",
            parameter="lower",
        )
    return _calibrate_l1(eps, delta_1, lo, hi, check_count("groups_touched", groups_touched))


def presumed_l1(
    epsilon: Fraction, l1_sensitivity: Fraction | int, lower: Fraction | int,
    upper: Fraction | int, groups_touched: int,
) -> Calibration:  # fmt: skip
    """What :func:`calibrate_l1` returns when its first certificate holds, without computing it.

    For the planner's search over ε only (docs/plans.md): each step of a bisection would
    otherwise run the exact verifier. It is never used for a release, and the planner checks its
    final choice with :func:`calibrate_l1` (re-planning with certificates if that does not hold).
    """
    eps, m = Fraction(epsilon), groups_touched
    eps_cal = eps - m * SLACK_BOUND
    if eps_cal <= 0:
        note = "L1 calibration not certified for these parameters (the slack m·s is not below ε)"
        return Calibration(eps / m, Fraction(l1_sensitivity), False, Fraction(0), Fraction(0), m,
                           note)  # fmt: skip
    return Calibration(
        eps_cal, Fraction(l1_sensitivity), True, SLACK_BOUND, Fraction(0), m, "presumed"
    )


def _cell_certificate(
    eps: Fraction, delta_1: Fraction, lo: Fraction, hi: Fraction
) -> ShiftCertificate:
    """The certificate of the mechanism each cell gets: ``SnappingMechanism(eps, Δ₁, lo, hi)``,
    which rescales (docs/mechanism.md, "No power-of-two penalty"). Rescaled, its certificate is
    for the claim (eps − s)·d/Δ₁ + s' (s' <= s), which implies eps·d/Δ₁ + s'; else today's."""
    resc = rescaling_for(eps, delta_1, lo, hi)
    if resc.certificate is not None:
        return resc.certificate
    return _shift_certificate(eps, delta_1, lo, hi, delta_1, None)


@functools.lru_cache(maxsize=256)
def _calibrate_l1(
    eps: Fraction, delta_1: Fraction, lo: Fraction, hi: Fraction, m: int
) -> Calibration:
    def fallback(note: str) -> Calibration:
        return Calibration(eps / m, delta_1, False, Fraction(0), Fraction(0), m, note)

    prefix = "L1 calibration not certified for these parameters"
    suffix = "; each group gets ε/m with its own sensitivity instead (see docs/data.md)"
    slack = SLACK_BOUND
    for _ in range(4):
        eps_cal = eps - m * slack
        if eps_cal <= 0:
            return fallback(f"{prefix} (the slack m·s is not below ε){suffix}")
        cert = _cell_certificate(eps_cal, delta_1, lo, hi)
        if not cert.certified:
            return fallback(f"{prefix} ({cert.note}){suffix}")
        if eps_cal + m * cert.slack_bound <= eps:
            return Calibration(eps_cal, delta_1, True, slack, m * cert.delta, m, None)
        slack = cert.slack_bound
    return fallback(f"{prefix} (the slack did not settle){suffix}")
