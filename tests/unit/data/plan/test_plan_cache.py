"""The planner's speed, by counting work rather than timing it (docs/performance.md,
"Planning"; docs/plans.md, "The planner"): one query's change re-plans only that query, a draft
plan runs no certificate, the search needs few evaluations, and the shortcuts decide what the
slow paths decide."""

from __future__ import annotations

import dataclasses
from collections import Counter
from fractions import Fraction

import msgspec.structs
import pytest

from snapdp import shift
from snapdp.data import statistics
from snapdp.data.api import Plan
from snapdp.data.model.query import Query
from snapdp.data.model.schema import Column, ContributionBounds, Schema
from snapdp.data.model.workload import PlannedQuery
from snapdp.data.planner.search import TOLERANCE, smallest_epsilon
from snapdp.data.statistics import refusals
from snapdp.data.statistics.refusals import DELTA_LIMIT, check_release
from snapdp.errors import ParameterError
from snapdp.mechanism import SnappingMechanism

SCHEMA = Schema(
    (
        Column("age", "integer", lower=Fraction(0), upper=Fraction(100)),
        Column("income", "decimal", lower=Fraction(0), upper=Fraction(250_000)),
        Column("sex", "integer", keys=(0, 1)),
        Column("educ", "integer", keys=tuple(range(1, 9))),
    ),
    privacy_unit="pid",
    bounds=ContributionBounds(max_rows_per_unit=2),
)


def _queries() -> list[PlannedQuery]:
    return [
        PlannedQuery(Query("count", by=("sex", "educ")), accuracy=Fraction(40)),
        PlannedQuery(Query("sum", "age", ("sex",)), accuracy=Fraction(9000)),
        PlannedQuery(Query("mean", "income", ("sex",)), accuracy=Fraction(3000), group_size=900),
        PlannedQuery(Query("variance", "age"), accuracy=Fraction(40), group_size=2000),
        PlannedQuery(
            Query("quantiles", "age", quantiles=(Fraction(1, 2),)),
            accuracy=Fraction(7),
            group_size=1200,
        ),
    ]


