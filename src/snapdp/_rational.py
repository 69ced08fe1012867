"""Exact rationals as text: the ledger's storage form ("1/10") and the user's decimal ("0.1").

A privacy parameter is an exact rational end to end (DESIGN §2.3, §8.5; docs/data.md, "Budgets and
the ledger"). These helpers turn one into text and back without any rounding.
"""

from __future__ import annotations

import re
from fractions import Fraction

__all__ = ["format_rational", "parse_rational", "storage_text"]

_STORED = re.compile(r"(0|[1-9][0-9]*)/([1-9][0-9]*)")
_MAX_DECIMAL_DIGITS = 30


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
