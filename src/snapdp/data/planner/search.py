"""The planner's search for the smallest ε meeting a target (docs/plans.md, "The planner"), and
how plans write ε and ± (shared by :mod:`snapdp.data.planner.epsilons`,
:mod:`snapdp.data.planner.preview` and :mod:`snapdp.data.planner.two_phase`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import ROUND_CEILING, Decimal, localcontext
from fractions import Fraction

from snapdp._rational import exact_text
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
    """A short decimal ε whose accuracy is ≤ ``target`` and at most (1 + :data:`TOLERANCE`)²
    times the smallest such ε, for an accuracy non-increasing in ε; a ParameterError when no ε
    in [2^-30, 2^20] meets it. The result always meets the target (evaluated there), and some
    ε ≥ result/(1 + TOLERANCE)² was evaluated and misses it.

    Each evaluation can be costly (a quantile's tail bound, a mean's union bound), so the search
    first predicts the threshold from a model ± ≈ d + c/ε through two evaluated points (exact up
    to the grid's rounding for every statistic's noise) and tries a bracket of ratio
    (1 + TOLERANCE)² around the prediction: two evaluations when the model is right
    (:func:`_predicted`). Otherwise it grows a bracket around the first guess and bisects it
    (:func:`_bisected`), as before; both return a short decimal with the bound above."""

    cache: dict[Fraction, float] = {}

    def acc(eps: Fraction) -> float:
        if eps not in cache:
            cache[eps] = accuracy_at(eps)
        return cache[eps]

    # A first guess from ± ≈ c/ε (exact for the noise scale, up to the power-of-two grid).
    first = acc(Fraction(1))
    guess = Fraction(1) if first <= 0 else round_up_short(Fraction(first) / target)
    guess = min(max(guess, EPS_MIN), EPS_MAX)
    acc(guess)
    found = _predicted(acc, cache, target)
    return found if found is not None else _bisected(acc, cache, target, label)


#: Rounds of prediction before the bisection takes over.
_ROUNDS = 3


def _predicted(
    acc: Callable[[Fraction], float], seen: dict[Fraction, float], target: Fraction
) -> Fraction | None:
    """A short decimal hi with acc(hi) ≤ target and acc(hi/(1 + TOLERANCE)²) > target (both
    evaluated), from the model ± = d + c/ε fitted to two evaluated points near the threshold;
    None when the model does not find one in :data:`_ROUNDS` rounds (a ± that moves in steps,
    as a mechanism's grid does, can defeat it)."""
    ratio = (1 + TOLERANCE) ** 2
    margin = 1 + TOLERANCE / 2
    for round_ in range(_ROUNDS):
        low, high = _bracket(seen, target)
        if low is not None and high is not None and high <= low * ratio:
            return None  # already bracketed: the bisection's rounding finishes it
        p = _threshold(_nearest(seen, target, low, high), seen, target, power=round_ > 0)
        if p is None:
            return None
        hi = _shortest_in(p * margin, p * ratio / margin)
        if high is not None and p <= high <= hi and round_up_short(high) == high:
            hi = high  # a short decimal already known to meet the target, and as close
        lo = hi / ratio
        if lo < EPS_MIN or hi > EPS_MAX:
            return None
        # by monotonicity, anything at or above a meeting ε meets, at or below a missing ε misses
        hi_meets = (high is not None and hi >= high) or _meets(acc(hi), target)
        lo_misses = (low is not None and lo <= low) or not _meets(acc(lo), target)
        if hi_meets and lo_misses:
            return hi
    return None


def _bracket(
    seen: dict[Fraction, float], target: Fraction
) -> tuple[Fraction | None, Fraction | None]:
    """(the largest evaluated ε that misses the target, the smallest that meets it)."""
    meet = [e for e, a in seen.items() if _meets(a, target)]
    miss = [e for e, a in seen.items() if not _meets(a, target)]
    return (max(miss) if miss else None), (min(meet) if meet else None)


def _nearest(
    seen: dict[Fraction, float],
    target: Fraction,
    low: Fraction | None,
    high: Fraction | None,
) -> list[Fraction]:
    """Two evaluated points to fit the model through: the bracket's ends when they differ in
    accuracy, else the point nearest the target and the next nearest with another accuracy."""
    if low is not None and high is not None and seen[low] != seen[high]:
        return [low, high]
    order = sorted(seen, key=lambda e: abs(seen[e] - float(target)))
    first = order[0]
    other = next((e for e in order[1:] if seen[e] != seen[first]), None)
    return [first] if other is None else [first, other]


def _meets(a: float, target: Fraction) -> bool:
    return math.isfinite(a) and Fraction(a) <= target


def _threshold(
    points: list[Fraction], seen: dict[Fraction, float], target: Fraction, *, power: bool = False
) -> Fraction | None:
    """The ε where d + c/ε (or, with ``power``, c·ε^-k: a secant in log-log terms, which also
    fits a std's ± ∝ 1/√ε near the threshold), fitted through two points, equals ``target``
    (None: no such fit)."""
    if len(points) < 2:
        return None
    (e1, e2), t = points, float(target)
    a1, a2 = seen[e1], seen[e2]
    if not (math.isfinite(a1) and math.isfinite(a2)) or e1 == e2:
        return None
    if power:
        if not (a1 > 0 and a2 > 0 and t > 0) or a1 == a2:
            return None
        k = (math.log(a1) - math.log(a2)) / (math.log(float(e2)) - math.log(float(e1)))
        if not k > 0:
            return None
        p = float(e1) * math.exp((math.log(a1) - math.log(t)) / k)
        if not math.isfinite(p) or not float(EPS_MIN) <= p <= float(EPS_MAX):
            return None
        return Fraction(p)
    inv1, inv2 = 1 / float(e1), 1 / float(e2)
    c = (a1 - a2) / (inv1 - inv2)
    d = a1 - c * inv1
    if not c > 0 or not t > d:
        return None
    p = c / (t - d)
    if not math.isfinite(p) or not float(EPS_MIN) <= p <= float(EPS_MAX):
        return None
    return Fraction(p)


def _shortest_in(a: Fraction, b: Fraction) -> Fraction:
    """The decimal with the fewest significant digits in [a, b] (a ≤ b, a > 0)."""
    for digits in range(1, 40):
        with localcontext() as ctx:
            ctx.prec = digits
            ctx.rounding = ROUND_CEILING
            d = Fraction(Decimal(a.numerator) / Decimal(a.denominator))
        if d <= b:
            return d
    return a


def _bisected(
    acc: Callable[[Fraction], float],
    seen: dict[Fraction, float],
    target: Fraction,
    label: str,
) -> Fraction:
    """From the tightest bracket the evaluations so far give (grown by factors of 1.05, 1.05²,
    … while one side is missing), halved until hi ≤ lo·(1 + TOLERANCE), then hi rounded up to a
    short decimal (still meeting the target)."""

    def meets(eps: Fraction) -> bool:
        return Fraction(acc(eps)) <= target

    low, high = _bracket(seen, target)
    step = Fraction(21, 20)
    if low is None:
        assert high is not None  # at least one point was evaluated
        hi, lo = high, high / step
        while meets(lo):
            hi, step = lo, step * step
            lo = hi / step
            if lo < EPS_MIN:
                return hi
    elif high is None:
        lo, hi = low, min(low * step, EPS_MAX)
        while not meets(hi):
            if hi >= EPS_MAX:
                raise ParameterError(
                    f"the target accuracy ±{fraction_text(target)} of {label} cannot be met at "
                    f"any ε: even ε = {EPS_MAX} gives ±{acc(EPS_MAX):.6g}",
                    parameter="accuracy",
                )
            lo, step = hi, step * step
            hi = min(lo * step, EPS_MAX)
    else:
        lo, hi = low, high
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
    return exact_text(x)


def eps_text(x: Fraction) -> str:
    """ε for a table: the exact decimal when short, else a double and the exact value."""
    exact = fraction_text(x)
    return exact if "/" not in exact and len(exact) <= 12 else f"{float(x):.6g} ({exact})"


def num(x: float) -> str:
    """A ± for a table."""
    return f"{x:,.6g}" if abs(x) < 1e6 else f"{x:,.0f}"
