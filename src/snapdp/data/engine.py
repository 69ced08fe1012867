"""The engine interface: clamped, contribution-bounded per-group aggregates (DESIGN §8).

An engine sees the data; nothing else in :mod:`snapdp.data` does. It computes, exactly and in
declared-key order, for the rows left after contribution bounding (at most ``max_rows_per_unit``
rows per privacy unit, chosen by a rule that looks only at that unit's rows) and after dropping
rows whose group key was not declared:

* the number of rows per group;
* for each requested column: the sum of its values turned into clamped integer quanta
  (see :mod:`snapdp.data.sensitivity`), the number of values summed (after the null policy), the
  number of values without a number (null, NaN or non-numeric) and the number of non-numeric
  values among them (so the caller can refuse cleanly).

Declared keys absent from the data get zeros. Engines differ only in where they run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from snapdp.data.sensitivity import NoiseSpec
from snapdp.data.spec import NullPolicy
from snapdp.errors import ParameterError

__all__ = [
    "AggregatePlan",
    "Aggregates",
    "ColumnAggregates",
    "ColumnPlan",
    "Engine",
    "ExecutorNoiseEngine",
    "NoiseRequest",
    "canonical_int",
    "source_array",
]

_INT_TEXT = re.compile(r"-?(0|[1-9][0-9]*)")


def canonical_int(key: str) -> int | None:
    """The 64-bit integer whose text form is ``key``, or None if none prints as ``key``.

    Keys match a column's text form; for an integer column, matching ``canonical_int(key)``
    against the integers is the same thing, without a string cast per row.
    """
    if not _INT_TEXT.fullmatch(key) or key == "-0":
        return None
    value = int(key)
    return value if -(1 << 63) <= value < (1 << 63) else None


@dataclass(frozen=True)
class ColumnPlan:
    """One numeric column: values clamped to quanta in [lower_q, upper_q] at ``decimals``."""

    column: str
    decimals: int
    lower_q: int
    upper_q: int
    nulls: NullPolicy


@dataclass(frozen=True)
class AggregatePlan:
    """What to aggregate. ``keys`` are compared with the group column's text form."""

    columns: tuple[ColumnPlan, ...] = ()
    privacy_unit: str | None = None
    max_rows_per_unit: int = 1
    by: str | None = None
    keys: tuple[str, ...] | None = None


@dataclass
class ColumnAggregates:
    """Per-group exact integer sums of quanta and counts of summed values; data-quality counts."""

    sums: npt.NDArray[np.int64]
    counts: npt.NDArray[np.int64]
    nulls: int = 0
    non_numeric: int = 0
    example: str | None = None


@dataclass
class Aggregates:
    """Rows per group and per-column aggregates (aligned with ``plan.columns``), in declared-key
    order (one group if ungrouped)."""

    rows: npt.NDArray[np.int64]
    columns: list[ColumnAggregates] = field(default_factory=list)

    @classmethod
    def zeros(cls, n_groups: int, n_columns: int) -> Aggregates:
        """All-zero aggregates for ``n_groups`` groups and ``n_columns`` columns, to fill in."""

        def zero() -> npt.NDArray[np.int64]:
            return np.zeros(n_groups, dtype=np.int64)

        return cls(zero(), [ColumnAggregates(zero(), zero()) for _ in range(n_columns)])


def check_plan_columns(plan: AggregatePlan, columns: Sequence[str]) -> None:
    """Every column the plan names (values, privacy unit, group-by) must be one of ``columns``.

    Raises ParameterError naming the column, its role, and the columns the data has.
    """
    named = [(cp.column, "value") for cp in plan.columns]
    if plan.privacy_unit is not None:
        named.append((plan.privacy_unit, "privacy-unit"))
    if plan.by is not None:
        named.append((plan.by, "group-by"))
    for column, role in named:
        if column not in columns:
            raise ParameterError(
                f"{role} column {column!r} is not in the data; its columns are "
                + ", ".join(repr(c) for c in columns)
            )


class Engine(Protocol):
    """Computes :class:`Aggregates` for a plan over one table."""

    def column_names(self) -> list[str]:
        """The table's column names."""
        ...

    def aggregate(self, plan: AggregatePlan) -> Aggregates:
        """The exact aggregates of the plan (see the module docstring)."""
        ...

    def describe(self) -> str:
        """A short public label of the data source, for the ledger."""
        ...


@dataclass(frozen=True)
class NoiseRequest:
    """One array of noisy values to draw: ``source`` names the exact aggregate ("rows",
    "sum<j>" or "count<j>" for plan column j), ``spec`` the mechanism; ``key`` names the result.
    """

    key: str
    source: str
    spec: NoiseSpec


def source_array(aggregates: Aggregates, source: str) -> npt.NDArray[np.int64]:
    """The exact aggregate a :class:`NoiseRequest` refers to."""
    if source == "rows":
        return aggregates.rows
    if source.startswith("sum"):
        return aggregates.columns[int(source[3:])].sums
    if source.startswith("count"):
        return aggregates.columns[int(source[5:])].counts
    raise ValueError(f"unknown aggregate {source!r}")


@runtime_checkable
class ExecutorNoiseEngine(Engine, Protocol):
    """An engine that can also draw the noise where the aggregates live (e.g. Spark executors).

    ``noisy_aggregate`` computes the aggregates of ``plan``, calls ``refuse`` with their
    data-quality counts (it raises to stop the release before any noise is drawn), then draws
    each request's noise with the mechanism's default OS CSPRNG and returns the noisy arrays (in
    the mechanism's units, declared-key order). The exact aggregates need not leave the engine:
    the returned :class:`Aggregates` may hold only the data-quality counts.
    """

    def wants_executor_noise(self, n_groups: int) -> bool:
        """Whether to draw the noise in the engine for this many groups."""
        ...

    def noisy_aggregate(
        self,
        plan: AggregatePlan,
        requests: Sequence[NoiseRequest],
        refuse: Callable[[Aggregates], None],
    ) -> tuple[Aggregates, dict[str, npt.NDArray[np.float64]]]:
        """See the class docstring."""
        ...
