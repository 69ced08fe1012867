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

__all__ = [
    "MAX_DIGITS",
    "MAX_EXPONENT",
    "SIZE_RULE",
    "NumberSizeError",
    "check_count",
    "check_epsilon",
    "check_number_size",
    "check_positive_finite",
    "check_real",
    "check_unicode",
    "check_value",
    "exact_decimal",
    "exact_value",
    "shown_text",
]

Number = int | float | Fraction


def check_unicode(text: str, what: str, parameter: str) -> str:
    """``text``, when it is valid Unicode text; a ParameterError (``parameter``) naming ``what``
    otherwise.

    A Python string may hold a lone surrogate (``'\\ud800'``: from the API, a JSON escape, or a
    command-line argument that is not UTF-8), which has no UTF-8 form: no engine can hold it in its
    SQL or compare it with the data's text (which is always valid Unicode: docs/data.md, "What does
    not fit"), nor write it to a ledger or a results file. Such text in a declaration or a query
    (keys, imputed values and filter literals; column names and the privacy unit; the CSV
    delimiter; a query's name; a dataset's name) is refused here, from what the user wrote alone,
    before any data is read.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        shown = repr(text) if len(text) <= 40 else repr(text[:40]) + "…"
        raise ParameterError(
            f"{what} must be valid Unicode text: {shown} holds a lone surrogate at character "
            f"{exc.start + 1}",
            parameter=parameter,
        ) from None
    return text


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

#: The most significant digits a number written by a user may have (leading zeros not counted)
#: and the largest exponent of its leading digit in size, so 1e-1000 <= |x| < 1e1001 (docs/data.md,
#: "Numbers"): every real bound, key,
#: edge, ε or confidence fits with room to spare, and a number is checked against these before
#: it is built, so that no input can make the exact arithmetic build an integer of millions of
#: digits (``1e30000000``) or run into Python's limit on converting long digit strings.
MAX_DIGITS = 100
MAX_EXPONENT = 1000
_NUMBER_TEXT = re.compile(
    r"(?P<sign>[+-]?)(?P<mantissa>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE](?P<exp>[+-]?[0-9]+))?"
)
_RATIONAL_TEXT = re.compile(r"(?P<num>[+-]?[0-9]+)/(?P<den>[0-9]+)")


def shown_text(text: str) -> str:
    """``text`` as an error message shows it: a long one cut to its ends and its length."""
    return text if len(text) <= 32 else f"{text[:12]}…{text[-8:]} ({len(text):,} characters)"


class NumberSizeError(ParameterError):
    """A number beyond :data:`MAX_DIGITS` / :data:`MAX_EXPONENT` (a front end re-raises it at
    the place it was written; one that reads "not a number" as another rule lets it pass).
    ``shown``: the number as the message shows it."""

    shown: str = ""


#: The size rule in words, for messages that locate the number themselves (SQL's caret).
SIZE_RULE = (
    f"at most {MAX_DIGITS} digits with an exponent of at most {MAX_EXPONENT} "
    '(docs/data.md, "Numbers")'
)


def _too_large(name: str, shown: str) -> NumberSizeError:
    message = f"`{name}` must be a number of {SIZE_RULE}, not {shown}"
    error = NumberSizeError(message, parameter=name)
    error.shown = shown
    return error


def check_number_size(name: str, value: object, *, shown: str | None = None) -> None:
    """Refuse a number larger than the limits (:data:`MAX_DIGITS`, :data:`MAX_EXPONENT`):
    an int of more digits, or a Decimal or Fraction whose digits or exponent exceed them (a
    Fraction's numerator and denominator each), as a ParameterError naming ``name``. Other
    values pass (their own checks follow)."""
    if isinstance(value, bool):
        return
    if isinstance(value, int):
        if abs(value) >= 10**MAX_DIGITS:
            raise _too_large(name, f"an integer of more than {MAX_DIGITS} digits")
    elif isinstance(value, Fraction):
        for part in (value.numerator, value.denominator):
            if abs(part) >= 10 ** (MAX_DIGITS + MAX_EXPONENT):
                raise _too_large(
                    name, f"a fraction of more than {MAX_DIGITS + MAX_EXPONENT} digits"
                )
    elif isinstance(value, Decimal) and value.is_finite():
        digits = value.as_tuple().digits
        if len(digits) > MAX_DIGITS or (value != 0 and abs(value.adjusted()) > MAX_EXPONENT):
            raise _too_large(name, shown_text(str(value) if shown is None else shown))


def exact_decimal(text: str, *, name: str, rational: bool = False) -> Fraction:
    """The number written in ``text`` exactly (``"0.1"`` is 1/10; with ``rational``, ``"1/3"``
    too), checked against the limits on its digits and exponent *before* anything is built from
    it, so that it returns in microseconds for any text. A ParameterError naming ``name`` for
    text that is no number, or too large a one. Spaces around the number are ignored; a sign,
    digits with an optional point, and an optional exponent (``e`` or ``E``) are accepted."""
    t = text.strip()
    m = _NUMBER_TEXT.fullmatch(t)
    if m is None and rational:
        r = _RATIONAL_TEXT.fullmatch(t)
        if r is not None:
            num, den = r.group("num").lstrip("+-"), r.group("den")
            if len(num) > MAX_DIGITS or len(den) > MAX_DIGITS:
                raise _too_large(name, shown_text(t))
            if int(den) == 0:
                raise ParameterError(
                    f"`{name}` must be a number, not {shown_text(t)} (a zero denominator)",
                    parameter=name,
                )
            return Fraction(int(r.group("num")), int(den))
    if m is None:
        raise ParameterError(
            f"`{name}` must be a number such as 3, 0.5 or 1e-3, not {shown_text(t) or 'nothing'}",
            parameter=name,
        )
    exp = m.group("exp")
    if exp is not None and len(exp.lstrip("+-").lstrip("0")) > len(str(MAX_EXPONENT)) + 1:
        raise _too_large(name, shown_text(t))  # before Decimal sees an exponent of any size
    d = Decimal(t)  # linear in the text; nothing of the number's size is built yet
    check_number_size(name, d, shown=t)
    return Fraction(0) if d == 0 else Fraction(d)


def exact_value(value: object, *, name: str) -> Fraction:
    """An exact number from an int, a Fraction, or anything whose text is a number (a str such
    as ``"0.1"`` or ``"1/3"``, a Decimal, a float by its shortest repr), size-checked first
    (:func:`exact_decimal`); a ParameterError naming ``name`` otherwise."""
    if isinstance(value, bool):
        raise ParameterError(f"`{name}` must be a number, not {value}", parameter=name)
    if isinstance(value, (int, Fraction)):
        check_number_size(name, value)
        return Fraction(value)
    return exact_decimal(value if isinstance(value, str) else str(value), name=name, rational=True)


def check_epsilon(name: str, x: object) -> Fraction:
    """A privacy parameter as an exact positive rational (DESIGN §2.3, §8.5; docs/mechanism.md).

    Accepts an int, a ``Fraction``, a ``Decimal`` or a decimal or rational string such as
    ``"0.1"`` or ``"1/3"`` (taken exactly: ``"0.1"`` is 1/10), or a float (taken at its exact
    binary value: ``0.1`` is 0.1000000000000000055…). Anything else, non-finite or not > 0, is
    a ParameterError naming ``name``.
    """
    value: Fraction
    if isinstance(x, str):
        text = x.strip()
        if not (_DECIMAL_TEXT.fullmatch(text) or _RATIONAL_TEXT.fullmatch(text)):
            raise ParameterError(
                f"`{name}` must be a positive number such as 0.5, 1e-3 or 1/3, not "
                f"{shown_text(text) or 'nothing'}",
                parameter=name,
            )
        value = exact_decimal(text, name=name, rational=True)
    elif isinstance(x, Decimal):
        if not x.is_finite():
            raise ParameterError(
                f"`{name}` must be finite and > 0, not {shown_number(x)}", parameter=name
            )
        check_number_size(name, x)
        value = Fraction(x)
    else:
        v = check_positive_finite(name, x)
        value = Fraction(v)
    if not value > 0:
        raise ParameterError(f"`{name}` must be > 0, not {shown_number(x)}", parameter=name)
    return value
