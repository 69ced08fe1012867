"""Release plans: one file for a whole workload, and the accuracy-first planner (DESIGN §8.6;
docs/plans.md).

A plan holds the declaration (a :class:`~snapdp.data.model.schema.Schema`), the source, an optional
``total_epsilon`` and a list of :class:`PlannedQuery`. Each query takes either a fixed
``epsilon``, or a target ``accuracy`` (± at ``confidence``: it gets the smallest ε that meets
it), or a ``weight`` (the weighted queries share what is left of ``total_epsilon`` in
proportion). :meth:`Plan.preview` runs the planner and spends nothing; ``snapdp.data.Plan.run``
(:func:`snapdp.data.release.run.run_plan`) releases every query as one ledger entry (all or
nothing) and can write the results as files.

**The planner.** Each query's ± depends only on its own ε and is non-increasing in it (a
snapping mechanism's accuracy falls as ε grows: λ′ = 1/ε′ falls and Λ, the smallest power of two
≥ λ′, falls with it), so the smallest total that meets every target is the sum of the smallest ε
of each target query. That ε is found by bisection on exact rationals: a bracket [lo, hi] with lo
failing and hi meeting the target (grown around a first guess from ± ≈ c/ε), halved until
hi ≤ lo·(1 + 1/400), then rounded up to the shortest decimal within another factor
(1 + 1/400) (still meeting the target, by monotonicity, and checked). So each planned ε is at
most (1 + 1/400)² < 1.006 times the smallest ε that meets its target, and so is the total.

**Means, variances, quantiles.** Their ± divides by a group's row count, which is private, and
a plan never promises a ± on a guess about it (DESIGN §8.7). A target query either declares a
public lower bound ``group_size`` (a fact the data owner vouches for; the ± is then stated for
that size, ``AccuracyStatement.at(n)`` of :mod:`snapdp.data.statistics`), or it is released in
two phases under a cap (:mod:`snapdp.data.planner.two_phase`): its counts first, then the rest
with an ε chosen from the released counts. A two-phase query's cap is its share of what
``total_epsilon`` leaves after the fixed and one-phase target queries, shared with the weighted
queries as if it had weight 1; the plan's total is then "at most".

**Speed.** Every accuracy the planner computes is a pure function of hashable public parameters
(schema, query, ε, confidence, group size) and cached across plans (``_statement`` and
``_target_epsilon`` of :mod:`snapdp.data.planner.epsilons`), so re-planning after one query's change
re-plans only that query.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, TypeVar

from msgspec.structs import fields, replace

from snapdp._validation import check_epsilon
from snapdp.data.model.names import KeyedError, Locator, Path_, describe_key
from snapdp.data.model.names import located as _located
from snapdp.data.model.observed import (
    DATA_KEY_TYPES,
    data_delta,
    refuse_with_data_keys,
)
from snapdp.data.model.schema import Column, Schema
from snapdp.data.model.workload import (
    DEFAULT_CONFIDENCE,
    Declaration,
    PlannedQuery,
    Workload,
    check_mode,
    resolved_source,
)
from snapdp.data.planner.epsilons import _QueryError, plan_epsilons, statement_accuracy
from snapdp.data.planner.preview import AccuracyAt, PlanPreview
from snapdp.errors import ParameterError

__all__ = ["Plan"]

#: The reference group size a planned query takes when none is declared (the planner's).
_PLANNER_GROUP_SIZE = next(f.default for f in fields(PlannedQuery) if f.name == "group_size")

_PlanT = TypeVar("_PlanT", bound="Plan")


# -- plans ------------------------------------------------------------------------------------
@dataclass
class Plan:
    """A release plan: the declaration, the source, the queries and the budget.

    Build it in code (``Plan(schema, queries, source="data.csv", total_epsilon=2)``) or load it
    from a TOML file with :meth:`snapdp.data.Plan.load` (the same class, one layer up, where the
    TOML front end is in reach; docs/plans.md). ``source``: a path (relative paths resolve
    against ``base``, the plan file's folder) or any data :class:`PrivateTable` accepts.
    """

    schema: Schema
    queries: Sequence[PlannedQuery]
    source: object = None
    total_epsilon: Fraction | None = None
    base: Path | None = None
    path: Path | None = None
    consistent: bool | str = False
    _locator: Locator | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.queries = tuple(self.queries)
        check_mode(self.consistent)  # docs/data.md, "Tables that add up"
        if not self.queries:
            raise ParameterError("a plan needs at least one query", parameter="query")
        if self.total_epsilon is not None:
            self.total_epsilon = check_epsilon("total_epsilon", self.total_epsilon)
        for i, pq in enumerate(self.queries):
            if not isinstance(pq, PlannedQuery):
                raise ParameterError(
                    f"a plan's queries must be PlannedQuery objects, not {pq!r}",
                    parameter="query",
                )
            self._check_query(i, pq)
        confidences = {pq.confidence for pq in self.queries}
        if len(confidences) > 1:
            raise self._error(
                ("query", 1, "confidence"),
                "every query of a plan states its ± at one confidence (one release); declare "
                f"`confidence` once in [data], not {sorted(confidences)}",
                "confidence",
            )

    # -- the workload (the one IR: docs/sql.md, "One workload") -------------------------------
    @classmethod
    def from_workload(cls: type[_PlanT], workload: Workload) -> _PlanT:
        """The planner's view of ``workload``, as ``cls`` (``snapdp.data.Plan``: one that runs)."""
        d = workload.declaration
        return cls(d.schema, workload.queries, source=d.source, total_epsilon=d.total_epsilon,
                   base=d.base, consistent=d.consistent)  # fmt: skip

    def to_workload(self, dataset: str | None = None) -> Workload:
        """The workload this plan holds, its budget kept under ``dataset``."""
        confidence = self.queries[0].confidence if self.queries else DEFAULT_CONFIDENCE
        sizes = {pq.group_size for pq in self.queries}
        size = next(iter(sizes)) if len(sizes) == 1 else None
        declaration = Declaration(
            self.schema,
            self.source,
            self.total_epsilon,
            confidence,
            None if size == _PLANNER_GROUP_SIZE else size,
            dataset,
            self.base,
            self.consistent,
        )
        return Workload(declaration, tuple(self.queries))

    # -- planning (the release: snapdp.data.release.run) ---------------------------------------
    def preview(
        self, accuracy_at: AccuracyAt | None = None, *, presume_certified: bool = False
    ) -> PlanPreview:
        """Every query's ε and ± before anything is spent (never reads the data).

        ``presume_certified``: take every L1 certificate's success for granted (a draft for an
        interactive page: fast, and equal to the certified plan whenever the certificates hold,
        as they usually do); a run always plans with real certificates."""
        search = None
        if accuracy_at is None:
            search = statement_accuracy(self.schema, presume_certified=True)
        acc = accuracy_at
        if acc is None:
            acc = statement_accuracy(self.schema, presume_certified=presume_certified)
        try:
            preview = plan_epsilons(
                self.queries,
                acc,
                self.total_epsilon,
                search,
                self.schema,
                cached=accuracy_at is None,
                presume_certified=presume_certified,
            )
            self._refuse(preview)
            delta = data_delta(self.schema, self.queries)
            if delta is not None:  # groups from the data
                self._refuse_with_data_keys(preview)
            return replace(self._consistent(preview, presume_certified), delta=delta)
        except KeyedError:
            raise
        except _QueryError as exc:
            key = self._query_key(exc.index, exc.parameter)
            message = str(exc).replace("`epsilon`", f"`{describe_key(key)}`")
            raise self._error(key, message, exc.parameter) from None
        except ParameterError as exc:
            key = ("data", "total_epsilon")
            if exc.parameter in ("accuracy", "weight", "group_size"):
                key = ("query",)
            raise self._error(key, str(exc), exc.parameter) from None

    def _query_key(self, index: int, parameter: str | None) -> Path_:
        """The key an error about query ``index`` and ``parameter`` names: the query's own key
        when it wrote one (``query[2].bins``), a bound of its column (``columns.age.lower``),
        else the key of its ε (or target)."""
        pq = self.queries[index]
        q = pq.query
        written = {"bins": bool(q.bins), "by": bool(q.by), "column": q.column is not None,
                   "quantiles": bool(q.quantiles), "resolution": q.resolution is not None,
                   "where": q.where is not None, "accuracy": True, "group_size": True}  # fmt: skip
        if parameter is not None and written.get(parameter):
            return ("query", index, parameter)
        if parameter in ("lower", "upper", "quantile_bounds") and q.column is not None:
            return ("columns", q.column, "lower" if parameter == "quantile_bounds" else parameter)
        return ("query", index, pq.how)

    def _consistent(self, preview: PlanPreview, presume_certified: bool) -> PlanPreview:
        """With ``consistent``, the ± a consistent release states for its fitted counts
        (:mod:`snapdp.data.planner.consistent_accuracy`), its assumption said once: the planner
        states it, so every caller (``snapdp plan``, the page, the API) shows the same numbers."""
        if not self.consistent:
            return preview
        from snapdp.data.planner.consistent_accuracy import NOTE, consistent_statements

        statements = consistent_statements(
            self.schema,
            [a.planned.query for a in preview.allocations],
            preview.epsilons,
            self.queries[0].confidence,
            self.consistent,
            presume_certified=presume_certified,
        )
        allocations = tuple(
            replace(a, accuracy=s.accuracy) if NOTE in s.notes else a
            for a, s in zip(preview.allocations, statements, strict=True)
        )
        if allocations == preview.allocations:
            return preview
        return replace(preview, allocations=allocations, assumptions=(*preview.assumptions, NOTE))

    def _refuse(self, preview: PlanPreview) -> None:
        """The parameter-only refusals of a release (docs/plans.md, "Refused before the data is
        read") for every query at its planned ε (a two-phase query's at its cap), naming the
        query's key."""
        from snapdp.data import statistics
        from snapdp.data.statistics.refusals import check_release

        for i, a in enumerate(preview.allocations):
            compiled = statistics.compile_query(a.planned.query, self.schema, a.epsilon)
            noises = _calibrated(compiled)  # presumed certificates: their ε is the largest
            key: Path_ = ("query", i, a.planned.how)
            try:
                check_release(compiled, noises, describe_key(key))
            except ParameterError as exc:
                if exc.parameter in ("upper", "lower"):
                    key = ("columns", compiled.query.column or "", exc.parameter)
                raise self._error(key, str(exc), exc.parameter) from None

    def _refuse_with_data_keys(self, preview: PlanPreview) -> None:
        """A plan with groups from the data refuses a two-phase target ± and ``consistent``
        here, as its release would (docs/sql.md, "Groups from the data"): a draft and
        ``snapdp plan`` say so before a run is tried."""
        targeted = [i for i, a in enumerate(preview.allocations) if a.two_phase is not None]
        try:
            refuse_with_data_keys([self.queries[i].query.label for i in targeted],
                                  self.consistent)  # fmt: skip
        except ParameterError as exc:
            key: Path_ = ("data", "consistent")
            if targeted:
                key = ("query", targeted[0], self.queries[targeted[0]].how)
            raise self._error(key, str(exc), exc.parameter) from None

    def source_path(self) -> object:
        """The source, with a relative path resolved against the plan file's folder."""
        return resolved_source(self.source, self.base)

    # -- checks ------------------------------------------------------------------------------
    def _check_query(self, i: int, pq: PlannedQuery) -> None:
        q = pq.query
        overrides = {c for c, _ in q.bins}
        for j, name in enumerate(q.by):
            col = self._column(name, ("query", i, "by"))
            from_data = pq.delta is not None and col.type in DATA_KEY_TYPES  # docs/sql.md
            if name not in overrides and not col.is_grouping and not from_data:
                raise self._error(
                    ("query", i, "by"),
                    f"column {name!r} has no declared `keys` or `bins`: it cannot group a "
                    f"release (by[{j}]) unless the query has a `delta`",
                    "by",
                )
        if q.column is not None:
            col = self._column(q.column, ("query", i, "column"))
            if col.lower is None:
                raise self._error(
                    ("columns", q.column),
                    f"column {q.column!r} needs `lower` and `upper` bounds for a "
                    f"{q.statistic} (a missing bound)",
                    "lower",
                )

    def _column(self, name: str, key: Path_) -> Column:
        try:
            return self.schema.column(name)
        except ParameterError as exc:
            raise self._error(key, str(exc), "columns") from None

    def _error(self, key: Path_, message: str, parameter: str | None) -> ParameterError:
        if self.path is None:  # no file: the key alone (a front end's origin map places it)
            return KeyedError(message, parameter=parameter, key=key)
        return _located(self.path, self._locator, key, message, parameter)


@functools.lru_cache(maxsize=1024)
def _calibrated(compiled: Any) -> Any:
    from snapdp.data import statistics

    return statistics.calibrate(compiled, presume_certified=True)
