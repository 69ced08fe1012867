"""Results of a release, in long form (one row per cell and quantile), and their writers.

Every field is a function of the declaration, the query and the mechanisms' outputs (DESIGN §8.1).
See docs/data.md.
"""

from __future__ import annotations

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
