"""No power-of-two penalty: a public rescaling of (ε, Δ) before DESIGN §2 (docs/mechanism.md).

DESIGN §2 rounds to a grid of Λ = the smallest power of two >= λ′ ≈ 1/ε in units of Δ, so the
grid in the data's units, Δ·Λ, lies between λ = Δ/ε and 2λ; when 1/ε is just above a power of two
(ε = 1, 0.5, 2, …, exactly the values people type) it is ≈ 2λ and the stated ± is 1.3× that of
Laplace noise alone. The mechanism itself is kept exactly as §2 defines it; what changes is the
pair (ε, Δ) handed to it:

* ε_c = ε − s, with s = :data:`snapdp.shift.SLACK_BOUND` (2**-49), the additive slack the
  per-shift certificate allows;
* L = ⌊log2(1/ε_c)⌋, so ρ = 1/(ε_c·2**L) lies in [1, 2);
* r = m/16 for the smallest integer m >= 16·ρ that works (Δ_r = r·Δ rounded up to a double
  when Δ is a double and r·Δ is not, so that the vectorised path applies; r = Δ_r/Δ exactly);
* the mechanism runs §2 with sensitivity Δ_r = r·Δ and ε_r = r·ε_c. Its λ′_r ≈ 1/(r·ε_c) <= 2**L
  (checked on the exact parameters: ``lambda_exponent == L``), so its grid in the data's units is
  Δ_r·2**L = Δ·m/(16·ρ)·(1/ε_c) <= (1 + 1/16)·Δ/ε_c, and its noise Δ_r·λ′_r ≈ Δ/ε, as before.

Privacy: a neighbour moves the input by d <= Δ = Δ_r/r, a fraction of the mechanism's
sensitivity. The per-shift certificate (:func:`snapdp.shift.shift_certificate`, the exact
verifier) checks that this mechanism loses at most (ε_r/Δ_r)·d + s' = ε_c·d/Δ + s' for every
shift d <= Δ, with s' <= s; so the loss for a neighbour is at most ε_c + s = ε, outside the
outputs of mass <= δ (the §2 δ of the rescaled parameters, which the mechanism states). When no
certificate can be had, or the rescaling would not shrink the grid, the mechanism runs on (ε, Δ)
as before: never an uncertified claim.

Everything here is a function of the public (ε, Δ, lower, upper), exact, deterministic and
cached: per process, and the certificates also on disk (:mod:`snapdp._certcache`;
docs/mechanism.md, "Certificates on disk").
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

from msgspec import Struct

from snapdp import _certcache, _exact
from snapdp._exact import mpq
from snapdp._validation import Number
from snapdp.parameters import SnappingParameters, compute_parameters
from snapdp.shift import SLACK_BOUND, ShiftCertificate

__all__ = [
    "DELTA_NEGLIGIBLE",
    "MAX_PRECISION",
    "RATIO_STEPS",
    "Rescaling",
    "mechanism_parameters",
    "rescaling_for",
]

RATIO_STEPS = 16
"""r is a multiple of 1/16 (when Δ·r is a double): the grid is at most 1/16 wider than λ, and
its outputs stay short binary fractions of Δ."""

MAX_PRECISION = 192
"""No rescaling when DESIGN's precision p exceeds this (B̃ above about 2**128): the certificate's
exact distributions at thousands of bits would take minutes; such bounds are never needed."""

DELTA_NEGLIGIBLE = mpq(1, 1 << 100)
"""The rescaling is not applied when it would raise the stated δ above max(today's δ, 2**-100).
δ > 0 only when ε·(upper − lower)/Δ approaches 700 (the noise's deep tail, where U* is
subnormal, reaches the bounds); the sensitivity r·Δ then costs δ. Below 2**-100 the difference is
dwarfed by the vectorised path's own 2**-80 (docs/fast-path.md)."""


class Rescaling(Struct, frozen=True):
    """The (ε, Δ) a mechanism for the claim (``epsilon``, ``sensitivity``) runs DESIGN §2 with.

    Attributes:
        epsilon, sensitivity: the claim: ε-DP (with the stated δ) for |f(D) − f(D′)| <= Δ.
        ratio: r >= 1, exact (1 when not applied).
        mechanism_epsilon: ε_r = r·(ε − ``slack``) (= ε when not applied), exact.
        mechanism_sensitivity: Δ_r = r·Δ (= Δ when not applied), exact.
        slack: s, subtracted from ε before rescaling (0 when not applied).
        applied: whether the mechanism runs on (ε_r, Δ_r).
        certified: ``applied`` rests on the exact per-shift certificate (False for a presumed
            rescaling, which only the planner's search over ε uses, and when not applied).
        note: why the rescaling is not applied (None when it is).
        certificate: the per-shift certificate (claim ε − s at Δ, mechanism (ε_r, Δ_r)) when
            applied and certified, else None.
    """

    epsilon: Fraction
    sensitivity: Fraction
    ratio: Fraction
    mechanism_epsilon: Fraction
    mechanism_sensitivity: Fraction
    slack: Fraction
    applied: bool
    certified: bool
    note: str | None
    certificate: ShiftCertificate | None = None


def rescaling_for(
    epsilon: Number,
    sensitivity: Number,
    lower: Number,
    upper: Number,
    *,
    presume_certified: bool = False,
) -> Rescaling:
    """The rescaling for already validated, exact parameters (module docstring).

    ``presume_certified``: skip the exact certificate and assume it holds — for the planner's
    search over ε only (each step would otherwise run the verifier); a release never uses it.
    """
    eps, sens, lo, hi = (_exact_fraction(v) for v in (epsilon, sensitivity, lower, upper))
    return _rescaling(eps, sens, lo, hi, presume_certified)


def mechanism_parameters(
    epsilon: Number,
    sensitivity: Number,
    lower: Number,
    upper: Number,
    *,
    rescale: bool = True,
    presume_certified: bool = False,
) -> SnappingParameters:
    """The exact parameters a :class:`~snapdp.SnappingMechanism` for (ε, Δ, bounds) runs with.

    Raises ValueError when DESIGN §2 refuses (ε, Δ) itself (ε′ <= 0), as compute_parameters does.
    """
    if rescale:
        resc = rescaling_for(
            epsilon, sensitivity, lower, upper, presume_certified=presume_certified
        )
        if resc.applied:
            return compute_parameters(
                resc.mechanism_epsilon, resc.mechanism_sensitivity, lower, upper
            )
    return compute_parameters(epsilon, sensitivity, lower, upper)


# --------------------------------------------------------------------------------------------


def _not_applied(eps: Fraction, sens: Fraction, note: str) -> Rescaling:
    return Rescaling(eps, sens, Fraction(1), eps, sens, Fraction(0), False, False, note)


def _exact_fraction(x: Number) -> Fraction:
    """A finite number (int, float, Fraction, mpq) exactly, as a Fraction of Python ints."""
    q = _exact.exact_rational(x)
    return Fraction(int(q.numerator), int(q.denominator))


def _fraction(q: mpq) -> Fraction:
    return Fraction(int(q.numerator), int(q.denominator))


def _is_double(q: Fraction) -> bool:
    f = _exact.rational_to_float(mpq(q.numerator, q.denominator))
    return math.isfinite(f) and Fraction(f) == q


def _floor_log2(q: Fraction) -> int:
    """⌊log2 q⌋ for q > 0, exactly."""
    e = _exact.ceil_log2(mpq(q.numerator, q.denominator))
    return e if Fraction(2) ** e == q else e - 1


def _candidates(eps_c: Fraction, sens: Fraction) -> list[tuple[Fraction, int]]:
    """(Δ_r, L) for m = ⌈16ρ⌉, …, 31, in increasing order of Δ_r (module docstring)."""
    level = _floor_log2(1 / eps_c)
    rho = 1 / (eps_c * Fraction(2) ** level)  # in [1, 2)
    first = math.ceil(RATIO_STEPS * rho)
    out: list[tuple[Fraction, int]] = []
    for m in range(first, 2 * RATIO_STEPS):
        sens_r = sens * Fraction(m, RATIO_STEPS)
        if _is_double(sens) and not _is_double(sens_r):
            sens_r = _fraction(mpq(_exact.round_up(mpq(sens_r.numerator, sens_r.denominator), 53)))
            if not _is_double(sens_r):
                continue
        out.append((sens_r, level))
    return out


@functools.lru_cache(maxsize=1024)
def _rescaling(
    eps: Fraction, sens: Fraction, lo: Fraction, hi: Fraction, presume: bool
) -> Rescaling:
    try:
        today = compute_parameters(eps, sens, lo, hi)
    except ValueError:
        return _not_applied(eps, sens, "the mechanism refuses these parameters")
    if today.precision > MAX_PRECISION:
        return _not_applied(eps, sens, "bounds too wide relative to Δ for a quick certificate")
    today_grid = _fraction(today.grid) * sens
    eps_c = eps - SLACK_BOUND
    if eps_c <= 0:
        return _not_applied(eps, sens, "ε is not above the slack 2**-49")
    for sens_r, level in _candidates(eps_c, sens):
        if sens_r * Fraction(2) ** level >= today_grid:
            break  # increasing in m: no later candidate shrinks the grid either
        ratio = sens_r / sens
        eps_r = ratio * eps_c
        try:
            params = compute_parameters(eps_r, sens_r, lo, hi)
        except ValueError:
            continue
        if params.lambda_exponent != level:
            continue  # λ′_r just above 2**L (the γ, η terms): the next m has room
        if params.delta > max(today.delta, DELTA_NEGLIGIBLE):
            return _not_applied(eps, sens, "rescaling would raise δ (ε·range/Δ near 700)")
        if presume:
            return Rescaling(eps, sens, ratio, eps_r, sens_r, SLACK_BOUND, True, False, None)
        cert = _certcache.certificate(eps_c, sens, lo, hi, sens_r, eps_r)  # disk-cached
        if not cert.certified:
            return _not_applied(eps, sens, f"no per-shift certificate ({cert.note})")
        return Rescaling(eps, sens, ratio, eps_r, sens_r, SLACK_BOUND, True, True, None, cert)
    return _not_applied(eps, sens, "the power-of-two grid is already within 1/16 of λ")
