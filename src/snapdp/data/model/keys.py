"""Typed grouping keys and exact numbers of a declaration (docs/data.md, "Keys and bins").

A declared key is compared as a typed value, never as text: :func:`typed_key` turns what a
declaration, a flag or a plan file gives (a string or a Python value) into the value of the
column's type, exactly, or refuses it; :func:`exact_number` does the same for a bound or a bin
edge.
"""

from __future__ import annotations

import datetime as _dt
import math
from decimal import Decimal
from fractions import Fraction
from typing import TypeAlias

from snapdp._validation import (
    MAX_DIGITS,
    SIZE_RULE,
    NumberSizeError,
    check_number_size,
    check_unicode,
    exact_decimal,
)
from snapdp.errors import ParameterError

__all__ = ["Key", "exact_number", "typed_key"]

#: A typed grouping key: int (integer), Fraction (decimal), str (text), bool, date.
Key: TypeAlias = int | Fraction | str | bool | _dt.date

_TRUE = ("true", "t", "yes", "1")
_FALSE = ("false", "f", "no", "0")


def typed_key(kind: str, value: object, column: str = "?") -> Key:
    """``value`` as a key of a column of type ``kind``, exactly; a ParameterError otherwise.

    Strings are parsed as the declared type (the CLI's ``--keys sex=0,1`` on an integer column
    gives the integers 0 and 1; "3.0" is not an integer key); values of the right Python type are
    taken as they are. Keys are compared as these typed values, never as text. A text key must be
    valid Unicode text (:func:`~snapdp._validation.check_unicode`).
    """
    where = f"column {column!r} ({kind})"
    if kind == "text":
        if isinstance(value, str):
            return check_unicode(value, f"{where}: a key", "keys")
        raise ParameterError(f"{where}: a key must be a string, not {value!r}", parameter="keys")
    if kind == "integer":
        if isinstance(value, bool):
            raise ParameterError(
                f"{where}: a key must be an integer, not {value!r}", parameter="keys"
            )
        if isinstance(value, int):
            return value
        if isinstance(value, str):
            text = value.strip()
            if text and (text.lstrip("+-").isdigit()) and text.count("-") + text.count("+") <= 1:
                if len(text.lstrip("+-").lstrip("0")) > MAX_DIGITS:  # before int() reads it
                    raise NumberSizeError(
                        f"{where}: a key must be an integer of {SIZE_RULE}, not one of "
                        f"{len(text):,} characters",
                        parameter="keys",
                    )
                return int(text)
        raise ParameterError(
            f"{where}: a key must be an integer such as 3, not {value!r}", parameter="keys"
        )
    if kind == "decimal":
        if isinstance(value, bool):
            raise ParameterError(
                f"{where}: a key must be a number, not {value!r}", parameter="keys"
            )
        return exact_number(f"{column} key", value)
    if kind == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
            return value.strip().lower() in _TRUE
        raise ParameterError(
            f"{where}: a key must be true or false, not {value!r}", parameter="keys"
        )
    if kind == "date":
        if isinstance(value, _dt.datetime):
            raise ParameterError(f"{where}: a key must be a date, not {value!r}", parameter="keys")
        if isinstance(value, _dt.date):
            return value
        if isinstance(value, str):
            try:
                return _dt.date.fromisoformat(value.strip())
            except ValueError:
                pass
        raise ParameterError(
            f"{where}: a key must be a date such as 2024-01-31, not {value!r}", parameter="keys"
        )
    raise ParameterError(f"unknown column type {kind!r}", parameter="type")


def exact_number(name: str, value: object) -> Fraction:
    """A finite number, exactly: ints, Fractions, Decimals and decimal strings as written; floats
    at their exact binary value."""
    if isinstance(value, bool):
        raise ParameterError(f"`{name}` must be a number, not {value!r}", parameter=name)
    if isinstance(value, str):
        try:
            return exact_decimal(value, name=name)
        except NumberSizeError:
            raise
        except ParameterError:
            raise ParameterError(
                f"`{name}` must be a finite number, not {value!r}", parameter=name
            ) from None
    check_number_size(name, value)  # before a Decimal's exponent is expanded
    try:
        if isinstance(value, (int, Fraction, Decimal)):
            result = Fraction(value)
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise ParameterError(f"`{name}` must be finite, not {value!r}", parameter=name)
            result = Fraction(value)
        else:
            raise ParameterError(f"`{name}` must be a number, not {value!r}", parameter=name)
    except (ValueError, ArithmeticError):
        raise ParameterError(
            f"`{name}` must be a finite number, not {value!r}", parameter=name
        ) from None
    return result
