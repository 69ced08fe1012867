"""Checks of public inputs: every failure names the parameter, the rule and the value."""

from __future__ import annotations

import math
import numbers
import re
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np

from snapdp._rational import shown_number
from snapdp.errors import ParameterError

__all__ = ["check_count", "check_epsilon", "check_positive_finite", "check_real", "check_value"]

Number = int | float | Fraction


def check_real(name: str, x: object) -> Number:
    """``x`` as an int, float or Fraction, without rounding; ParameterError for anything else.

    Accepts Python and numpy integers and floats and ``fractions.Fraction``. Rejects bool (almost
    always a mistake), strings, None, complex numbers and other objects.
    """
    if isinstance(x, (bool, np.bool_)):
        raise ParameterError(f"`{name}` must be a real number, not a bool ({x})", parameter=name)
    if isinstance(x, np.floating) and x.dtype.itemsize > 8:
        return _longdouble(x)
    if isinstance(x, (float, np.floating)):
        return float(x)  # numpy float16/32/64 → the same value as a double, exactly
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, Fraction):
        return x
    if isinstance(x, numbers.Integral):
        return int(x)
    if isinstance(x, numbers.Number):  # Decimal, complex, other numeric types
        raise ParameterError(
            f"`{name}` must be a real number (int, float or Fraction), not {type(x).__name__} "
            f"({shown_number(x)}); convert it explicitly so that no rounding happens unseen",
            parameter=name,
        )
    raise ParameterError(
        f"`{name}` must be a real number, not {type(x).__name__} ({x!r})", parameter=name
    )


def _longdouble(x: np.floating[Any]) -> Number:
    """A numpy longdouble at its exact value: a float if a double holds it, else a Fraction."""
    if not np.isfinite(x):
        return float(x)  # ±inf and NaN are the same as doubles
    num, den = x.as_integer_ratio()
    exact = Fraction(num, den)
    return float(x) if Fraction(float(x)) == exact else exact


def _is_nan(x: Number) -> bool:
    return isinstance(x, float) and math.isnan(x)


def _is_finite(x: Number) -> bool:
    return not isinstance(x, float) or math.isfinite(x)


def check_count(name: str, x: object) -> int:
    """An integer >= 1 (a bool is not one)."""
    if isinstance(x, bool) or not isinstance(x, int) or x < 1:
        raise ParameterError(f"`{name}` must be an integer >= 1, not {x!r}", parameter=name)
    return x


def check_positive_finite(name: str, x: object) -> Number:
    """A finite real number > 0."""
    v = check_real(name, x)
    if not _is_finite(v):
        raise ParameterError(
            f"`{name}` must be finite and > 0, not {shown_number(v)}", parameter=name
        )
    if not v > 0:
        raise ParameterError(f"`{name}` must be > 0, not {shown_number(v)}", parameter=name)
    return v


def check_finite(name: str, x: object) -> Number:
    """A finite real number."""
    v = check_real(name, x)
    if not _is_finite(v):
        raise ParameterError(f"`{name}` must be finite, not {shown_number(v)}", parameter=name)
    return v


def check_value(name: str, x: object) -> Number:
    """A real number that is not NaN (±inf allowed: the mechanism clamps it)."""
    v = check_real(name, x)
    if _is_nan(v):
        raise ParameterError(f"`{name}` must not be NaN", parameter=name)
    return v


def check_probability(name: str, x: object) -> float:
    """A float strictly between 0 and 1."""
    v = check_real(name, x)
    if not (0 < v < 1):
        raise ParameterError(f"`{name}` must be in (0, 1), not {shown_number(v)}", parameter=name)
    return float(v)


_DECIMAL_TEXT = re.compile(r"[+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")


_MAX_DECIMAL_EXPONENT = 4000  # ε beyond 10**±4000 is no privacy parameter; its Fraction is huge


def _decimal_fraction(name: str, d: Decimal, shown: object) -> Fraction:
    """A finite Decimal as a Fraction, refusing exponents so large that the conversion would
    build an integer of millions of digits (e.g. ``"1e999999999"``)."""
    if d != 0 and abs(d.adjusted()) > _MAX_DECIMAL_EXPONENT:
        raise ParameterError(
            f"`{name}` must be between 1e-{_MAX_DECIMAL_EXPONENT} and 1e{_MAX_DECIMAL_EXPONENT}, "
            f"not {shown!r}",
            parameter=name,
        )
    return Fraction(d)


def check_epsilon(name: str, x: object) -> Fraction:
    """A privacy parameter as an exact positive rational (DESIGN §2.3, §8.5; docs/mechanism.md).

    Accepts an int, a ``Fraction``, a ``Decimal`` or a decimal string such as ``"0.1"`` (taken
    exactly: ``"0.1"`` is 1/10), or a float (taken at its exact binary value: ``0.1`` is
    0.1000000000000000055…). Anything else, non-finite or not > 0, is a ParameterError naming
    ``name``.
    """
    value: Fraction
    if isinstance(x, str):
        text = x.strip()
        if not _DECIMAL_TEXT.fullmatch(text):
            raise ParameterError(
                f"`{name}` must be a positive decimal number such as 0.5 or 1e-3, not {x!r}",
                parameter=name,
            )
        value = _decimal_fraction(name, Decimal(text), x)
    elif isinstance(x, Decimal):
        if not x.is_finite():
            raise ParameterError(
                f"`{name}` must be finite and > 0, not {shown_number(x)}", parameter=name
            )
        value = _decimal_fraction(name, x, x)
    else:
        v = check_positive_finite(name, x)
        value = Fraction(v)
    if not value > 0:
        raise ParameterError(f"`{name}` must be > 0, not {shown_number(x)}", parameter=name)
    return value
