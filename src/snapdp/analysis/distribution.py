"""The exact output distribution of the ideal snapped, clamped mechanism (DESIGN §5).

With V = x̃ + Y, Y ~ Laplace(λ′) the ideal continuous noise and the mechanism's own exact λ′, Λ,
B̃, c and Δ (:class:`~snapdp.parameters.SnappingParameters`):

- a grid point kΛ strictly inside (−B̃, B̃) has P = F(kΛ + Λ/2 − x̃) − F(kΛ − Λ/2 − x̃);
- the upper bound has P = 1 − F(k₊Λ − Λ/2 − x̃), k₊Λ the smallest grid point >= B̃;
- the lower bound has P = F(k₋Λ + Λ/2 − x̃), k₋Λ the largest grid point <= −B̃

(ties of the snap go toward +∞, so the cell of kΛ is [kΛ − Λ/2, kΛ + Λ/2)). Each output is the
double the mechanism returns for that grid index (:func:`snapdp.snapping.output_from_index`).

Interior points further than T from x̃ are left out when B̃ is large; T is chosen so that the mass
left out, reported exactly as ``truncated_mass``, is below 2**-tail_bits·min(1, λ′/D)² (D the
largest possible error), which keeps the effect on every moment below 2**-tail_bits relative to
λ′. Probabilities are computed with MPFR at ``precision`` bits; ``rounding_error`` bounds the
total absolute error of the listed probabilities.

The implementation draws U* from doubles and rounds the log and product at p bits, so its own
distribution differs from this ideal one by a relative ~2**-50 per output (see
docs/mechanism.md): invisible to any statistical test, hence a χ² test against this distribution
is the distribution test of the mechanism.
"""

from __future__ import annotations

import math

from msgspec import Struct

from snapdp import _exact
from snapdp._exact import mpfr, mpq
from snapdp._validation import Number, check_value
from snapdp.analysis import _laplace
from snapdp.parameters import SnappingParameters
from snapdp.snapping import normalize, output_from_index

__all__ = [
    "DEFAULT_PRECISION",
    "DEFAULT_TAIL_BITS",
    "OutputDistribution",
    "grid_limits",
    "interior_window",
    "output_distribution",
]

DEFAULT_PRECISION = 160
DEFAULT_TAIL_BITS = 128


class OutputDistribution(Struct, frozen=True):
    """The output distribution of the ideal mechanism for one true value.

    Attributes:
        parameters: the mechanism's exact parameters.
        value: the true value x (data units), exactly.
        x_tilde: x̃ = clamp((x − c)/Δ, −B̃, B̃), exactly.
        outputs: the possible outputs (doubles), ascending, each listed once.
        probabilities: their probabilities (MPFR, ``precision`` bits), same order.
        truncated_mass: the mass of interior outputs left out (MPFR; < 2**-tail_bits).
        rounding_error: a bound on the total absolute rounding error of ``probabilities``.
        precision: the MPFR precision used.
        max_error: the largest possible |output − x|, exactly (data units).
    """

    parameters: SnappingParameters
    value: mpq
    x_tilde: mpq
    outputs: tuple[float, ...]
    probabilities: tuple[mpfr, ...]
    truncated_mass: mpfr
    rounding_error: mpfr
    precision: int
    max_error: mpq

    def errors(self) -> tuple[mpq, ...]:
        """output − x for each output, exactly (data units)."""
        return tuple(_exact.exact_rational(o) - self.value for o in self.outputs)

    def total(self) -> mpfr:
        """The sum of the listed probabilities (at ``precision`` bits)."""
        with _exact.working_precision(self.precision):
            return sum(self.probabilities, mpfr(0))

    @property
    def lower_mass(self) -> mpfr:
        """P(output = lower): the clamp binding from below."""
        lower = _exact.rational_to_float(self.parameters.lower)
        return self.probabilities[0] if self.outputs[0] == lower else mpfr(0)

    @property
    def upper_mass(self) -> mpfr:
        """P(output = upper): the clamp binding from above."""
        upper = _exact.rational_to_float(self.parameters.upper)
        return self.probabilities[-1] if self.outputs[-1] == upper else mpfr(0)

    @property
    def binding_probability(self) -> mpfr:
        """P(output is lower or upper)."""
        with _exact.working_precision(self.precision):
            return self.lower_mass + self.upper_mass


