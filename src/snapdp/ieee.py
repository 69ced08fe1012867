"""Exact binary64 helpers by manipulation of the IEEE-754 representation (seed 001 §4).

Both helpers are exact for every finite double: normal, subnormal, zero and negative. They never
round through floating-point arithmetic; they split a double into sign, biased exponent and
mantissa, work on those integers, and assemble the result bit by bit.
"""

from __future__ import annotations

import math
import struct
import sys
from fractions import Fraction

from snapdp.errors import ParameterError

__all__ = [
    "double_at_least",
    "double_at_most",
    "double_within",
    "power_of_two_at_least",
    "round_to_multiple",
]

_MANTISSA_BITS = 52
_MANTISSA_MASK = (1 << _MANTISSA_BITS) - 1
_EXPONENT_MASK = 0x7FF
_EXPONENT_BIAS = 1023
_MIN_EXPONENT = -1074  # exponent of the smallest subnormal, 2**-1074
_MAX_EXPONENT = 1023  # exponent of the largest power of two that is a finite double
_MAX_DOUBLE = Fraction(sys.float_info.max)


def _bits(x: float) -> int:
    return int(struct.unpack("<Q", struct.pack("<d", x))[0])


def _from_bits(bits: int) -> float:
    return float(struct.unpack("<d", struct.pack("<Q", bits))[0])


def _check_finite_double(name: str, x: object) -> float:
    if isinstance(x, bool) or not isinstance(x, float):
        raise ParameterError(
            f"`{name}` must be a float (a binary64 double), not {type(x).__name__}"
        )
    if not math.isfinite(x):
        raise ParameterError(f"`{name}` must be a finite double, not {x!r}")
    return x


def _decompose(x: float) -> tuple[int, int, int]:
    """Split a finite double into (sign bit, significand N, exponent q) with |x| = N·2**q."""
    bits = _bits(x)
    sign = bits >> 63
    biased = (bits >> _MANTISSA_BITS) & _EXPONENT_MASK
    mantissa = bits & _MANTISSA_MASK
    if biased == 0:  # zero or subnormal: no implicit leading bit
        return sign, mantissa, _MIN_EXPONENT
    return sign, mantissa | (1 << _MANTISSA_BITS), biased - _EXPONENT_BIAS - _MANTISSA_BITS


def _compose(sign: int, significand: int, exponent: int) -> float:
    """Assemble the double (-1)**sign · significand · 2**exponent, which must be representable.

    Requires significand < 2**53 and exponent >= -1074, so the value has at most 53 significant
    bits and lies on the subnormal grid: no rounding can occur. Raises OverflowError past 2**1024.
    """
    if significand == 0:
        return _from_bits(sign << 63)
    top = significand.bit_length() - 1 + exponent  # unbiased exponent of the leading bit
    if top > _MAX_EXPONENT:
        raise OverflowError("the result is not a finite double")
    if top >= -1022:  # normal: drop the implicit leading bit
        mantissa = (significand << (_MANTISSA_BITS - significand.bit_length() + 1)) & _MANTISSA_MASK
        biased = top + _EXPONENT_BIAS
    else:  # subnormal: the mantissa is the value in units of 2**-1074
        mantissa = significand << (exponent - _MIN_EXPONENT)
        biased = 0
    return _from_bits((sign << 63) | (biased << _MANTISSA_BITS) | mantissa)


def power_of_two_at_least(x: float) -> float:
    """Return the smallest power of two that is >= ``x``, exactly (seed 001 §4.1).

    ``x`` must be a finite double > 0 (subnormals included). A power of two is returned unchanged;
    otherwise the mantissa is cleared and the exponent raised by one (for subnormals, the next power
    of two above the subnormal significand). Raises :class:`ParameterError` (a ValueError) for NaN,
    ±inf, non-positive ``x``, or when the answer, 2**1024, is not a finite double.
    """
    _check_finite_double("x", x)
    if not x > 0:
        raise ParameterError(f"`x` must be > 0, not {x!r}")
    _, significand, exponent = _decompose(x)
    # smallest n with 2**n >= significand; exact integer arithmetic on the significand
    n = (significand - 1).bit_length()
    try:
        return _compose(0, 1, exponent + n)
    except OverflowError:
        raise ParameterError(
            f"`x` = {x!r}: the smallest power of two >= x is 2**1024, which is not a finite double"
        ) from None


def round_to_multiple(x: float, m: int) -> float:
    """Round ``x`` to the nearest multiple of 2**m, ties toward +∞ (seed 001 §4.2, DESIGN §2.5).

    Exact for every finite double ``x`` and every integer ``m`` in [-1074, 1023]. Ties go toward
    +∞ for negative values too: -2.5 with m = 0 gives -2.0. A double that is already a multiple
    (including ±0) is returned unchanged. Raises :class:`ParameterError` for NaN, ±inf, an ``m``
    outside the range, or a result (2**1024 and above) that is not a finite double.
    """
    _check_finite_double("x", x)
    if isinstance(m, bool) or not isinstance(m, int):
        raise ParameterError(f"`m` must be an int, not {type(m).__name__}")
    if not _MIN_EXPONENT <= m <= _MAX_EXPONENT:
        raise ParameterError(f"`m` must be in [-1074, 1023], not {m}")
    sign, significand, exponent = _decompose(x)
    if exponent >= m or significand == 0:
        return x  # already on the grid of multiples of 2**m
    shift = m - exponent
    half = 1 << (shift - 1)
    # positive: floor(N/2**s + 1/2), ties up; negative: ceil(N/2**s - 1/2), ties toward zero,
    # which for a negative value is again toward +∞
    k = (significand + half - sign) >> shift
    if k == 0:
        return 0.0
    # shift >= 1 and N < 2**53 give k < 2**53: k·2**m is representable unless it overflows
    try:
        return _compose(sign, k, m)
    except OverflowError:
        raise ParameterError(
            f"`x` = {x!r} rounded to a multiple of 2**{m} is 2**1024 or more, not a finite double"
        ) from None


def double_at_least(x: Fraction) -> float:
    """The smallest double >= ``x`` (an exact rational): ``x`` rounded up, exactly; +inf past
    the largest finite double."""
    if x > _MAX_DOUBLE:
        return math.inf
    if x <= -_MAX_DOUBLE:
        return -sys.float_info.max
    d = float(x)  # correctly rounded to the nearest double
    return d if Fraction(d) >= x else math.nextafter(d, math.inf)


def double_at_most(x: Fraction) -> float:
    """The largest double <= ``x`` (an exact rational): ``x`` rounded down, exactly; -inf past
    the most negative finite double."""
    return -double_at_least(-x) + 0.0  # + 0.0: 0 as 0.0, not -0.0


def double_within(x: Fraction, lower: Fraction, upper: Fraction) -> float | None:
    """The double nearest ``x`` among the finite doubles in [``lower``, ``upper``] (exact
    rationals, ``lower <= x <= upper``): ``x`` rounded to nearest, then moved one step inward
    when that left the interval. None when no finite double lies in [``lower``, ``upper``]
    (bounds closer together than the doubles' spacing there, e.g. [2**63 − 2, 2**63 − 1])."""
    if x > _MAX_DOUBLE or x < -_MAX_DOUBLE:
        d = sys.float_info.max if x > 0 else -sys.float_info.max
    else:
        d = float(x)
    if Fraction(d) < lower:
        d = double_at_least(lower)
    elif Fraction(d) > upper:
        d = double_at_most(upper)
    if not math.isfinite(d) or not lower <= Fraction(d) <= upper:
        return None
    return d
