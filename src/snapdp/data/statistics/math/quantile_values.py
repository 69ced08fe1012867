"""A released quantile as a number: inside the declared bounds, with a ± that covers its rounding.

The tree and the exponential mechanism find a quantile as an exact rational in [L, U]
(:func:`snapdp.data.statistics.math.quantile_tree.exact_quantiles`,
:meth:`QuantileGrid.value`). It is released as
(docs/data.md, "Released quantiles are inside the bounds"):

* the double nearest it among the doubles in [L, U] (rounded to nearest, then moved one step
  inward if that left the bounds: 2^63 − 1 is not released as 2^63);
* for an integer column whose bounds hold no double at all (e.g. [2^63 − 2, 2^63 − 1]), the
  nearest integer, exactly (a Python int);

and other bounds that hold no double are refused (a decimal column's values are read as doubles,
so none could lie in them). Which form a query releases depends on its declared bounds only.
Every ± is computed exactly from the number as released and rounded up to a double, so it covers
the rounding. Post-processing only: nothing here reads the data.
"""

from __future__ import annotations

import math
from fractions import Fraction

from snapdp._rational import shown_rational
from snapdp.data.model.schema import Column
from snapdp.errors import ParameterError
from snapdp.ieee import double_at_least, double_at_most, double_within

__all__ = ["check_bounds", "integer_interval", "released_interval", "released_value", "value_pm"]

_INT64 = (Fraction(-(1 << 63)), Fraction((1 << 63) - 1))
_DOUBLES = Fraction(1 << 1024)  # past the largest finite double


def check_bounds(column: Column, key: str = "bounds") -> None:
    """Refuse bounds a quantile cannot be released within (before anything is read): an integer
    column's beyond int64, a decimal column's past the doubles' range or holding no double.
    ``key``: the user's word for the bounds, named in the message."""
    lower, upper = column.lower, column.upper
    assert lower is not None and upper is not None
    shown = f"[{shown_rational(lower)}, {shown_rational(upper)}]"
    if column.type == "integer" and (lower < _INT64[0] or upper > _INT64[1]):
        raise ParameterError(
            f"{key} of integer column {column.name!r} must lie within int64 "
            f"[-2^63, 2^63 - 1] for quantiles, not {shown}",
            parameter="quantile_bounds",
        )
    if column.type != "integer" and not (lower > -_DOUBLES and upper < _DOUBLES):
        raise ParameterError(
            f"{key} of decimal column {column.name!r} must lie within the doubles' range "
            f"(-2^1024, 2^1024) for quantiles, not {shown}",
            parameter="quantile_bounds",
        )
    exact_ints = column.type == "integer" and lower.denominator == upper.denominator == 1
    if double_within(lower, lower, upper) is None and not exact_ints:
        raise ParameterError(
            f"{key} of column {column.name!r} hold no double, so a quantile could not be released "
            f"within them: {shown} (widen them, or make them integers of an integer column)",
            parameter="quantile_bounds",
        )


def released_value(x: Fraction, lower: Fraction, upper: Fraction) -> float | int:
    """``x`` (exact, in [lower, upper]) as released: the nearest double in the bounds, or the
    nearest integer when no double lies in them (integer columns; see :func:`check_bounds`)."""
    x = min(max(x, lower), upper)
    d = double_within(x, lower, upper)
    if d is not None:
        return d
    return round(x)  # an integer column with integer bounds (check_bounds), so n is within them


def released_interval(
    lo: Fraction, hi: Fraction, lower: Fraction, upper: Fraction
) -> tuple[float | int, float | int]:
    """The exact interval [lo, hi] (within the bounds) as released, rounded outward so that it
    still holds every value it held: to doubles, or to integers when no double lies in the
    bounds (an integer column with integer bounds, see :func:`check_bounds`)."""
    if double_within(lower, lower, upper) is None:
        return max(math.floor(lo), int(lower)), min(math.ceil(hi), int(upper))
    return double_at_most(lo), double_at_least(hi)


def value_pm(value: float | int, lo: Fraction, hi: Fraction) -> float:
    """The ± of ``value`` (as released) that covers the exact interval [lo, hi]: the larger
    distance to an end, exactly, rounded up to a double (0 only when the interval is the value
    itself)."""
    v = Fraction(value)
    return double_at_least(max(v - lo, hi - v, Fraction(0)))


def integer_interval(lo: Fraction, hi: Fraction, upper: Fraction) -> tuple[Fraction, Fraction]:
    """The tree's value interval [lo, hi] (leaf edges, or the bounds where no edge passed) for an
    integer column with integer bounds: [⌈lo⌉, ⌈hi⌉ − 1] when hi < ``upper``, [⌈lo⌉, hi] when
    not; inverted (lo > hi) when that is empty, since then no p-quantile lies in [lo, hi] and
    the interval's claim has failed (the caller states the bounds). Every p-quantile t of
    integers x with #(x < t) <= p·n < #(x < hi) has a value x in [t, hi), so t <= ⌈hi⌉ − 1; one with
    #(x < lo) < p·n <= #(x <= t) has one in [lo, t], so t >= ⌈lo⌉ (docs/utility.md, "The tree's
    value ± on an integer column"). Post-processing of public edges only."""
    new_lo = Fraction(math.ceil(lo))
    new_hi = Fraction(math.ceil(hi) - 1) if hi < upper else hi
    return new_lo, new_hi
