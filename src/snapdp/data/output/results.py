"""Results of a release, in long form (one row per cell and quantile); their writers are
:mod:`snapdp.data.output.writers`.

Every field is a function of the declaration, the query and the mechanisms' outputs (DESIGN §8.1).
See docs/data.md.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from msgspec import Struct, field

from snapdp._rational import exact_text
from snapdp.data.model.keys import Key
from snapdp.data.model.query import Query

__all__ = ["QueryResult", "ResultRow", "Results", "TableMethods"]


class ResultRow(Struct, frozen=True):
    """One released number: its cell's keys (typed, in ``QueryResult.key_columns`` order), the
    quantile probability for quantiles (else None), the value and its ± at the result's
    confidence (in value units; ``rank_accuracy``: ± in ranks, for quantiles). ``independent``:
    for a count made consistent with others (docs/data.md, "Tables that add up"), its value as
    released on its own, before the joint fit; else None. ``interval``: for a quantile, the
    values the ± is read from (it covers them), from the released tree. A quantile's value and
    interval are ints, exactly, when its integer column's bounds hold no double (docs/data.md,
    "Released quantiles are inside the bounds")."""

    keys: tuple[Key | str, ...]
    value: float | int
    accuracy: float
    quantile: Fraction | None = None
    rank_accuracy: float | None = None
    independent: float | None = None
    interval: tuple[float | int, float | int] | None = None


class TableMethods:
    """The notebook methods of a release's results (docs/notebooks.md): a DataFrame of one row
    per released number (:mod:`snapdp.data.output.frames` says what each column holds) and an
    HTML table for Jupyter. A subclass says which results it holds (:meth:`_table_results`)."""

    def _table_results(self) -> Sequence[QueryResult]:
        raise NotImplementedError

    def to_arrow(self) -> Any:
        """The results as a ``pyarrow.Table``."""
        from snapdp.data.output import frames

        return frames.to_arrow(self._table_results())

    def to_pandas(self) -> Any:
        """The results as a pandas DataFrame (needs ``snapdp[notebook]``)."""
        from snapdp.data.output import frames

        return frames.to_pandas(self._table_results())

    def to_polars(self) -> Any:
        """The results as a polars DataFrame (needs ``snapdp[notebook]``)."""
        from snapdp.data.output import frames

        return frames.to_polars(self._table_results())

    def _repr_html_(self) -> str:
        from snapdp.data.output import frames

        results = self._table_results()
        total = exact_text(sum((r.epsilon for r in results), Fraction(0)))
        noun = "query" if len(results) == 1 else "queries"
        return frames.html_table(results, f"{len(results)} {noun}, ε = {total} in all")


class QueryResult(TableMethods, Struct, frozen=True):
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
    #: For a planned query with a target ± (docs/plans.md): whether every ± met it (None: no
    #: target), and "target met" or "target missed: …" with what it would have needed.
    target_met: bool | None = None
    target_note: str | None = None

    @property
    def label(self) -> str:
        """The query's label."""
        return self.query.label

    def _table_results(self) -> Sequence[QueryResult]:
        return (self,)

    def _repr_html_(self) -> str:
        from snapdp.data.output import frames

        caption = f"{self.label}: ε = {exact_text(self.epsilon)}"
        if self.target_note is not None:
            caption += f"; {self.target_note}"
        return frames.html_table((self,), caption)

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
        if any(r.interval is not None for r in self.rows):
            out["interval"] = [None if r.interval is None else list(r.interval) for r in self.rows]
        if any(r.independent is not None for r in self.rows):
            out["independent_value"] = [r.independent for r in self.rows]
        out.update(
            epsilon=exact_text(self.epsilon),
            delta=self.delta,
            confidence=self.confidence,
            notes=list(self.notes),
            mechanisms=self.mechanisms,
        )
        if self.target_met is not None:
            out.update(target_met=self.target_met, target=self.target_note)
        return out


class Results(list[QueryResult], TableMethods):
    """The list of results :meth:`snapdp.data.PrivateTable.release` (and ``sql``) returns: a
    plain list, one :class:`QueryResult` per query, that also turns into one DataFrame
    (``to_pandas()``, ``to_polars()``, ``to_arrow()``) and shows as a table in Jupyter."""

    def _table_results(self) -> Sequence[QueryResult]:
        return self


def _json_value(x: object) -> object:
    if isinstance(x, Fraction):
        return int(x) if x.denominator == 1 else float(x)
    if isinstance(x, _dt.date):
        return x.isoformat()
    return x
