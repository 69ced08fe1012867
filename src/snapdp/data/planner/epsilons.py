"""The accuracy-first planner: each query's ε (docs/plans.md; the method is described in
:mod:`snapdp.data.planner.plan`). Every accuracy it computes is a pure function of hashable public
parameters and cached across plans (:func:`_statement`, :func:`_target_epsilon`)."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from snapdp.data.model.query import Query
from snapdp.data.model.schema import Schema
from snapdp.data.model.workload import PlannedQuery, alpha_of
from snapdp.data.planner.preview import AccuracyAt, Allocation, PlanPreview
from snapdp.data.planner.search import eps_text as _eps_text
from snapdp.data.planner.search import smallest_epsilon
from snapdp.data.planner.two_phase import plan_two_phase
from snapdp.errors import ParameterError

__all__ = ["plan_epsilons", "statement_accuracy"]


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
    alpha = alpha_of(confidence)
    return statistics.accuracy_of(compiled, noises, confidence, alpha, targets=False)


@functools.lru_cache(maxsize=1024)
def _target_epsilon(
    schema: Schema, pq: PlannedQuery, search: bool, presume: bool = False
) -> Fraction:
    """The smallest ε meeting ``pq``'s target at its group size (cached: a pure function of
    public parameters). ``search``: search with presumed L1 certificates first, then check
    (``presume``: do not check)."""
    certified = statement_accuracy(schema, presume_certified=presume)
    fast = statement_accuracy(schema, presume_certified=True) if search else None
    return _search(pq, certified, fast)


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
    return _search(pq, accuracy_at, search_accuracy_at)


def _search(pq: PlannedQuery, accuracy_at: AccuracyAt, fast: AccuracyAt | None) -> Fraction:
    """The smallest ε meeting ``pq``'s target under ``accuracy_at``: searched with ``fast`` first
    when given (e.g. presumed L1 certificates) and kept when ``accuracy_at`` confirms it, else
    searched again with ``accuracy_at`` itself."""
    acc = pq.accuracy
    assert acc is not None
    label = repr(pq.query.label)

    def one(e: Fraction) -> float:
        return accuracy_at(pq, e)

    if fast is not None:
        search_at = fast
        chosen = smallest_epsilon(lambda e: search_at(pq, e), acc, label)
        if Fraction(one(chosen)) <= acc:
            return chosen
    return smallest_epsilon(one, acc, label)


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
