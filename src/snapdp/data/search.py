"""The planner's search for the smallest ε meeting a target (docs/plans.md, "The planner"), and
how plans write ε and ± (shared by :mod:`snapdp.data.plan` and :mod:`snapdp.data.two_phase`)."""

from __future__ import annotations

from collections.abc import Callable
from decimal import ROUND_CEILING, Decimal, localcontext
from fractions import Fraction

from snapdp._rational import format_rational
from snapdp.errors import ParameterError

__all__ = [
    "EPS_MAX",
    "EPS_MIN",
    "TOLERANCE",
    "eps_text",
    "fraction_text",
    "num",
    "round_up_short",
    "smallest_epsilon",
]

#: Relative tolerance of the bisection, and of rounding ε up to a short decimal.
TOLERANCE = Fraction(1, 400)
#: The range of ε the search tries.
EPS_MIN = Fraction(1, 1 << 30)
EPS_MAX = Fraction(1 << 20)


def smallest_epsilon(
    accuracy_at: Callable[[Fraction], float], target: Fraction, label: str = "query"
) -> Fraction:
    """The smallest ε (to a relative :data:`TOLERANCE`, rounded up to a short decimal) whose
    accuracy is ≤ ``target``, for an accuracy non-increasing in ε; a ParameterError when no ε in
    [2^-30, 2^20] meets it. The result always meets the target (checked)."""

    cache: dict[Fraction, float] = {}

    def acc(eps: Fraction) -> float:
        if eps not in cache:
            cache[eps] = accuracy_at(eps)
        return cache[eps]

    def meets(eps: Fraction) -> bool:
        return Fraction(acc(eps)) <= target

    # A first guess from ± ≈ c/ε (exact for the noise scale, up to the power-of-two grid), then
    # a bracket grown by factors of 1.05, 1.05², … around it: few evaluations, each costly.
    first = acc(Fraction(1))
    guess = Fraction(1) if first <= 0 else round_up_short(Fraction(first) / target)
    guess = min(max(guess, EPS_MIN), EPS_MAX)
    step = Fraction(21, 20)
    if meets(guess):
        hi, lo = guess, guess / step
        while meets(lo):
            hi, step = lo, step * step
            lo = hi / step
            if lo < EPS_MIN:
                return hi
    else:
        lo, hi = guess, min(guess * step, EPS_MAX)
        while not meets(hi):
            if hi >= EPS_MAX:
                raise ParameterError(
                    f"the target accuracy ±{fraction_text(target)} of {label} cannot be met at "
                    f"any ε: even ε = {EPS_MAX} gives ±{acc(EPS_MAX):.6g}",
                    parameter="accuracy",
                )
            lo, step = hi, step * step
            hi = min(lo * step, EPS_MAX)
    while hi > lo * (1 + TOLERANCE):  # invariant: not meets(lo), meets(hi)
        mid = (lo + hi) / 2
        if meets(mid):
            hi = mid
        else:
            lo = mid
    short = round_up_short(hi)
    return short if meets(short) else hi


def round_up_short(x: Fraction) -> Fraction:
    """The decimal with the fewest significant digits in [x, x·(1 + TOLERANCE)]."""
    limit = x * (1 + TOLERANCE)
    for digits in range(1, 30):
        with localcontext() as ctx:
            ctx.prec = digits
            ctx.rounding = ROUND_CEILING
            d = Fraction(Decimal(x.numerator) / Decimal(x.denominator))
        if x <= d <= limit:
            return d
    return x


def fraction_text(x: Fraction) -> str:
    """A Fraction as an exact decimal when it is one (1/10 → "0.1"), else p/q."""
    return format_rational(x, max_digits=None)


def eps_text(x: Fraction) -> str:
    """ε for a table: the exact decimal when short, else a double and the exact value."""
    exact = fraction_text(x)
    return exact if "/" not in exact and len(exact) <= 12 else f"{float(x):.6g} ({exact})"


def num(x: float) -> str:
    """A ± for a table."""
    return f"{x:,.6g}" if abs(x) < 1e6 else f"{x:,.0f}"
