"""Clamping bounds from a binding probability γ (DESIGN §3).

The analyst knows public data bounds [data_lower, data_upper] for the statistic and wants the
mechanism's bounds wide enough that the outer clamp binds with probability at most γ. In
sensitivity-1 units, with c the midpoint of the data bounds and B_data their half-width over Δ:

    B̃ = B_data + (Λ/2)·(1 + 2·ln(1/γ)),   then lower/upper = c ∓ Δ·B̃   (the ×Δ matters).

Why it is enough: for |x̃| <= B_data the output is clamped to B̃ only if x̃ + Y >= k₊Λ − Λ/2 >=
B̃ − Λ/2, so P(upper) <= ½·exp(−(B̃ − Λ/2 − x̃)/λ′), and likewise below; the two sum to at most
exp(−(B̃ − B_data − Λ/2)/λ′) = exp(−Λ·ln(1/γ)/λ′) = γ^{Λ/λ′} <= γ because Λ >= λ′ and γ < 1.
(One port wrote 1 − 2·ln(1 − γ), inverting γ; the prototype forgot the ×Δ.)

Λ itself depends on B̃ through p and ε′ (by a relative 2**-60 at most), so the bounds are
recomputed until Λ is stable, and the final parameters are checked against the inequality
B̃ − B_data − Λ/2 >= λ′·ln(1/γ) with directed rounding.
"""

from __future__ import annotations

import math

from snapdp import _exact
from snapdp._exact import mpfr, mpq
from snapdp._validation import Number, check_finite, check_positive_finite, check_probability
from snapdp.errors import ParameterError
from snapdp.parameters import SnappingParameters, compute_parameters

__all__ = ["binding_probability_bound", "bounds_for_binding_probability"]

_BITS = 160


def _params(epsilon: Number, sensitivity: Number, lo: Number, hi: Number) -> SnappingParameters:
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ParameterError(
            f"the widened bounds [{lo!r}, {hi!r}] exceed the largest double; narrower data "
            "bounds are needed"
        )
    try:
        return compute_parameters(epsilon, sensitivity, lo, hi)
    except ValueError as exc:
        raise ParameterError(str(exc)) from None


def binding_probability_bound(
    params: SnappingParameters, data_lower: Number, data_upper: Number
) -> float:
    """An upper bound on P(output is lower or upper) for every value in [data_lower, data_upper].

    exp(−(B̃ − B_data′ − Λ/2)/λ′), B_data′ = max |x̃| over the data bounds; 1 when the exponent is
    not negative. Rounded up.
    """
    lo_q = _exact.exact_rational(check_finite("data_lower", data_lower))
    hi_q = _exact.exact_rational(check_finite("data_upper", data_upper))
    if not lo_q <= hi_q:
        raise ParameterError(f"`data_lower` must be <= `data_upper`, not {lo_q} > {hi_q}")
    reach = max(abs(lo_q - params.center), abs(hi_q - params.center)) / params.sensitivity
    margin = params.bound - min(reach, params.bound) - params.grid / 2
    if margin <= 0:
        return 1.0
    down = _exact.directed_context(_BITS, up=False)
    up = _exact.directed_context(_BITS, up=True)
    exponent = down.div(_exact.round_down(margin, _BITS), _exact.round_up(params.scale, _BITS))
    return min(1.0, float(_exact.round_up(up.exp(-exponent), 53)))


def bounds_for_binding_probability(
    epsilon: Number,
    sensitivity: Number,
    data_lower: Number,
    data_upper: Number,
    gamma: float,
) -> tuple[float, float]:
    """(lower, upper) for the mechanism such that the clamp binds with probability <= ``gamma``
    for every true value in [data_lower, data_upper] (DESIGN §3). Rounded outward to doubles."""
    check_positive_finite("epsilon", epsilon)
    sens = check_positive_finite("sensitivity", sensitivity)
    g = check_probability("gamma", gamma)
    lo_q = _exact.exact_rational(check_finite("data_lower", data_lower))
    hi_q = _exact.exact_rational(check_finite("data_upper", data_upper))
    if not lo_q <= hi_q:
        raise ParameterError(
            f"`data_lower` must be <= `data_upper`, not data_lower={data_lower!r}, "
            f"data_upper={data_upper!r}"
        )
    delta = _exact.exact_rational(sens)
    center = (lo_q + hi_q) / 2
    b_data = (hi_q - lo_q) / (2 * delta)
    up = _exact.directed_context(_BITS, up=True)
    log_inv_gamma = up.log(up.div(1, mpfr(g)))
    # a first Λ from bounds at least as wide as the data's (any positive width will do)
    probe = max(b_data, mpq(1))
    params = _params(
        epsilon,
        sens,
        float(_exact.round_down(center - delta * probe, 53)),
        float(_exact.round_up(center + delta * probe, 53)),
    )
    for _ in range(8):
        grid = params.grid
        widened = b_data + grid / 2 * (1 + 2 * mpq(_exact.round_up(log_inv_gamma, _BITS)))
        lower = float(_exact.round_down(center - delta * widened, 53))
        upper = float(_exact.round_up(center + delta * widened, 53))
        params = _params(epsilon, sens, lower, upper)
        if params.grid <= grid and _condition_holds(params, lo_q, hi_q, log_inv_gamma):
            return lower, upper
    raise ParameterError(  # pragma: no cover - Λ can change at most once or twice
        "could not find stable bounds for the binding probability; please report this"
    )


def _condition_holds(params: SnappingParameters, lo: mpq, hi: mpq, log_inv_gamma: mpfr) -> bool:
    """B̃ − B_data′ − Λ/2 >= λ′·ln(1/γ), B_data′ = max |x̃| over the data bounds measured from the
    final (rounded) centre; the right side rounded up, the left side exact."""
    up = _exact.directed_context(_BITS, up=True)
    need = up.mul(_exact.round_up(params.scale, _BITS), log_inv_gamma)
    reach = max(abs(lo - params.center), abs(hi - params.center)) / params.sensitivity
    return bool(params.bound - reach - params.grid / 2 >= mpq(need))
