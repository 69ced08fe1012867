"""Exact rationals as text: the ledger's storage form ("1/10") and the user's decimal ("0.1").

A privacy parameter is an exact rational end to end (DESIGN §2.3, §8.5; docs/data.md, "Budgets and
the ledger"). These helpers turn one into text and back without any rounding.
"""

from __future__ import annotations

import re
from decimal import Context, Decimal
from fractions import Fraction

__all__ = [
    "format_rational",
    "parse_rational",
    "shown_number",
    "shown_rational",
    "storage_text",
]

_STORED = re.compile(r"(0|[1-9][0-9]*)/([1-9][0-9]*)")
_MAX_DECIMAL_DIGITS = 30
_SHOWN_CHARS = 32  # the longest number a message or label shows exactly
_EXACT_BITS = 4096  # past this, only the rounded form is computed (cheap for any size)
_ROUNDED_DIGITS = 12


def storage_text(x: Fraction) -> str:
    """``x`` as ``"p/q"`` in lowest terms (``"1/10"``, ``"1/1"``): the ledger's exact form."""
    return f"{x.numerator}/{x.denominator}"


def parse_rational(text: object) -> Fraction | None:
    """The Fraction that :func:`storage_text` wrote, or None if ``text`` is not in that form.

    Only a non-negative ``"p/q"`` in lowest terms is accepted, so that a hand-edited value
    (``"nan"``, ``"-1/2"``, ``"0.1"``, ``"2/4"``) is detected rather than reinterpreted.
    """
    if not isinstance(text, str):
        return None
    match = _STORED.fullmatch(text)
    if match is None:
        return None
    value = Fraction(int(match.group(1)), int(match.group(2)))
    return value if storage_text(value) == text else None


def format_rational(x: Fraction, *, max_digits: int | None = _MAX_DECIMAL_DIGITS) -> str:
    """``x`` for people: an exact decimal when one is short (1/10 → ``"0.1"``, 5/4 → ``"1.25"``,
    3 → ``"3"``), else ``"p/q"`` (1/3 → ``"1/3"``). Never rounded. ``max_digits``: the most
    decimal places written before falling back to ``"p/q"`` (None: any finite decimal)."""
    den = x.denominator
    twos = fives = 0
    while den % 2 == 0:
        den //= 2
        twos += 1
    while den % 5 == 0:
        den //= 5
        fives += 1
    digits = max(twos, fives)
    if den != 1 or (max_digits is not None and digits > max_digits):
        return storage_text(x)
    sign = "-" if x < 0 else ""
    scaled = abs(x) * 10**digits
    assert scaled.denominator == 1
    whole, frac = divmod(scaled.numerator, 10**digits)
    if digits == 0:
        return f"{sign}{whole}"
    return f"{sign}{whole}.{frac:0{digits}d}".rstrip("0").rstrip(".")


def exact_text(x: Fraction) -> str:
    """``x`` exactly, as people and files read it: a finite decimal when it is one (1/10 →
    ``"0.1"``), else ``"p/q"`` (the one number-text rule of plans, JSON, results and ε)."""
    return format_rational(x, max_digits=None)


def shown_rational(x: Fraction, *, max_chars: int = _SHOWN_CHARS) -> str:
    """``x`` for messages and labels, at most about ``max_chars`` long: the shortest exact form
    that fits — a plain decimal (``"0.1"``, ``"5.000000000000001"``), a decimal in scientific
    form (``"1e400"``), or ``"p/q"`` (``"1/3"``) — else ``x`` rounded to 12 significant digits
    and marked as rounded with a leading ``"≈"`` (``"≈3.33333333333e-401"``). Any size is
    shown in microseconds: huge numerators and denominators are never written out in full."""
    num, den = x.numerator, x.denominator
    if max(abs(num).bit_length(), den.bit_length()) <= _EXACT_BITS:
        plain = format_rational(x, max_digits=None)
        if len(plain) <= max_chars:
            return plain
        if "/" not in plain:
            scientific = _scientific(plain)
            if len(scientific) <= max_chars:
                return scientific
    return "≈" + _rounded(x)


def _scientific(plain: str) -> str:
    """A plain decimal (``"-0.00012"``) in exact scientific form (``"-1.2e-4"``)."""
    sign = "-" if plain.startswith("-") else ""
    whole, _, frac = plain.lstrip("-").partition(".")
    digits = whole + frac
    significant = digits.lstrip("0")
    exponent = len(whole) - (len(digits) - len(significant)) - 1
    significant = significant.rstrip("0") or "0"
    mantissa = significant[0] + ("." + significant[1:] if len(significant) > 1 else "")
    return f"{sign}{mantissa}e{exponent}"


def _rounded(x: Fraction) -> str:
    """``x`` to 12 significant digits in scientific form, from 128-bit heads of its numerator
    and denominator (relative error about 2⁻¹²⁶, far below the digits shown)."""
    if x == 0:
        return "0"
    num, den = abs(x.numerator), x.denominator
    a, b = max(0, num.bit_length() - 128), max(0, den.bit_length() - 128)
    ctx = Context(prec=_ROUNDED_DIGITS + 10, Emax=10**15, Emin=-(10**15))
    head = ctx.divide(Decimal(num >> a), Decimal(den >> b))
    value = ctx.multiply(head, ctx.power(Decimal(2), a - b))
    text = f"{value:.{_ROUNDED_DIGITS - 1}e}"
    mantissa, _, exponent = text.partition("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{'-' if x < 0 else ''}{mantissa}e{int(exponent)}"


def shown_number(x: object) -> str:
    """Any number a user gave, as text for a message — never a Python repr such as
    ``Fraction(0, 1)``, ``Decimal('1E+2')`` or ``np.float64(0.5)``: Fractions and finite Decimals
    by :func:`shown_rational`, floats by their shortest repr (``0.1``, ``nan``, ``inf``), ints
    as digits (capped like a rational); anything else as ``repr``."""
    if hasattr(x, "item") and callable(x.item) and type(x).__module__ == "numpy":
        x = x.item()  # a numpy scalar: the Python number it holds
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, float):
        return repr(x)
    if isinstance(x, Decimal):
        if not x.is_finite():
            return "nan" if x.is_nan() else ("-inf" if x < 0 else "inf")
        return shown_rational(Fraction(x))
    if isinstance(x, (int, Fraction)):
        return shown_rational(Fraction(x))
    return repr(x)
