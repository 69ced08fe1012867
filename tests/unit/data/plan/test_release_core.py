"""One release core for PrivateTable.release and plan runs (snapdp.data.release.core; docs/plans.md,
"Two-phase targets"): plan runs draw their noise where the aggregates live when the engine can
(Spark executors), and a plan run without two-phase queries is PrivateTable.release of the same
queries, value for value, with the same seed."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
from tests.unit.data._engines import oracle_engine

from snapdp.data import Column, ContributionBounds, PrivateTable, Query, Schema
from snapdp.data.api import Plan
from snapdp.data.engines.base import AggregatePlan, Aggregates
from snapdp.data.model.workload import PlannedQuery

SCHEMA = Schema(
    (
        Column("age", "integer", 0, 100),
        Column("sex", "integer", keys=(0, 1)),
        Column("region", "text", keys=("a", "b", "c")),
    ),
    privacy_unit="pid",
    bounds=ContributionBounds(max_rows_per_unit=1),  # no L1 certificates: quick to plan
)


def _rows(n: int = 900) -> list[dict[str, Any]]:
    return [
        {"pid": str(i // 2), "age": str(20 + i % 50), "sex": str(i % 2), "region": "abc"[i % 3]}
        for i in range(n)
    ]


class _Executors:
    """The oracle engine, and noise drawn "in the engine" when asked (as Spark executors do):
    records the exact aggregates handed out and the noise requests."""

    def __init__(self) -> None:
        self.inner = oracle_engine(_rows())
        self.plans: list[AggregatePlan] = []
        self.requests: list[list[str]] = []

    def column_names(self) -> list[str]:
        return list(self.inner.column_names())

    def describe(self) -> str:
        return "executors"

    def aggregate(self, plan: AggregatePlan) -> Aggregates:
        self.plans.append(plan)
        aggregates: Aggregates = self.inner.aggregate(plan)
        return aggregates

    def wants_executor_noise(self, n_cells: int) -> bool:
        return True

    def noisy_aggregate(self, plan: AggregatePlan, requests: Any) -> dict[str, Any]:
        self.requests.append([r.source for r in requests])
        return {r.key: np.full(plan.n_cells, 300.0) for r in requests}


def _two_phase_plan() -> Plan:
    return Plan(
        SCHEMA,
        [
            PlannedQuery(Query("count", by=("sex",)), epsilon=Fraction(1, 2)),
            PlannedQuery(Query("mean", "age", ("sex",)), accuracy=Fraction(3)),
        ],
        total_epsilon=Fraction(4),
    )


def test_plan_runs_draw_their_noise_in_the_engine() -> None:
    """Phase 1 asks the engine for the two-phase mean's counts, phase 2 for the rest; the exact
    aggregates never leave the engine. A seeded run (tests only) draws here instead."""
    plan = _two_phase_plan()
    engine = _Executors()
    done = plan.run(engine=engine)  # type: ignore[arg-type]
    # a ratio mean's centred sum (docs/utility.md, "Means") is no engine source yet: the plan
    # of its grouping reads the aggregates and draws here
    assert engine.requests == [] and len(engine.plans) == 1
    assert isinstance(done.results[0].rows[0].value, int)
    assert done.spent <= plan.preview().total
    seeded = _Executors()
    plan.run(engine=seeded, rng=np.random.default_rng(1))  # type: ignore[arg-type]
    assert seeded.requests == [] and len(seeded.plans) == 1


def test_one_phase_plan_runs_draw_in_the_engine_once_per_grouping() -> None:
    plan = Plan(
        SCHEMA,
        [
            PlannedQuery(Query("count", by=("sex",)), epsilon=Fraction(1, 2)),
            PlannedQuery(Query("sum", "age", ("region",)), epsilon=Fraction(1, 2)),
            PlannedQuery(Query("mean", "age", ("sex",)), epsilon=Fraction(1)),
        ],
    )
    engine = _Executors()
    plan.run(engine=engine)  # type: ignore[arg-type]
    assert engine.requests == [["sum0"]]  # the mean's grouping draws here (see above)
    assert len(engine.plans) == 1


def test_a_plan_run_is_the_release_of_its_queries_with_the_same_seed() -> None:
    """Without two-phase queries, a plan run and PrivateTable.release of the same queries at the
    planned ε draw the same noise in the same order: the same values, bit for bit (queries of
    different groupings interleaved, so the order is that of the release core's plans)."""
    queries = [
        PlannedQuery(Query("count", by=("sex",)), epsilon=Fraction(1, 2)),
        PlannedQuery(Query("mean", "age", ("region",)), accuracy=Fraction(4), group_size=200),
        PlannedQuery(Query("sum", "age", ("sex",)), epsilon=Fraction(3, 4)),
        PlannedQuery(Query("variance", "age", ("region",)), epsilon=Fraction(1)),
    ]
    plan = Plan(SCHEMA, queries)
    preview = plan.preview()
    run = plan.run(engine=oracle_engine(_rows()), rng=np.random.default_rng(5), preview=preview)
    table = PrivateTable(
        schema=SCHEMA,
        engine=oracle_engine(_rows()),
        total_epsilon=preview.total,
        rng=np.random.default_rng(5),
    )
    released = table.release([pq.query for pq in queries], preview.epsilons)
    for a, b in zip(run.results, released, strict=True):
        assert [(r.keys, r.value, r.accuracy) for r in a.rows] == [
            (r.keys, r.value, r.accuracy) for r in b.rows
        ]
        assert a.epsilon == b.epsilon
    assert run.spent == preview.total
