"""The exact parameters of the snapping mechanism (DESIGN §2.1–2.3, seed 001 §5).

Everything here is computed once per mechanism, exactly or with a stated rounding direction at
``precision`` bits; nothing passes through a double. The floats exposed by
:class:`~snapdp.SnappingMechanism` are roundings of these values, for display only.

One deliberate departure from DESIGN §2.3, explained in docs/mechanism.md ("The granularity of
U*"): U* is a *double*, so the probability of each output is a sum of ulps, which is only within a
relative 2.6·2**-52 of the ideal interval length. Mironov's term 2η accounted for this with
η = 2**-53; once η is taken as 2**-p it no longer does. We therefore also subtract
``UNIFORM_GRANULARITY`` = 2**-48 (a margin of 3× over the bound 5.2·2**-52 on the extra privacy
loss) from ε before dividing: ε′ = (ε − 2η − γ)/(1 + 12·B̃·η). The verifier measures the loss of
the implementation exactly and finds it below ε with this term and above ε without it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gmpy2 import mpfr, mpq

from snapdp import _exact
from snapdp._validation import Number

__all__ = ["MIN_PRECISION", "UNIFORM_GRANULARITY", "SnappingParameters", "compute_parameters"]

MIN_PRECISION = 118  # worst case for a correctly rounded log (seed 001 §3)
UNIFORM_GRANULARITY = mpq(1, 1 << 48)  # γ: privacy allowance for U* being a double (see above)
_LN2_BITS = 1022  # |Y| below λ′·1022·ln 2 means U* >= 2**-1022 is a normal double


@dataclass(frozen=True)
class SnappingParameters:
    """Exact parameters, all in sensitivity-1 ("scaled") units unless said otherwise.

    Attributes:
        epsilon, sensitivity, lower, upper: the requested values, exactly (mpq).
        center: c = (lower + upper)/2, exact.
        bound: B̃ = (upper − lower)/(2·sensitivity), exact.
        precision: p, the MPFR precision in bits (DESIGN §2.2).
        epsilon_prime: ε′ rounded toward zero at p bits (DESIGN §2.3, with γ; see module doc).
        scale: λ′ = 1/ε′ rounded toward +∞ at p bits.
        lambda_exponent: L with Λ = 2**L the smallest power of two >= λ′ (never below λ′).
        delta: an upper bound on δ, the mass outside the ε guarantee (see ``_delta_bound``).
    """

    epsilon: mpq
    sensitivity: mpq
    lower: mpq
    upper: mpq
    center: mpq
    bound: mpq
    precision: int
    epsilon_prime: mpfr
    scale: mpfr
    lambda_exponent: int
    delta: mpfr

    @property
    def eta(self) -> mpq:
        """η = 2**-p, exactly."""
        return mpq(1, 1 << self.precision)

    @property
    def grid(self) -> mpq:
        """Λ = 2**L, exactly."""
        L = self.lambda_exponent
        return mpq(1 << L, 1) if L >= 0 else mpq(1, 1 << -L)


def precision_for(epsilon: mpq, bound: mpq) -> int:
    """p = max(118, 2 − ⌈log2 ε⌉, ⌈log2 max(B̃, 1)⌉ + 64) (DESIGN §2.2)."""
    return max(
        MIN_PRECISION,
        2 - _exact.ceil_log2(epsilon),
        _exact.ceil_log2(max(bound, mpq(1))) + 64,
    )


def compute_parameters(
    epsilon: Number, sensitivity: Number, lower: Number, upper: Number
) -> SnappingParameters:
    """Compute the parameters from already validated inputs (finite, ε > 0, Δ > 0, lower < upper).

    Raises ValueError (via the caller's message) when ε′ <= 0, i.e. ε <= 2η + γ.
    """
    eps = _exact.exact_rational(epsilon)
    sens = _exact.exact_rational(sensitivity)
    lo = _exact.exact_rational(lower)
    hi = _exact.exact_rational(upper)
    center = (lo + hi) / 2
    bound = (hi - lo) / (2 * sens)
    p = precision_for(eps, bound)
    eta = mpq(1, 1 << p)
    eps_prime_exact = (eps - 2 * eta - UNIFORM_GRANULARITY) / (1 + 12 * bound * eta)
    if eps_prime_exact <= 0:
        raise ValueError(
            f"`epsilon` = {float(eps)!r} is too small: ε′ = (ε − 2η − γ)/(1 + 12·B̃·η) must be > 0, "
            f"so ε must exceed 2**-48 + 2**-{p - 1} (γ = 2**-48 is the privacy cost of U* being a "
            "double; see docs/mechanism.md)"
        )
    eps_prime = _exact.round_toward_zero(eps_prime_exact, p)
    scale = _exact.round_up(mpq(1) / mpq(eps_prime), p)
    lambda_exponent = _exact.ceil_log2(mpq(scale))
    params = SnappingParameters(
        epsilon=eps,
        sensitivity=sens,
        lower=lo,
        upper=hi,
        center=center,
        bound=bound,
        precision=p,
        epsilon_prime=eps_prime,
        scale=scale,
        lambda_exponent=lambda_exponent,
        delta=mpfr(0),
    )
    return _with_delta(params)


def _with_delta(params: SnappingParameters) -> SnappingParameters:
    return replace(params, delta=_delta_bound(params))


def _delta_bound(params: SnappingParameters) -> mpfr:
    """An upper bound on δ, the probability of outputs outside the ε argument (DESIGN §2.8).

    The ε argument holds for outputs whose preimages, under both neighbouring inputs, keep
    |Y| < T = λ′·1022·ln 2·(1 − η)**2, i.e. U* >= 2**-1022 (normal doubles, relative granularity
    2**-52). Any preimage inside [−B̃, B̃] needs |Y| <= 2B̃ + Λ/2; so if 2B̃ + Λ <= T then δ = 0.
    Otherwise an output outside the argument has, under either input, |Y| >= T − Λ − 1 on its whole
    preimage, and δ <= P(|Y| >= T − Λ − 1) <= (1 + 2**-52)·exp(−(T − Λ − 1)/(λ′(1 + η)**2)).
    All of it is computed with rounding in the safe direction; the verifier computes δ exactly.
    """
    p = params.precision + 16
    eta = params.eta
    down = _exact.directed_context(p, up=False)
    up = _exact.directed_context(p, up=True)
    ln2_lower = down.log(mpfr(2))
    ln_smallest_normal = down.mul(ln2_lower, _LN2_BITS)  # <= 1022·ln 2
    threshold = down.mul(
        down.mul(params.scale, ln_smallest_normal), _exact.round_down((1 - eta) ** 2, p)
    )
    reach = 2 * params.bound + params.grid
    if mpq(threshold) >= reach:
        return mpfr(0)
    margin = mpq(threshold) - params.grid - 1
    if margin <= 0:
        return mpfr(1)
    scale_up = up.mul(params.scale, _exact.round_up((1 + eta) ** 2, p))
    exponent = down.div(_exact.round_down(margin, p), scale_up)
    bound = up.mul(up.exp(up.minus(exponent)), _exact.round_up(1 + mpq(1, 1 << 52), p))
    return min(bound, mpfr(1))