def _spy(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Count the accuracy statements computed, per query label (the planner's costly step)."""
    seen: Counter[str] = Counter()
    real = statistics.accuracy_of

    def counting(compiled: statistics.Compiled, *args: object, **kw: object) -> object:
        seen[compiled.query.label] += 1
        return real(compiled, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(statistics, "accuracy_of", counting)
    return seen


@pytest.mark.parametrize("draft", [True, False])
@pytest.mark.parametrize("index", range(5))
def test_one_change_re_plans_only_that_query(
    monkeypatch: pytest.MonkeyPatch, index: int, draft: bool
) -> None:
    seen = _spy(monkeypatch)
    plan = Plan(SCHEMA, _queries())
    before = plan.preview(presume_certified=draft)
    assert plan.preview(presume_certified=draft) == before
    seen.clear()
    queries = list(plan.queries)
    pq = queries[index]
    assert pq.accuracy is not None
    queries[index] = msgspec.structs.replace(pq, accuracy=pq.accuracy * Fraction(13, 10))
    after = dataclasses.replace(plan, queries=tuple(queries)).preview(presume_certified=draft)
    assert set(seen) == {pq.query.label}, seen  # only the changed query was planned again
    assert seen[pq.query.label] >= 1
    for i, (a, b) in enumerate(zip(before.allocations, after.allocations, strict=True)):
        if i != index:
            assert (a.epsilon, a.accuracy) == (b.epsilon, b.accuracy)
    assert after.allocations[index].epsilon < before.allocations[index].epsilon


def test_a_draft_plan_runs_no_certificate(monkeypatch: pytest.MonkeyPatch) -> None:
    """A draft (the page's re-plan) presumes every certificate, in the search, in the stated ±
    and in the parameter-only refusals (which used to build certified mechanisms)."""
    calls: list[object] = []
    real = shift._shift_certificate

    def counting(*args: object, **kw: object) -> object:
        calls.append(args)
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(shift, "_shift_certificate", counting)
    import snapdp._certcache as certcache
    import snapdp.data.statistics.calibration as calibration

    monkeypatch.setattr(calibration, "_shift_certificate", counting)
    # the rescaling's certificates: not even looked up (shipped, on disk or computed)
    monkeypatch.setattr(certcache, "certificate", counting)
    queries = _queries()
    q = queries[4]
    assert q.accuracy is not None
    queries[4] = msgspec.structs.replace(q, accuracy=q.accuracy * Fraction(7, 5))  # new parameters
    Plan(SCHEMA, queries).preview(presume_certified=True)
    assert calls == []


# -- the search ---------------------------------------------------------------------------------
def _counted(f):  # type: ignore[no-untyped-def]
    calls: list[Fraction] = []

    def g(e: Fraction) -> float:
        calls.append(e)
        return float(f(e))

    return g, calls


@pytest.mark.parametrize("d", [0, 0.3, 2])
@pytest.mark.parametrize("target", [Fraction(5, 2), Fraction(7), Fraction(40)])
def test_a_smooth_accuracy_takes_four_evaluations(d: float, target: Fraction) -> None:
    """± = d + c/ε (a noise scale): two points fit it, two more bracket the threshold."""
    acc, calls = _counted(lambda e: d + 12.5 / float(e))
    eps = smallest_epsilon(acc, target)
    assert len(set(calls)) <= 4
    threshold = Fraction(12.5) / (target - Fraction(d))
    assert acc(eps) <= target
    assert threshold <= eps * (1 + Fraction(1, 10**9)) and eps <= threshold * (1 + TOLERANCE) ** 2


@pytest.mark.parametrize("step", [Fraction(1, 40), Fraction(1, 16), Fraction(1, 4)])
@pytest.mark.parametrize("target", [Fraction(3), Fraction(11, 2)])
def test_a_staircase_accuracy_still_gets_the_bound(step: Fraction, target: Fraction) -> None:
    """± that moves in steps (a mechanism's grid) defeats the model; the search falls back to
    the bracket and still returns an ε within (1 + 1/400)² of the smallest meeting the target."""

    def stairs(e: Fraction) -> float:
        raw = 10 / e
        return float((raw / step).__ceil__() * step)

    acc, calls = _counted(stairs)
    eps = smallest_epsilon(acc, target)
    assert stairs(eps) <= target
    # the smallest ε meeting it, exactly: ⌈10/(ε·step)⌉·step ≤ target ⟺ 10/ε ≤ target (target a
    # multiple of step) or the step below it
    best = 10 / ((target / step).__floor__() * step)
    assert best <= eps <= best * (1 + TOLERANCE) ** 2
    assert len(set(calls)) <= 20


# -- the refusals' shortcut -------------------------------------------------------------------
_EPSILONS = [Fraction(1, 10), Fraction(1), Fraction(50), Fraction(640), Fraction(700),
             Fraction(710), Fraction(1000)]  # fmt: skip


@pytest.mark.parametrize("epsilon", _EPSILONS)
@pytest.mark.parametrize("query", [Query("count", by=("sex",)), Query("sum", "age")])
def test_the_refusal_shortcut_decides_as_certified_mechanisms_do(
    epsilon: Fraction, query: Query
) -> None:
    """The δ check without certificates refuses exactly what the certified mechanisms' δ
    refuses (the shortcut only ever accepts when every outcome of the certificates is within the
    limit, and otherwise defers to them)."""
    compiled = statistics.compile_query(query, SCHEMA, epsilon)
    noises = statistics.calibrate(compiled)
    delta = sum(
        n.cells
        * SnappingMechanism(n.epsilon, n.sensitivity, n.part.lower, n.part.upper).privacy.delta
        for n in noises
    )
    if refusals._delta_surely_within(noises):
        assert delta <= DELTA_LIMIT
    if delta <= DELTA_LIMIT:
        check_release(compiled, noises)
    else:
        with pytest.raises(ParameterError, match="too large"):
            check_release(compiled, noises)


def test_the_refusal_shortcut_is_taken_at_ordinary_epsilon() -> None:
    compiled = statistics.compile_query(Query("count", by=("sex", "educ")), SCHEMA, Fraction(3))
    assert refusals._delta_surely_within(statistics.calibrate(compiled))
    compiled = statistics.compile_query(Query("count"), SCHEMA, Fraction(1000))
    assert not refusals._delta_surely_within(statistics.calibrate(compiled))
