"""Release plans: one file for a whole workload, and the accuracy-first planner (DESIGN §8.6;
docs/plans.md).

A plan holds the declaration (a :class:`~snapdp.data.model.schema.Schema`), the source, an optional
``total_epsilon`` and a list of :class:`PlannedQuery`. Each query takes either a fixed
``epsilon``, or a target ``accuracy`` (± at ``confidence``: it gets the smallest ε that meets
it), or a ``weight`` (the weighted queries share what is left of ``total_epsilon`` in
proportion). :meth:`Plan.preview` runs the planner and spends nothing; :meth:`Plan.run` releases
every query as one ledger entry (all or nothing) and can write the results as files.

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
two phases under a cap (:mod:`snapdp.data.two_phase`): its counts first, then the rest with an ε
chosen from the released counts. A two-phase query's cap is its share of what ``total_epsilon``
leaves after the fixed and one-phase target queries, shared with the weighted queries as if it
had weight 1; the plan's total is then "at most".

**Speed.** Every accuracy the planner computes is a pure function of hashable public parameters
(schema, query, ε, confidence, group size) and cached across plans (:func:`_statement`,
:func:`_target_epsilon`), so re-planning after one query's change re-plans only that query.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from snapdp._validation import check_epsilon
from snapdp.data.engines.base import Engine
from snapdp.data.model.names import Locator, Path_, PlanFileError, describe_key
from snapdp.data.model.names import located as _located
from snapdp.data.model.query import Query
from snapdp.data.model.schema import Column, Schema
from snapdp.data.model.workload import (
    DEFAULT_CONFIDENCE,
    Declaration,
    PlannedQuery,
    Workload,
    check_mode,
    resolved_source,
)
from snapdp.data.output.results import QueryResult
from snapdp.data.search import TOLERANCE, smallest_epsilon  # noqa: F401 (public here too)
from snapdp.data.search import eps_text as _eps_text
from snapdp.data.search import fraction_text as _text
from snapdp.data.search import num as _num
from snapdp.data.two_phase import TwoPhase
from snapdp.errors import ParameterError

__all__ = [
    "AccuracyAt",
    "Allocation",
    "Plan",
    "PlanPreview",
    "PlanRun",
    "plan_epsilons",
    "smallest_epsilon",
    "statement_accuracy",
    "usefulness_flags",
]

#: The reference group size a planned query takes when none is declared (the planner's).
_PLANNER_GROUP_SIZE = next(f.default for f in fields(PlannedQuery) if f.name == "group_size")

#: The accuracy a planned query would have at an exact ε, at its confidence (and, for ratio
#: statistics, its reference group size); must be non-increasing in ε. Never reads data.
AccuracyAt = Callable[[PlannedQuery, Fraction], float]


def statement_accuracy(schema: Schema, *, presume_certified: bool = False) -> AccuracyAt:
    """The planner's accuracy from the statistics module: what a release over ``schema`` states
    before spending (``AccuracyStatement.at(group_size)``); reads no data.

    ``presume_certified``: take each L1 certificate's success for granted (fast: no exact
    verifier run per ε tried) — for the search only; :func:`plan_epsilons` re-checks its choices
    with the certified accuracy."""

    def accuracy_at(pq: PlannedQuery, epsilon: Fraction) -> float:
        statement = _statement(schema, pq.query, epsilon, pq.confidence, presume_certified)
        if statement.accuracy is None and pq.group_size is None:
            return math.inf  # it depends on a private size (docs/plans.md)
        return float(statement.at(pq.group_size or 1))

    return accuracy_at


@functools.lru_cache(maxsize=8192)
def _statement(
    schema: Schema, query: Query, epsilon: Fraction, confidence: float, presume: bool
) -> Any:
    """The release's :class:`~snapdp.data.statistics.AccuracyStatement` for these public
    parameters (a pure function: cached across plans, so one query's change re-plans only it),
    without a quantile's per-probability targets, which no planning figure reads."""
    from snapdp.data import statistics

    compiled = statistics.compile_query(query, schema, epsilon)
    noises = statistics.calibrate(compiled, presume_certified=presume)
    alpha = float(1 - Fraction(repr(confidence)))
    return statistics.accuracy_of(compiled, noises, confidence, alpha, targets=False)


def usefulness_flags(schema: Schema, allocation: Allocation) -> list[str]:
    """Warnings about a planned query's usefulness (``snapdp.usefulness.flags`` of each of its
    mechanisms at its planned ε), from public parameters only; one plain sentence each."""
    from snapdp import usefulness
    from snapdp.data import statistics
    from snapdp.mechanism import SnappingMechanism

    pq = allocation.planned
    compiled = statistics.compile_query(pq.query, schema, allocation.epsilon)
    alpha = float(1 - Fraction(repr(pq.confidence)))
    out: list[str] = []
    for noise in statistics.calibrate(compiled):
        if noise.part.source == "exponential":  # no snapping: its flags do not apply
            continue
        mech = SnappingMechanism(
            noise.epsilon, noise.sensitivity, noise.part.lower, noise.part.upper
        )
        for flag in usefulness.flags(mech, alpha):
            text = f"{noise.part.name}: {flag.message}"
            if text not in out:
                out.append(text)
    return out


# -- the planner ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Allocation:
    """One query's planned ε and the ± it will have (at its confidence; for ratio statistics,
    for its declared ``group_size``). ``accuracy`` is None when the ± depends on a private size
    and no ``group_size`` is declared (``text`` then says how). A two-phase query
    (``two_phase``) may spend less than ``epsilon``, its cap."""

    planned: PlannedQuery
    epsilon: Fraction
    accuracy: float | None
    text: str = ""
    two_phase: TwoPhase | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        pq = self.planned
        out: dict[str, Any] = {
            "query": pq.query.label,
            "statistic": pq.query.statistic,
            "how": pq.how,
            "epsilon": _text(self.epsilon),
            "accuracy": self.accuracy,
            "confidence": pq.confidence,
        }
        if self.accuracy is None:
            out["accuracy_text"] = self.text
        if pq.accuracy is not None:
            out["target"] = float(pq.accuracy)
        if pq.weight is not None:
            out["weight"] = _text(pq.weight)
        if pq.group_size is not None:
            out["group_size"] = pq.group_size
        tp = self.two_phase
        if tp is not None:
            out["two_phase"] = {
                "cap": _text(tp.cap),
                "phase1_epsilon": _text(tp.phase1),
                "target_met_from_rows": tp.floor,
                "example_rows": tp.rows,
                "example_epsilon": None if tp.example is None else _text(tp.example),
            }
        return out

    def epsilon_text(self) -> str:
        """The ε column: exact, or for a two-phase query "≤ X (cap); ε for groups of ≥ N rows:
        Y"."""
        tp = self.two_phase
        if tp is None:
            return _eps_text(self.epsilon)
        text = f"≤ {_eps_text(tp.cap)} (cap)"
        if tp.rows is not None and tp.example is not None:
            text += f"; ε for groups of ≥ {tp.rows:,} rows: {_eps_text(tp.example)}"
        return text

    def accuracy_text(self) -> str:
        """The ± column."""
        pq = self.planned
        if self.two_phase is not None:
            floor = self.two_phase.floor
            where = "never" if floor is None else f"for groups of ≥ {floor:,} rows"
            return f"±{_num(float(pq.accuracy or 0))} {where} ({pq.confidence:g})"
        if self.accuracy is None:
            return f"{self.text} ({pq.confidence:g})"
        return f"±{_num(self.accuracy)} ({pq.confidence:g})"


@dataclass(frozen=True)
class PlanPreview:
    """The planner's answer, before anything is spent: per query its ε and ±, the total (at
    most, with two-phase queries), and the assumptions the ± rest on."""

    allocations: tuple[Allocation, ...]
    total: Fraction
    total_epsilon: Fraction | None
    assumptions: tuple[str, ...] = ()

    @property
    def epsilons(self) -> list[Fraction]:
        """The per-query exact ε (a two-phase query's cap), in plan order."""
        return [a.epsilon for a in self.allocations]

    @property
    def at_most(self) -> bool:
        """Whether the total is a cap (some query is two-phase)."""
        return any(a.two_phase is not None for a in self.allocations)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (ε as exact decimal or p/q strings)."""
        return {
            "queries": [a.as_dict() for a in self.allocations],
            "total_epsilon_used": _text(self.total),
            "total_is_cap": self.at_most,
            "total_epsilon": None if self.total_epsilon is None else _text(self.total_epsilon),
            "assumptions": list(self.assumptions),
        }

    def describe(self) -> str:
        """A plain-text table."""
        rows = [("query", "how", "epsilon", "± (confidence)")]
        for a in self.allocations:
            pq = a.planned
            how = {
                "epsilon": "fixed ε",
                "accuracy": f"target ±{_num(float(pq.accuracy or 0))}",
                "weight": f"weight {_text(pq.weight or Fraction(0))}",
            }[pq.how]
            if a.two_phase is not None:
                how += ", two-phase"
            rows.append((pq.query.label, how, a.epsilon_text(), a.accuracy_text()))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = [
            "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
        ]
        lines.insert(1, "  ".join("-" * w for w in widths))
        total = f"total ε: {'at most ' if self.at_most else ''}{_eps_text(self.total)}"
        if self.total_epsilon is not None:
            total += f" of {_eps_text(self.total_epsilon)}"
        lines += ["", total]
        lines += [f"assumes: {a}" for a in self.assumptions]
        return "\n".join(lines)


@functools.lru_cache(maxsize=1024)
def _target_epsilon(
    schema: Schema, pq: PlannedQuery, search: bool, presume: bool = False
) -> Fraction:
    """The smallest ε meeting ``pq``'s target at its group size (cached: a pure function of
    public parameters). ``search``: search with presumed L1 certificates first, then check
    (``presume``: do not check)."""
    acc = pq.accuracy
    assert acc is not None
    label = repr(pq.query.label)
    certified = statement_accuracy(schema, presume_certified=presume)

    def one(e: Fraction) -> float:
        return certified(pq, e)

    if search:
        fast_at = statement_accuracy(schema, presume_certified=True)
        chosen = smallest_epsilon(lambda e: fast_at(pq, e), acc, label)
        if Fraction(one(chosen)) <= acc:
            return chosen
    return smallest_epsilon(one, acc, label)


def plan_epsilons(
    queries: Sequence[PlannedQuery],
    accuracy_at: AccuracyAt,
    total_epsilon: Fraction | None = None,
    search_accuracy_at: AccuracyAt | None = None,
    schema: Schema | None = None,
    *,
    cached: bool = False,
    presume_certified: bool = False,
) -> PlanPreview:
    """Plan every query's ε (see the module docstring); spends nothing, reads no data.

    ``search_accuracy_at``: a faster accuracy for the search over ε (e.g. with presumed L1
    certificates); each target query's choice is then checked with ``accuracy_at`` and searched
    again with it when the check fails, so every stated ± is ``accuracy_at``'s. ``schema``: the
    declaration, needed for two-phase queries. ``cached``: the accuracies are
    :func:`statement_accuracy`'s over ``schema`` (then each target's search is cached).
    ``presume_certified``: a draft with every L1 certificate presumed (see :meth:`Plan.preview`).

    Fixed queries keep their ε; target queries get the smallest ε meeting their target;
    two-phase targets (docs/plans.md) and weighted queries share ``total_epsilon`` minus the
    others, in proportion to their weights (1 for a two-phase target). A clear ParameterError
    when the fixed and target ε exceed ``total_epsilon`` (or leave nothing for the others), or
    when weights or two-phase targets are given without a total.
    """
    if not queries:
        raise ParameterError("a plan needs at least one query", parameter="query")
    cached = cached and schema is not None
    eps: list[Fraction | None] = []
    for i, pq in enumerate(queries):
        try:
            eps.append(_own_epsilon(pq, accuracy_at, search_accuracy_at, schema, cached,
                                    presume_certified))  # fmt: skip
        except ParameterError as exc:
            raise _QueryError(i, exc) from None
    fixed = sum((e for e in eps if e is not None), Fraction(0))
    shared = [pq for pq in queries if pq.weight is not None or pq.two_phase]
    if total_epsilon is not None and fixed > total_epsilon:
        parts = ", ".join(
            f"{pq.query.label} ε = {_eps_text(e)}"
            for pq, e in zip(queries, eps, strict=True)
            if e is not None
        )
        raise ParameterError(
            f"the targets cannot be met within total_epsilon = {_eps_text(total_epsilon)}: the "
            f"fixed and target queries alone need ε = {_eps_text(fixed)} ({parts}); raise "
            "total_epsilon, relax the targets or declare a larger group_size",
            parameter="total_epsilon",
        )
    if shared:
        if total_epsilon is None:
            pq = shared[0]
            if pq.weight is not None:
                raise ParameterError(
                    "queries with a `weight` share what is left of `total_epsilon`, which the "
                    "plan does not declare",
                    parameter="weight",
                )
            raise ParameterError(
                f"the ± of {pq.query.label!r} depends on the rows of its groups: declare "
                "`group_size` (a public lower bound you vouch for), or `total_epsilon`, whose "
                "share caps its two-phase release (docs/plans.md, 'Two-phase targets')",
                parameter="total_epsilon",
            )
        left = total_epsilon - fixed
        if left <= 0:
            raise ParameterError(
                f"nothing is left of total_epsilon = {_eps_text(total_epsilon)} for the weighted "
                f"and two-phase queries: the fixed and target queries need ε = {_eps_text(fixed)}",
                parameter="total_epsilon",
            )
        weights = sum((pq.weight or Fraction(1) for pq in shared), Fraction(0))
        eps = [
            e if e is not None else left * (pq.weight or Fraction(1)) / weights
            for pq, e in zip(queries, eps, strict=True)
        ]
    final = [e for e in eps if e is not None]
    try:
        allocations = _allocations(queries, final, accuracy_at, schema, presume_certified)
    except _QueryError:
        raise
    sizes = sorted({pq.group_size for pq in queries if pq.group_size is not None})
    assumptions = tuple(
        f"the ± of a query declaring group_size = {n:,} holds for groups of at least {n:,} rows "
        "(a public fact you vouch for, not checked)"
        for n in sizes
    )
    if any(pq.two_phase for pq in queries):
        assumptions += (
            "two-phase queries release their counts first and choose the rest of their ε from "
            "them, within their cap; the run says whether each target was met "
            "(docs/plans.md, 'Two-phase targets')",
        )
    return PlanPreview(tuple(allocations), sum(final, Fraction(0)), total_epsilon, assumptions)


def _own_epsilon(
    pq: PlannedQuery,
    accuracy_at: AccuracyAt,
    search_accuracy_at: AccuracyAt | None,
    schema: Schema | None,
    cached: bool,
    presume_certified: bool,
) -> Fraction | None:
    """A query's ε when it does not share the leftover: fixed, or the smallest meeting its
    target; None for weighted and two-phase queries."""
    if pq.epsilon is not None:
        return pq.epsilon
    if pq.two_phase:
        return None
    acc = pq.accuracy
    if acc is None:
        return None
    if cached and schema is not None:
        return _target_epsilon(schema, pq, search_accuracy_at is not None, presume_certified)

    def one(e: Fraction) -> float:
        return accuracy_at(pq, e)

    if search_accuracy_at is not None:
        fast = search_accuracy_at
        chosen = smallest_epsilon(lambda e: fast(pq, e), acc, repr(pq.query.label))
        if Fraction(one(chosen)) <= acc:
            return chosen
    return smallest_epsilon(one, acc, repr(pq.query.label))


class _QueryError(ParameterError):
    """A ParameterError about the ``index``-th query of a plan (its key names it)."""

    def __init__(self, index: int, error: ParameterError) -> None:
        super().__init__(str(error), parameter=error.parameter)
        self.index = index


def _allocations(
    queries: Sequence[PlannedQuery],
    final: Sequence[Fraction],
    accuracy_at: AccuracyAt,
    schema: Schema | None,
    presume_certified: bool,
) -> list[Allocation]:
    """Each query's allocation at its planned ε (a two-phase query's at its cap)."""
    allocations = []
    for i, (pq, e) in enumerate(zip(queries, final, strict=True)):
        try:
            allocations.append(_allocation(pq, e, accuracy_at, schema, presume_certified))
        except ParameterError as exc:
            raise _QueryError(i, exc) from None
    return allocations


def _allocation(
    pq: PlannedQuery,
    e: Fraction,
    accuracy_at: AccuracyAt,
    schema: Schema | None,
    presume_certified: bool,
) -> Allocation:
    from snapdp.data.two_phase import plan_two_phase

    if pq.two_phase:
        if schema is None:
            raise ParameterError(
                "a plan with two-phase targets needs its schema", parameter="schema"
            )
        return Allocation(pq, e, None, "", plan_two_phase(schema, pq, e, presume_certified))
    value = accuracy_at(pq, e)
    if math.isinf(value) and schema is not None:
        text = _statement(schema, pq.query, e, pq.confidence, presume_certified).describe()
        return Allocation(pq, e, None, text)
    return Allocation(pq, e, value)


# -- plans ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PlanRun:
    """What :meth:`Plan.run` released: the results (one per query, plan order), the preview it
    followed, the files written (if any), the ledger it spent on and the ε it spent (at most the
    preview's total: two-phase queries may spend less than their caps)."""

    results: tuple[QueryResult, ...]
    preview: PlanPreview
    files: tuple[Path, ...] = ()
    ledger: Any = None
    spent: Fraction = Fraction(0)


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
    def from_workload(cls, workload: Workload) -> Plan:
        """The planner's view of ``workload``."""
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

    # -- planning and running ----------------------------------------------------------------
    def preview(
        self, accuracy_at: AccuracyAt | None = None, *, presume_certified: bool = False
    ) -> PlanPreview:
        """Every query's ε and ± before anything is spent (never reads the data).

        ``presume_certified``: take every L1 certificate's success for granted (a draft for an
        interactive page: fast, and equal to the certified plan whenever the certificates hold,
        as they usually do); :meth:`run` always plans with real certificates."""
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
            return self._consistent(preview, presume_certified)
        except PlanFileError:
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
        (:mod:`snapdp.data.consistent_accuracy`), its assumption said once: the planner states
        it, so every caller (``snapdp plan``, the page, the API) shows the same numbers."""
        if not self.consistent:
            return preview
        from snapdp.data.consistent_accuracy import NOTE, consistent_statements

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
        from snapdp.data.refusals import check_release

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

    def source_path(self) -> object:
        """The source, with a relative path resolved against the plan file's folder."""
        return resolved_source(self.source, self.base)

    def run(
        self,
        *,
        ledger: object = None,
        total_epsilon: object = None,
        output: str | Path | None = None,
        engine: Engine | None = None,
        rng: np.random.Generator | None = None,
        dataset: str | None = None,
        preview: PlanPreview | None = None,
    ) -> PlanRun:
        """Release every query as ONE ledger entry and, with ``output``, write
        ``results.csv``, ``results.parquet``, ``results.json`` and ``report.html`` there.

        ``ledger``: a path or :class:`~snapdp.data.budget.ledger.Ledger` (None: in memory);
        ``total_epsilon``: the ledger's total when it is created (default: the plan's
        ``total_epsilon``, else the plan's total). The output folder is created and checked
        writable before anything is spent. ``rng``: seeded noise, NOT private (tests only).
        ``preview``: this plan's :meth:`preview`, to skip planning again.
        """
        from snapdp.data import session
        from snapdp.data.budget.ledger import Ledger, resolve_dataset
        from snapdp.data.model.workload import check_unit
        from snapdp.data.output.report import write_report
        from snapdp.data.output.writers import write_results

        if preview is None:
            preview = self.preview()
        elif tuple(a.planned for a in preview.allocations) != tuple(self.queries):
            raise ParameterError("`preview` is not this plan's preview", parameter="preview")
        out_dir = None if output is None else _prepare_output(Path(output))
        if engine is None:
            engine = _default_engine(self.source_path(), self.schema)
        given = None if total_epsilon is None else check_epsilon("total_epsilon", total_epsilon)
        default_total = self.total_epsilon if self.total_epsilon is not None else preview.total
        if self.schema.privacy_unit is not None:
            check_unit(self.schema)
        steps = [
            session.Step(a.planned.query, a.epsilon, a.two_phase, a.planned)
            for a in preview.allocations
        ]
        prepared = session.prepare(  # before any ledger file
            self.schema,
            steps,
            engine,
            confidence=self.queries[0].confidence,
            consistent=self.consistent,
        )
        name = resolve_dataset(dataset, None, engine.describe(), ledger_file=False)
        if isinstance(ledger, Ledger):
            book = ledger
        elif ledger is None:
            book = Ledger(None, given or default_total, dataset=name)
        else:
            name = resolve_dataset(dataset, None, engine.describe(), ledger_file=True)
            book = _open_ledger(Path(str(ledger)), given, default_total, name)
        results, spent = session.run(prepared, engine, book, name, rng=rng)
        files: tuple[Path, ...] = ()
        if out_dir is not None:
            files = (
                *write_results(results, out_dir),
                write_report(results, out_dir, preview, self.schema),
            )
        return PlanRun(tuple(results), preview, files, book, spent)

    # -- checks ------------------------------------------------------------------------------
    def _check_query(self, i: int, pq: PlannedQuery) -> None:
        q = pq.query
        overrides = {c for c, _ in q.bins}
        for j, name in enumerate(q.by):
            col = self._column(name, ("query", i, "by"))
            if name not in overrides and not col.is_grouping:
                raise self._error(
                    ("query", i, "by"),
                    f"column {name!r} has no declared `keys` or `bins`: it cannot group a "
                    f"release (by[{j}])",
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
        if self.path is None:
            return ParameterError(message, parameter=parameter)
        return _located(self.path, self._locator, key, message, parameter)


@functools.lru_cache(maxsize=1024)
def _calibrated(compiled: Any) -> Any:
    from snapdp.data import statistics

    return statistics.calibrate(compiled, presume_certified=True)


def _open_ledger(path: Path, given: Fraction | None, default: Fraction, dataset: str) -> Any:
    """The ledger at ``path`` for ``dataset``: with the total given, or the one it already keeps
    for the dataset, or else (a new budget) the plan's total."""
    from snapdp.data.budget.ledger import Ledger

    if given is not None:
        return Ledger(path, given, dataset=dataset)
    try:
        return Ledger(path, None, dataset=dataset)
    except ParameterError as exc:
        if exc.parameter != "total_epsilon":
            raise
    return Ledger(path, default, dataset=dataset)


def _prepare_output(out: Path) -> Path:
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".snapdp-write-check"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ParameterError(
            f"`output` folder {str(out)!r} cannot be written ({exc.strerror or 'error'}); "
            "nothing was spent",
            parameter="output",
        ) from None
    return out


def _default_engine(source: object, schema: Schema) -> Engine:
    """The release's default engine for ``source`` (DuckDB; Spark for a Spark DataFrame)."""
    from snapdp.data.release import default_engine

    if source is None:
        raise ParameterError("the plan declares no `source`", parameter="source")
    return default_engine(source, schema)
