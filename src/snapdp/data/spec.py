"""Declarative statistics and the public facts a data release relies on (DESIGN §8).

Everything here is *public*: column names, declared bounds, declared group keys, the privacy unit,
the maximum number of rows per unit and the maximum number of rows. Nothing in this module looks
at the data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from snapdp._validation import check_finite
from snapdp.errors import ParameterError

__all__ = [
    "NULL_POLICIES",
    "Count",
    "Mean",
    "NullPolicy",
    "Statistic",
    "Sum",
    "parse_bound_spec",
    "parse_keys_spec",
]

NullPolicy = Literal["error", "drop", "lower", "upper"]
NULL_POLICIES: tuple[str, ...] = ("error", "drop", "lower", "upper")
MeanMethod = Literal["ratio", "substitute"]


@dataclass(frozen=True)
class Count:
    """The number of rows (after contribution bounding), per group when grouped."""

    @property
    def label(self) -> str:
        return "count"


@dataclass(frozen=True)
class Sum:
    """The sum of ``column`` with every value clamped to [``lower``, ``upper``] first."""

    column: str
    lower: float
    upper: float

    def __post_init__(self) -> None:
        _check_column_bounds(self.column, self.lower, self.upper)

    @property
    def label(self) -> str:
        return f"sum({self.column})"


@dataclass(frozen=True)
class Mean:
    """The mean of ``column`` with values clamped to [``lower``, ``upper``].

    ``method="ratio"`` (default): a noisy clamped sum over a noisy count, the statistic's ε split
    half and half (add/remove neighbours). ``method="substitute"``: one release of sum/n with
    Δ = (upper − lower)/n, valid only for tables whose row count n is public and whose units have
    one row each; the guarantee is then for the "substitute one unit" relation (DESIGN §8).
    """

    column: str
    lower: float
    upper: float
    method: MeanMethod = "ratio"

    def __post_init__(self) -> None:
        _check_column_bounds(self.column, self.lower, self.upper)
        if self.method not in ("ratio", "substitute"):
            raise ParameterError(f"`method` must be 'ratio' or 'substitute', not {self.method!r}")

    @property
    def label(self) -> str:
        return f"mean({self.column})"


Statistic = Count | Sum | Mean


def _check_column_bounds(column: object, lower: object, upper: object) -> None:
    if not isinstance(column, str) or not column:
        raise ParameterError(f"`column` must be a non-empty string, not {column!r}")
    lo = float(check_finite("lower", lower))
    hi = float(check_finite("upper", upper))
    if not lo < hi:
        raise ParameterError(
            f"bounds of column {column!r} must satisfy lower < upper, not [{lo!r}, {hi!r}]"
        )


def parse_bound_spec(spec: str, option: str = "--sum") -> tuple[str, float, float]:
    """``"COL:LO:HI"`` → (column, lower, upper); a ParameterError naming ``option`` otherwise.

    The column name may itself contain colons: the last two fields are the bounds.
    """
    parts = spec.rsplit(":", 2)
    if len(parts) != 3 or not parts[0]:
        raise ParameterError(
            f"`{option}` must look like COLUMN:LOWER:UPPER (e.g. income:0:500000), not {spec!r}"
        )
    column, lo_text, hi_text = parts
    try:
        lo, hi = float(lo_text), float(hi_text)
    except ValueError:
        raise ParameterError(
            f"`{option}` bounds must be numbers, as in COLUMN:LOWER:UPPER, not {spec!r}"
        ) from None
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ParameterError(f"`{option}` bounds must be finite, not {spec!r}")
    if not lo < hi:
        raise ParameterError(f"`{option}` needs LOWER < UPPER, not {spec!r}")
    return column, lo, hi


def parse_keys_spec(spec: str) -> tuple[str, list[str]]:
    """``"COL=a,b,c"`` → (column, [keys]); keys are compared with the column's text form."""
    column, sep, rest = spec.partition("=")
    keys = [k.strip() for k in rest.split(",")] if sep else []
    if not sep or not column.strip() or not keys or any(not k for k in keys):
        raise ParameterError(
            f"`--keys` must look like COLUMN=key1,key2,... (e.g. sex=0,1), not {spec!r}"
        )
    if len(set(keys)) != len(keys):
        raise ParameterError(f"`--keys` must not repeat a key, not {spec!r}")
    return column.strip(), keys
