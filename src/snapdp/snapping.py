"""The single definition of the snapping mechanism's arithmetic (DESIGN §2.1, §2.4–2.6).

``snapped_output(params, x_tilde, sign, u)`` is a pure function of the parameters, the normalised
input and the random draw (S, U*). The exact release path calls it, the vectorised path falls back
to it, and the verifier evaluates it: the program that is certified is the program that runs.
"""

from __future__ import annotations

import math

from gmpy2 import mpfr, mpq, mpz

from snapdp import _exact
from snapdp._validation import Number
from snapdp.parameters import SnappingParameters

__all__ = ["grid_index", "noise", "normalize", "output_from_index", "snapped_output"]


def normalize(params: SnappingParameters, value: Number) -> mpq:
    """x̃ = clamp((x − c)/Δ, −B̃, B̃) as an exact rational (DESIGN §2.1). ±inf clamps."""
    if isinstance(value, float) and math.isinf(value):
        return params.bound if value > 0 else -params.bound
    x = (_exact.exact_rational(value) - params.center) / params.sensitivity
    if x > params.bound:
        return params.bound
    if x < -params.bound:
        return -params.bound
    return x


def noise(params: SnappingParameters, sign: int, u: float) -> mpfr:
    """Y = S·λ′·LN(U*): the log correctly rounded to p bits, the product rounded once (§2.4)."""
    ctx = _exact.nearest_context(params.precision)
    y = ctx.mul(params.scale, ctx.log(u))  # u is a double: converted exactly (p >= 118 > 53)
    return ctx.minus(y) if sign < 0 else y  # ctx: `-y` would round to the global precision


def grid_index(params: SnappingParameters, x_tilde: mpq, y: mpfr) -> int:
    """k = ⌊(x̃ + Y)/Λ + 1/2⌋ on the exact sum: nearest multiple of Λ, ties toward +∞ (§2.5).

    With x̃ = a/b, Y = n/d (d a power of two) and Λ = 2**L, k = ⌊(2(a·d + n·b) + b·d·2**L) /
    (2·b·d·2**L)⌋, evaluated with integers only.
    """
    a, b = mpz(x_tilde.numerator), mpz(x_tilde.denominator)
    n, d = y.as_integer_ratio()
    total = 2 * (a * d + n * b)
    den = 2 * b * d
    L = params.lambda_exponent
    if L >= 0:
        return int((total + ((b * d) << L)) // (den << L))
    return int(((total << -L) + b * d) // den)


def output_from_index(params: SnappingParameters, k: int) -> float:
    """c + Δ·clamp(k·Λ, −B̃, B̃), computed exactly and rounded once to the nearest double (§2.6)."""
    snapped = k * params.grid
    if snapped >= params.bound:
        return _exact.rational_to_float(params.upper)
    if snapped <= -params.bound:
        return _exact.rational_to_float(params.lower)
    return _exact.rational_to_float(params.center + params.sensitivity * snapped)


def snapped_output(params: SnappingParameters, x_tilde: mpq, sign: int, u: float) -> float:
    """The mechanism's output for normalised input ``x_tilde`` and the draw (``sign``, ``u``)."""
    return output_from_index(params, grid_index(params, x_tilde, noise(params, sign, u)))
