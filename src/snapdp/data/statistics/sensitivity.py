"""Exact fixed-point values and the mechanisms' parameters for the data statistics (DESIGN §8.4).

**Exact sums.** Summing doubles is not exact, and the rounding error can break a sensitivity bound
(a known attack on floating-point DP sums). So the engine turns every value into an integer number
of *quanta* q of 10**-d, clamped exactly to the integers [L_q, U_q] = [⌈L·10**d⌉, ⌊U·10**d⌋]
(docs/data.md, "Sensitivities"), and sums them as exact integers (Python ints: never rounded, never
overflowing). The mechanism runs in quanta, with integer sensitivity and bounds, and its output is
multiplied by 10**-d (post-processing).

**Decimals.** An integer column uses d = 0 (its values are integers: nothing is lost). A decimal
column uses the largest d in 0..9 for which every mechanism bound of the statistic fits a signed
64-bit integer (the release then feeds the mechanism int64 arrays, after an exact clamp of the
aggregate to those bounds, which the mechanism would apply anyway); when no d fits (a huge
declared row bound), the smallest d with L_q < U_q, and the release uses the mechanism's exact
per-value path. Either way every parameter is an exact integer.

**Mechanism bounds** come from the public row bound N (``Schema.max_rows``): count [0, N]; sum
[N·min(L_q, 0), N·max(U_q, 0)]; centred sum Σ(2q − L_q − U_q) in [−N·W, N·W] and centred sum of
squares in [0, N·W²], W = U_q − L_q. A generous N costs precision bits, not accuracy (DESIGN §4).
"""

from __future__ import annotations

import math
from fractions import Fraction

from msgspec import Struct

from snapdp._rational import shown_rational
from snapdp.data.model.schema import Column
from snapdp.errors import ParameterError

__all__ = ["INT64_LIMIT", "FixedPoint", "fits_int64", "fixed_point"]

_MAX_DECIMALS = 9
#: Mechanism bounds in [−2**63, 2**63) take the int64 path.
INT64_LIMIT = 1 << 63


class FixedPoint(Struct, frozen=True):
    """A value column's bounds in quanta of 10**-decimals: values are clamped to [lower_q,
    upper_q]."""

    decimals: int
    lower_q: int
    upper_q: int

    @property
    def quantum(self) -> Fraction:
        """10**-decimals, exactly."""
        return Fraction(1, 10**self.decimals)

    @property
    def magnitude(self) -> int:
        """max(|lower_q|, |upper_q|): the most one row can move a sum, in quanta."""
        return max(abs(self.lower_q), abs(self.upper_q))

    @property
    def width(self) -> int:
        """W = upper_q − lower_q: the most one row can move a centred sum (2q − L_q − U_q)."""
        return self.upper_q - self.lower_q

    def sum_bounds(self, max_rows: int) -> tuple[int, int]:
        """[N·min(L_q, 0), N·max(U_q, 0)]: where every sum of at most N values lies."""
        return max_rows * min(self.lower_q, 0), max_rows * max(self.upper_q, 0)


def fits_int64(lower: int, upper: int) -> bool:
    """Whether [lower, upper] lies in the int64 range."""
    return lower >= -INT64_LIMIT and upper < INT64_LIMIT


def fixed_point(column: Column, max_rows: int, *, squares: bool = False) -> FixedPoint:
    """The fixed-point representation of a bounded value column (see the module docstring).

    ``squares``: the statistic also needs centred sums of squares (variance), whose bound N·W²
    is then also kept in int64 when possible.
    """
    if column.lower is None or column.upper is None:
        raise ParameterError(
            f"column {column.name!r} needs declared bounds (lower and upper) to be used as a value",
            parameter="lower",
        )
    lo, hi = column.lower, column.upper
    candidates = [0] if column.type == "integer" else list(range(_MAX_DECIMALS, -1, -1))
    usable: list[FixedPoint] = []
    for decimals in candidates:
        scale = 10**decimals
        fp = FixedPoint(decimals, math.ceil(lo * scale), math.floor(hi * scale))
        if fp.lower_q >= fp.upper_q:
            continue
        usable.append(fp)
        big = max_rows * max(fp.magnitude, fp.width**2 if squares else 0)
        if big < INT64_LIMIT:
            return fp
    if not usable:
        raise ParameterError(
            f"column {column.name!r}: bounds [{shown_rational(lo)}, {shown_rational(hi)}] hold "
            "no two distinct "
            + ("integers" if column.type == "integer" else "multiples of 1e-9")
            + ": widen them",
            parameter="lower",
        )
    return usable[-1]