def grid_limits(params: SnappingParameters) -> tuple[int, int]:
    """(k₋, k₊): k₋Λ the largest grid point <= −B̃, k₊Λ the smallest >= B̃ (exact integers)."""
    q = params.bound / params.grid
    k_plus = -((-int(q.numerator)) // int(q.denominator))  # ⌈B̃/Λ⌉
    return -k_plus, k_plus


def _floor(q: mpq) -> int:
    return int(q.numerator) // int(q.denominator)


def interior_window(
    params: SnappingParameters, x_tilde: mpq, reach: mpq, tail_bits: int
) -> tuple[int, int]:
    """The interior grid indices [k_lo, k_hi] kept for ``x_tilde``: those within T + Λ of x̃, where
    T = λ′·(tail_bits·ln 2 + 2·ln max(1, reach/λ′) + 1) (``reach``: the largest error, scaled).

    Outside, the Laplace mass is below e^{−T/λ′} <= 2**-tail_bits·min(1, λ′/reach)². Call inside
    ``_exact.working_precision``.
    """
    k_minus, k_plus = grid_limits(params)
    s = mpfr(params.scale)
    ratio = mpfr(reach) / s
    nats = tail_bits * _exact.log(2) + 2 * _exact.log(max(mpfr(1), ratio)) + 1
    cut = mpq(nats * s) + params.grid
    k_lo = max(k_minus + 1, _floor((x_tilde - cut) / params.grid))
    k_hi = min(k_plus - 1, _floor((x_tilde + cut) / params.grid) + 1)
    return k_lo, k_hi


def output_distribution(
    params: SnappingParameters,
    value: Number,
    *,
    precision: int = DEFAULT_PRECISION,
    tail_bits: int = DEFAULT_TAIL_BITS,
) -> OutputDistribution:
    """The exact output distribution of the ideal mechanism for the true value ``value``.

    ``value`` may lie outside [lower, upper] (it is clamped first, as by the mechanism) but must be
    finite. See the module docstring for the formulas and the stated errors.
    """
    v = check_value("value", value)
    if isinstance(v, float) and math.isinf(v):
        from snapdp.errors import ParameterError

        raise ParameterError(f"`value` must be finite for the error analysis, not {v!r}")
    x = _exact.exact_rational(v)
    xt = normalize(params, v)
    lam = params.grid
    half = lam / 2
    k_minus, k_plus = grid_limits(params)
    max_error = max(x - params.lower, params.upper - x)
    with _exact.working_precision(precision):
        s = mpfr(params.scale)
        k_lo, k_hi = interior_window(params, xt, max_error / params.sensitivity, tail_bits)
        points: dict[float, mpfr] = {}

        def add(k: int, p: mpfr) -> None:
            out = output_from_index(params, k)
            points[out] = points.get(out, mpfr(0)) + p

        add(k_minus, _laplace.cdf(k_minus * lam + half - xt, s))
        for k in range(k_lo, k_hi + 1):
            add(k, _laplace.mass(k * lam - half - xt, k * lam + half - xt, s))
        add(k_plus, _laplace.sf(k_plus * lam - half - xt, s))
        truncated = mpfr(0)
        if k_lo > k_minus + 1:
            truncated += _laplace.mass(k_minus * lam + half - xt, k_lo * lam - half - xt, s)
        if k_hi < k_plus - 1:
            truncated += _laplace.mass(k_hi * lam + half - xt, k_plus * lam - half - xt, s)
        n = len(points)
        # each probability: <= 8 roundings of relative size 2**-precision on terms <= 1, with a
        # cancellation factor <= 1/(1 − e**-1) < 2 (Λ >= λ′): 16 units; summing adds one per term.
        rounding_error = mpfr(17 * (n + 2)) * mpfr(mpq(1, 1 << precision))
    outputs = tuple(sorted(points))
    return OutputDistribution(
        parameters=params,
        value=x,
        x_tilde=xt,
        outputs=outputs,
        probabilities=tuple(points[o] for o in outputs),
        truncated_mass=truncated,
        rounding_error=rounding_error,
        precision=precision,
        max_error=max_error,
    )
