"""Planner speed (docs/performance.md, "Planning"): plan docs/examples/plan.toml cold, again
unchanged (warm caches), and after changing one query's target (only that query re-planned);
first as a draft (L1 certificates presumed, as an interactive page would), then certified. Then
the same for a plan with a target of every kind (count, sum, mean, variance, std, quantiles,
a two-phase quantile).

Run: ``PYTHONPATH=src python3 benchmarks/bench_plan.py``. Prints seconds per step and the
accuracy statements computed (a count of the planner's costly step, independent of the
machine's load).
"""

from __future__ import annotations

import dataclasses
import time
from fractions import Fraction
from pathlib import Path

import msgspec.structs

from snapdp.data import Plan, statistics
from snapdp.data.model.query import Query
from snapdp.data.model.schema import Column, ContributionBounds, Schema
from snapdp.data.model.workload import PlannedQuery

_CALLS = [0]
_REAL = statistics.accuracy_of


def _counting(*args: object, **kw: object) -> object:
    _CALLS[0] += 1
    return _REAL(*args, **kw)  # type: ignore[arg-type]


def _timed(label: str, plan: Plan, draft: bool = False) -> None:
    _CALLS[0] = 0
    start = time.perf_counter()
    plan.preview(presume_certified=draft)
    took = time.perf_counter() - start
    print(f"{label:<64} {took:8.3f} s {_CALLS[0]:5d} statements", flush=True)


def _every_kind() -> Plan:
    schema = Schema(
        (
            Column("age", "integer", lower=Fraction(0), upper=Fraction(100)),
            Column("income", "decimal", lower=Fraction(0), upper=Fraction(500_000)),
            Column("sex", "integer", keys=(0, 1)),
            Column("educ", "integer", keys=tuple(range(1, 17))),
        ),
        privacy_unit="pid",
        bounds=ContributionBounds(max_rows_per_unit=2),
    )
    half = (Fraction(1, 2),)
    queries = [
        PlannedQuery(Query("count", by=("sex", "educ")), accuracy=Fraction(20)),
        PlannedQuery(Query("sum", "income", ("sex",)), accuracy=Fraction(2_000_000)),
        PlannedQuery(Query("mean", "age", ("sex",)), accuracy=Fraction(1), group_size=800),
        PlannedQuery(Query("variance", "age"), accuracy=Fraction(30), group_size=1500),
        PlannedQuery(Query("std", "income"), accuracy=Fraction(20_000), group_size=1500),
        PlannedQuery(Query("quantiles", "age", quantiles=half), accuracy=Fraction(5),
                     group_size=1500),
        PlannedQuery(Query("quantiles", "income", quantiles=half), accuracy=Fraction(40_000)),
    ]  # fmt: skip
    return Plan(schema, queries, total_epsilon=Fraction(100))


def _changes(name: str, plan: Plan, draft: bool) -> None:
    kind = "draft" if draft else "certified"
    _timed(f"{kind}, cold: {name}", plan, draft)
    _timed(f"{kind}, warm: the same plan again", plan, draft)
    for i, pq in enumerate(plan.queries):
        if pq.accuracy is None:
            continue
        for factor in (Fraction(11, 10), Fraction(12, 10)):
            changed = list(plan.queries)
            changed[i] = msgspec.structs.replace(pq, accuracy=pq.accuracy * factor)
            two = ", two-phase" if pq.two_phase else ""
            _timed(
                f"{kind}, one change: {pq.query.label}{two} target ×{float(factor):g}",
                dataclasses.replace(plan, queries=tuple(changed)),
                draft,
            )


def main() -> None:
    statistics.accuracy_of = _counting  # type: ignore[assignment]
    path = Path(__file__).resolve().parents[1] / "docs" / "examples" / "plan.toml"
    example = Plan.load(path)
    for draft in (True, False):
        _changes("the example plan", example, draft)
    _changes("a target of every kind", _every_kind(), True)


if __name__ == "__main__":
    main()
