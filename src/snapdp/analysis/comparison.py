"""Snapping against the textbook Laplace mechanism (seed 000), computed exactly.

**The distance |M_L − M_S| (seed 000 §3.1).** Both mechanisms are driven by one draw (S, U):
M_L = x + λ·S·ln U with λ = Δ/ε, and M_S the snapping mechanism, whose noise is Y = λ′·S·ln U
(λ′ = 1/ε′ > λ by a relative ~2**-48, so the textbook noise is ρ·Y with ρ = λ/λ′ < 1). In
sensitivity units, with x̃ = clamp(x):

- case 1, x inside the bounds and the snapped value kΛ inside: dist = |x + ρY − kΛ|. The seed
  bounds it by Λ/2 and claims Λ/2 < λ. Λ/2 < λ′ always, but Λ/2 < λ fails when a power of two
  lies in [λ, λ′) — in particular when 1/ε is a power of two (ε = 1: Λ = 2, Λ/2 = λ). The exact
  supremum is Λ/2 plus a coupling term (1 − ρ)·|x − kΛ| from λ′ ≠ λ.
- case 2, x outside, kΛ inside: dist < |x| − B̃ + Λ/2 (seed: < |x| − B̃ + λ, same caveat), plus
  the coupling term.
- cases 3 and 4, the outer clamp binds (x inside / outside): dist = |x + ρY ∓ B̃| is unbounded;
  we compute its probability, its conditional expectation and conditional tails in closed form
  (integrals of piecewise-linear functions against the Laplace density, :mod:`._laplace`).

**Utility ratios.** For a grid of ε, B/λ (B the half-width of [lower, upper]) and the value's
position in [lower, upper], the ratios snapping/Laplace of MAE, RMSE and the 95%/99% error
quantiles, each computed exactly (:mod:`.metrics`). They show the cost of Λ >= λ′: the snapped
error includes a rounding to a grid up to 2λ wide, and the grid doubles when 1/ε crosses a power
of two from below (λ′ > λ, so at 1/ε = 2**m exactly Λ = 2**(m+1)).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from msgspec import Struct

from snapdp import _exact
from snapdp._exact import mpfr, mpq
from snapdp._records import as_dict
from snapdp._validation import Number, check_finite, check_positive_finite, check_value
from snapdp.analysis import _laplace
from snapdp.analysis.distribution import (
    DEFAULT_PRECISION,
    DEFAULT_TAIL_BITS,
    grid_limits,
    interior_window,
    output_distribution,
)
from snapdp.analysis.metrics import (
    ErrorMetrics,
    clamped_laplace_metrics,
    error_metrics,
    laplace_metrics,
    mixture_metrics,
)
from snapdp.errors import ParameterError
from snapdp.parameters import SnappingParameters
from snapdp.rescaling import mechanism_parameters
from snapdp.snapping import grid_index, noise, normalize

__all__ = [
    "DEFAULT_DISTANCE_MULTIPLES",
    "RATIO_METRICS",
    "DistanceCase",
    "UtilityPoint",
    "coupled_distance",
    "distance_cases",
    "utility_grid",
    "utility_point",
]

DEFAULT_DISTANCE_MULTIPLES = (0.5, 1.0, 2.0, 5.0, 10.0)  # tail thresholds, in units of λ·Δ


class DistanceCase(Struct, frozen=True):
    """One of seed 000's four cases for a fixed true value (data units throughout).

    ``probability``: P(case). ``expected_distance``: E[dist | case] (None if P = 0).
    ``tail``: {a: P(dist > a | case)} for the thresholds a. For cases 1 and 2: ``seed_bound`` (Λ/2,
    resp. |x| − B̃ + Λ/2, times Δ), ``seed_claim`` (the seed's looser λ form), and ``supremum``, the
    exact supremum of dist over the case under the coupling (λ′ ≠ λ adds a tiny term).
    """

    case: int
    probability: float
    expected_distance: float | None
    tail: dict[float, float]
    seed_bound: float | None = None
    seed_claim: float | None = None
    supremum: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (tail keys as strings)."""
        d = as_dict(self)
        d["tail"] = {repr(k): v for k, v in self.tail.items()}
        return d


def _clamp_pieces(params: SnappingParameters, xt: mpq) -> tuple[mpq, mpq, tuple[int, int]]:
    """(s₋, s₊, (k₋, k₊)): the output is −B̃ iff Y < s₋, B̃ iff Y >= s₊ (scaled units)."""
    k_minus, k_plus = grid_limits(params)
    half = params.grid / 2
    return k_minus * params.grid + half - xt, k_plus * params.grid - half - xt, (k_minus, k_plus)


def distance_cases(
    params: SnappingParameters,
    value: Number,
    *,
    multiples: Sequence[float] = DEFAULT_DISTANCE_MULTIPLES,
    precision: int = DEFAULT_PRECISION,
    tail_bits: int = DEFAULT_TAIL_BITS,
) -> tuple[DistanceCase, DistanceCase]:
    """The two cases that can occur for ``value``: (1, 3) inside the bounds, (2, 4) outside.

    Tail thresholds are ``multiples`` of λ·Δ (λ = 1/ε in sensitivity units). Interior cells
    beyond the distribution's window (mass < 2**-tail_bits) are left out.
    """
    v = check_value("value", value)
    if isinstance(v, float) and math.isinf(v):
        raise ParameterError(f"`value` must be finite for the distance analysis, not {v!r}")
    sens = params.sensitivity
    x = (_exact.exact_rational(v) - params.center) / sens
    xt = normalize(params, v)
    inside = x == xt
    lam_grid = params.grid
    half = lam_grid / 2
    lam = 1 / params.epsilon  # textbook λ in sensitivity units, exact
    thresholds = [mpq(_exact.exact_rational(float(m))) * lam for m in multiples]
    s_minus, s_plus, (k_minus, k_plus) = _clamp_pieces(params, xt)
    with _exact.working_precision(precision):
        s = mpfr(params.scale)
        rho = mpfr(lam) / s
        # outer clamp binding: dist = |(x ∓ B̃) + ρY| on Y >= s₊ / Y < s₋
        clamp_parts = [(x - params.bound, s_plus, None), (x + params.bound, None, s_minus)]
        p_clamp = _laplace.sf(s_plus, s) + _laplace.cdf(s_minus, s)
        e_clamp = sum(
            (_laplace.abs_linear_expectation(a, rho, lo, hi, s) for a, lo, hi in clamp_parts),
            mpfr(0),
        )
        t_clamp = [
            sum(
                (_laplace.abs_linear_tail(a, rho, t, lo, hi, s) for a, lo, hi in clamp_parts),
                mpfr(0),
            )
            for t in thresholds
        ]
        # interior cells: dist = |(x − kΛ) + ρY| on [kΛ − Λ/2 − x̃, kΛ + Λ/2 − x̃)
        reach = max(abs(x) + params.bound, params.bound * 2)
        k_lo, k_hi = interior_window(params, xt, reach, tail_bits)
        p_in = mpfr(0)
        e_in = mpfr(0)
        t_in = [mpfr(0) for _ in thresholds]
        for k in range(k_lo, k_hi + 1):
            lo, hi = k * lam_grid - half - xt, k * lam_grid + half - xt
            p_in += _laplace.mass(lo, hi, s)
            e_in += _laplace.abs_linear_expectation(x - k * lam_grid, rho, lo, hi, s)
            for i, t in enumerate(thresholds):
                t_in[i] += _laplace.abs_linear_tail(x - k * lam_grid, rho, t, lo, hi, s)
        supremum = None
        if k_minus + 1 <= k_plus - 1:
            sup = mpfr(0)
            for k in (k_minus + 1, k_plus - 1):
                for end in (-half, half):
                    sup = max(sup, abs((x - k * lam_grid) + rho * (k * lam_grid + end - xt)))
            supremum = float(_exact.round_up(mpq(sup) * sens, 53))
    if inside:
        seed_bound, seed_claim = half, lam
    else:
        seed_bound, seed_claim = abs(x) - params.bound + half, abs(x) - params.bound + lam
    interior = DistanceCase(
        case=1 if inside else 2,
        probability=float(p_in),
        expected_distance=float(e_in / p_in * sens) if p_in > 0 else None,
        tail={
            float(m): (float(t / p_in) if p_in > 0 else 0.0)
            for m, t in zip(multiples, t_in, strict=True)
        },
        seed_bound=float(seed_bound * sens),
        seed_claim=float(seed_claim * sens),
        supremum=supremum,
    )
    clamped = DistanceCase(
        case=3 if inside else 4,
        probability=float(p_clamp),
        expected_distance=float(e_clamp / p_clamp * sens) if p_clamp > 0 else None,
        tail={
            float(m): (float(t / p_clamp) if p_clamp > 0 else 0.0)
            for m, t in zip(multiples, t_clamp, strict=True)
        },
    )
    return interior, clamped


def coupled_distance(
    params: SnappingParameters, value: Number, sign: int, u: float, *, precision: int = 256
) -> tuple[int, mpfr]:
    """(case, |M_L − M_S|) for one draw (S, U*), the snapped output computed by the mechanism's
    own arithmetic (:mod:`snapdp.snapping`) and M_L = x + λ·S·ln U at ``precision`` bits.

    In sensitivity-1 units, before the final rounding of either output. For simulation checks.
    """
    x = (_exact.exact_rational(check_value("value", value)) - params.center) / params.sensitivity
    xt = normalize(params, value)
    y = noise(params, sign, u)
    k = grid_index(params, xt, y)
    snapped = k * params.grid
    clamped = not -params.bound < snapped < params.bound
    out = min(max(snapped, -params.bound), params.bound)
    case = (3 if clamped else 1) if x == xt else (4 if clamped else 2)
    with _exact.working_precision(precision):
        y_l = mpfr(1 / params.epsilon) * _exact.log(mpfr(u)) * sign
        return case, abs(x + y_l - out)


class UtilityPoint(Struct, frozen=True):
    """Snapping against Laplace at one (ε, bounds, value). Data units; ratios snapping/Laplace."""

    epsilon: float
    sensitivity: float
    lower: float
    upper: float
    value: float
    b_over_lambda: float
    position: float
    grid_over_lambda: float
    binding_probability: float
    snapping: ErrorMetrics
    laplace: ErrorMetrics
    laplace_clamped: ErrorMetrics
    offsets: int = 1

    @property
    def ratios(self) -> dict[str, float]:
        """MAE, RMSE, q95, q99 of snapping over the textbook (unclamped) Laplace mechanism's."""
        return _ratios(self.snapping, self.laplace)

    @property
    def ratios_clamped(self) -> dict[str, float]:
        """The same over Laplace clamped to [lower, upper] (NaN where the baseline is 0)."""
        return _ratios(self.snapping, self.laplace_clamped)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, with the ratios."""
        d = as_dict(self)
        d["ratios"] = self.ratios
        d["ratios_clamped"] = self.ratios_clamped
        return d


RATIO_METRICS = ("mae", "rmse", "q95", "q99")


def _ratios(num: ErrorMetrics, den: ErrorMetrics) -> dict[str, float]:
    out = {}
    for name in RATIO_METRICS:
        d = getattr(den, name)
        out[name] = getattr(num, name) / d if d > 0 else math.nan
    return out


def utility_point(
    epsilon: Number,
    sensitivity: Number,
    lower: Number,
    upper: Number,
    value: Number,
    *,
    offsets: int = 1,
    precision: int = DEFAULT_PRECISION,
    rescale: bool = False,
) -> UtilityPoint:
    """Exact metrics of snapping and closed-form metrics of Laplace for one setting.

    ``rescale``: analyse the mechanism as ``SnappingMechanism`` runs it by default (rescaled,
    docs/mechanism.md "Departure 3"); the default False analyses DESIGN's mechanism on (ε, Δ).

    With ``offsets`` = K > 1 the snapping metrics are those of the equal mixture over the K true
    values value + ((j + ½)/K − ½)·Λ·Δ, j < K (clamped into [lower, upper]): a value known only to
    within one grid cell, so the result no longer depends on where ``value`` falls on the grid.
    The binding probability is the mixture's too.
    """
    eps = check_positive_finite("epsilon", epsilon)
    sens = check_positive_finite("sensitivity", sensitivity)
    if not isinstance(offsets, int) or offsets < 1:
        raise ParameterError(f"`offsets` must be an int >= 1, not {offsets!r}")
    if not check_finite("lower", lower) < check_finite("upper", upper):
        raise ParameterError(f"`lower` must be < `upper`, not lower={lower!r}, upper={upper!r}")
    try:
        params = mechanism_parameters(eps, sens, lower, upper, rescale=rescale)
    except ValueError as exc:
        raise ParameterError(str(exc)) from None
    x = _exact.exact_rational(check_value("value", value))
    if offsets == 1:
        values = [x]
    else:
        cell = params.grid * params.sensitivity
        values = [
            min(
                max(x + (mpq(2 * j + 1, 2 * offsets) - mpq(1, 2)) * cell, params.lower),
                params.upper,
            )
            for j in range(offsets)
        ]
    dists = [output_distribution(params, _as_number(v), precision=precision) for v in values]
    with _exact.working_precision(precision):
        binding = sum((d.binding_probability for d in dists), mpfr(0)) / len(dists)
    lam = params.sensitivity / params.epsilon
    half_width = (params.upper - params.lower) / 2
    return UtilityPoint(
        epsilon=float(eps),
        sensitivity=float(sens),
        lower=float(lower),
        upper=float(upper),
        value=float(value),
        b_over_lambda=float(half_width / lam),
        position=float((x - params.lower) / (2 * half_width)),
        grid_over_lambda=float(params.grid * params.sensitivity / lam),
        binding_probability=float(binding),
        snapping=error_metrics(dists[0]) if offsets == 1 else mixture_metrics(dists),
        laplace=laplace_metrics(eps, sens),
        laplace_clamped=clamped_laplace_metrics(
            eps, sens, lower, upper, [_exact.rational_to_float(v) for v in values]
        ),
        offsets=offsets,
    )


def _as_number(q: mpq) -> Number:
    """An mpq as a Fraction (exact), accepted by the public checks."""
    return Fraction(int(q.numerator), int(q.denominator))


def utility_grid(
    epsilons: Sequence[float],
    b_over_lambdas: Sequence[float],
    positions: Sequence[float],
    *,
    sensitivity: float = 1.0,
    center: float = 0.0,
    offsets: int = 1,
    precision: int = DEFAULT_PRECISION,
) -> list[UtilityPoint]:
    """:func:`utility_point` over a grid: bounds center ∓ (B/λ)·λ with λ = Δ/ε, and the value at
    lower + position·(upper − lower). Order: ε outermost, then B/λ, then position."""
    for t in positions:
        if not 0 <= t <= 1:
            raise ParameterError(f"`positions` must lie in [0, 1], not {t!r}")
    points = []
    for eps in epsilons:
        lam = sensitivity / eps
        for r in b_over_lambdas:
            half = float(check_positive_finite("b_over_lambda", r)) * lam
            lo, hi = center - half, center + half
            for t in positions:
                points.append(
                    utility_point(
                        eps,
                        sensitivity,
                        lo,
                        hi,
                        lo + t * (hi - lo),
                        offsets=offsets,
                        precision=precision,
                    )
                )
    return points
