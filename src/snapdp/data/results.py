"""Results of a release, in long form (one row per cell and quantile), and their writers.

Every field is a function of the declaration, the query and the mechanisms' outputs (DESIGN §8.1).
See docs/data.md.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from snapdp.data.query import Query
from snapdp.data.schema import Key

__all__ = ["QueryResult", "ResultRow"]


@dataclass(frozen=True)
class ResultRow:
    """One released number: its cell's keys (typed, in ``QueryResult.key_columns`` order), the
    quantile probability for quantiles (else None), the value and its ± at the result's
    confidence (in value units; ``rank_accuracy``: ± in ranks, for quantiles)."""

    keys: tuple[Key | str, ...]
    value: float
    accuracy: float
    quantile: Fraction | None = None
    rank_accuracy: float | None = None


@dataclass(frozen=True)
class QueryResult:
    """One query's release: its rows, the ε it spent (exact), δ, the confidence of every ±, and
    plain statements that qualify it (null rules applied, the row bound the ± holds for, a
    calibration fallback, flags for useless releases)."""

    query: Query
    key_columns: tuple[str, ...]
    rows: tuple[ResultRow, ...]
    epsilon: Fraction
    delta: float
    confidence: float
    notes: tuple[str, ...] = ()
    mechanisms: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """The query's label."""
        return self.query.label

    def as_dict(self) -> dict[str, Any]:
        """The result in columnar JSON-ready form: one list per key column, ``value``,
        ``accuracy`` (and ``quantile``, ``rank_accuracy`` for quantiles), with ε as an exact
        decimal/fraction string, δ, the confidence and the notes."""
        columns: dict[str, list[Any]] = {k: [] for k in self.key_columns}
        for row in self.rows:
            for name, key in zip(self.key_columns, row.keys, strict=True):
                columns[name].append(_json_value(key))
        out: dict[str, Any] = {
            "query": self.label,
            "statistic": self.query.statistic,
            "column": self.query.column,
            "by": list(self.key_columns),
            "keys": columns,
            "value": [r.value for r in self.rows],
            "accuracy": [r.accuracy for r in self.rows],
        }
        if any(r.quantile is not None for r in self.rows):
            out["quantile"] = [_json_value(r.quantile) for r in self.rows]
            out["rank_accuracy"] = [r.rank_accuracy for r in self.rows]
        out.update(
            epsilon=_fraction_text(self.epsilon),
            delta=self.delta,
            confidence=self.confidence,
            notes=list(self.notes),
            mechanisms=self.mechanisms,
        )
        return out


def _fraction_text(x: Fraction) -> str:
    """A Fraction as a finite decimal when it is one (1/10 → "0.1"), else "p/q"."""
    d = x.denominator
    twos = fives = 0
    while d % 2 == 0:
        d //= 2
        twos += 1
    while d % 5 == 0:
        d //= 5
        fives += 1
    if d != 1:
        return f"{x.numerator}/{x.denominator}"
    places = max(twos, fives)
    scaled = x * 10**places
    text = str(abs(scaled.numerator)).rjust(places + 1, "0")
    sign = "-" if x < 0 else ""
    if places == 0:
        return sign + text
    return f"{sign}{text[:-places]}.{text[-places:]}"


def _json_value(x: object) -> object:
    if isinstance(x, Fraction):
        return int(x) if x.denominator == 1 else float(x)
    if isinstance(x, _dt.date):
        return x.isoformat()
    return x
