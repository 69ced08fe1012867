"""Exact and directed-rounding arithmetic: the one module that talks to gmpy2 (MPFR and GMP).

Everything the mechanism computes before the final rounding is either an exact rational
(``mpq``) or an MPFR number at a stated precision with a stated rounding direction. The helpers
here make the direction part of the name, so a reader can check each step against DESIGN §2.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from fractions import Fraction
from numbers import Rational

import gmpy2
from gmpy2 import mpfr, mpq, mpz

__all__ = [
    "ceil_log2",
    "exact_rational",
    "exp",
    "log",
    "mpfr",
    "mpq",
    "mpz",
    "rational_to_float",
    "round_down",
    "round_nearest",
    "round_toward_zero",
    "round_up",
    "sqrt",
    "working_precision",
]

Exact = mpq


def exact_rational(x: float | int | Rational) -> mpq:
    """The exact rational value of a finite double, an int or a Fraction (no rounding)."""
    if isinstance(x, float):
        num, den = x.as_integer_ratio()
        return mpq(num, den)
    if isinstance(x, int):
        return mpq(x, 1)
    if isinstance(x, Fraction):
        return mpq(x.numerator, x.denominator)
    return mpq(int(x.numerator), int(x.denominator))


def ceil_log2(q: mpq) -> int:
    """⌈log2 q⌉ for a rational q > 0, computed exactly with integers."""
    num, den = int(q.numerator), int(q.denominator)
    # candidate from bit lengths, then correct by at most one step in each direction
    n = num.bit_length() - den.bit_length()
    while _pow2_at_least(n - 1, num, den):
        n -= 1
    while not _pow2_at_least(n, num, den):
        n += 1
    return n


def _pow2_at_least(n: int, num: int, den: int) -> bool:
    """Whether 2**n >= num/den."""
    if n >= 0:
        return (den << n) >= num
    return den >= (num << -n)


def _context(precision: int, rounding: int) -> gmpy2.context:
    return gmpy2.context(precision=precision, round=rounding, emin=-(1 << 40), emax=1 << 40)


def _rounded(q: mpq | mpfr | int, precision: int, rounding: int) -> mpfr:
    with _context(precision, rounding):
        return mpfr(q)


def round_toward_zero(q: mpq | mpfr | int, precision: int) -> mpfr:
    """q rounded toward zero to ``precision`` bits."""
    return _rounded(q, precision, gmpy2.RoundToZero)


def round_up(q: mpq | mpfr | int, precision: int) -> mpfr:
    """q rounded toward +∞ to ``precision`` bits."""
    return _rounded(q, precision, gmpy2.RoundUp)


def round_down(q: mpq | mpfr | int, precision: int) -> mpfr:
    """q rounded toward −∞ to ``precision`` bits."""
    return _rounded(q, precision, gmpy2.RoundDown)


def round_nearest(q: mpq | mpfr | int, precision: int) -> mpfr:
    """q rounded to nearest (ties to even) at ``precision`` bits."""
    return _rounded(q, precision, gmpy2.RoundToNearest)


def nearest_context(precision: int) -> gmpy2.context:
    """An MPFR context rounding to nearest at ``precision`` bits, with a wide exponent range."""
    return _context(precision, gmpy2.RoundToNearest)


def directed_context(precision: int, up: bool) -> gmpy2.context:
    """An MPFR context rounding toward +∞ (``up``) or −∞, at ``precision`` bits."""
    return _context(precision, gmpy2.RoundUp if up else gmpy2.RoundDown)


def rational_to_float(q: mpq) -> float:
    """q rounded once to the nearest double (ties to even); ±inf past the double range.

    Python's int/int true division is correctly rounded, so this is the single final rounding.
    """
    num, den = int(q.numerator), int(q.denominator)
    try:
        return num / den
    except OverflowError:
        return math.inf if num > 0 else -math.inf  # num itself may be too large for a float


@contextmanager
def working_precision(precision: int) -> Iterator[None]:
    """Within the block, MPFR arithmetic (``+ - * /`` on mpfr, :func:`exp`, :func:`log`,
    :func:`sqrt`) rounds to nearest at ``precision`` bits, with a wide exponent range.

    Operations on two ``mpq`` stay exact; an ``mpq`` meeting an ``mpfr`` is rounded once.
    Used by the utility analysis (DESIGN §5), whose probabilities are computed at high precision.
    """
    with _context(precision, gmpy2.RoundToNearest):
        yield


def exp(x: mpfr | mpq | int) -> mpfr:
    """e**x rounded to nearest in the current context (see :func:`working_precision`)."""
    return gmpy2.exp(x)


def log(x: mpfr | mpq | int) -> mpfr:
    """ln x rounded to nearest in the current context (see :func:`working_precision`)."""
    return gmpy2.log(x)


def sqrt(x: mpfr | mpq | int) -> mpfr:
    """√x rounded to nearest in the current context (see :func:`working_precision`)."""
    return gmpy2.sqrt(x)
