"""The entry points that read a plan file or a SQL query (docs/architecture.md, "Layers";
docs/plans.md; docs/sql.md).

They sit above the front ends, so that the planner and the release take only what a front end
produced and never reach back up for a parser. :class:`Plan` and :class:`PrivateTable` are the
planner's :class:`~snapdp.data.planner.plan.Plan` and the release's
:class:`~snapdp.data.release.table.PrivateTable` with the methods that need a front end or the
release: :meth:`Plan.load` (the TOML front end), :meth:`Plan.run` (the release,
:func:`snapdp.data.release.run.run_plan`) and :meth:`PrivateTable.sql` (the SQL front end). Both
are exported as ``snapdp.data.Plan`` and ``snapdp.data.PrivateTable``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from snapdp.data.engines.base import Engine
from snapdp.data.frontends.toml import load_plan as _load_plan
from snapdp.data.model.workload import Declaration, check_unit
from snapdp.data.output.results import Results
from snapdp.data.planner import plan as _plan
from snapdp.data.planner.preview import PlanPreview
from snapdp.data.release import session
from snapdp.data.release import table as _release
from snapdp.data.release.run import PlanRun, ProgressCallback, run_plan

__all__ = ["Plan", "PrivateTable", "load_plan"]


class Plan(_plan.Plan):
    """A release plan (:class:`snapdp.data.planner.plan.Plan`) that can also be read from a plan
    file and run."""

    @classmethod
    def load(cls, path: str | Path) -> Plan:
        """A plan from a TOML file (docs/plans.md); errors name the file, the line and the key.
        Read by the TOML front end (:func:`snapdp.data.frontends.toml.load_plan`)."""
        loaded = _load_plan(path, cls)
        assert isinstance(loaded, cls)
        return loaded

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
        progress: ProgressCallback | None = None,
        total_delta: object = None,
    ) -> PlanRun:
        """Release every query as ONE ledger entry and, with ``output``, write
        ``results.csv``, ``results.parquet``, ``results.json`` and ``report.html`` there
        (:func:`snapdp.data.release.run.run_plan`, which says what each argument does)."""
        return run_plan(self, ledger=ledger, total_epsilon=total_epsilon, output=output,
                        engine=engine, rng=rng, dataset=dataset, preview=preview,
                        progress=progress, total_delta=total_delta)  # fmt: skip

    def __eq__(self, other: object) -> bool:
        """Equal to any plan (this class or the planner's) with equal fields."""
        if not isinstance(other, _plan.Plan):
            return NotImplemented
        return _fields(self) == _fields(other)

    __hash__ = None  # type: ignore[assignment]  # mutable, as the planner's Plan


def load_plan(path: str | Path, plan_class: type[_plan.Plan] | None = None) -> _plan.Plan:
    """A plan file as a :class:`Plan` (one that can run; ``plan_class``: a subclass to build
    instead), read by the TOML front end (:func:`snapdp.data.frontends.toml.load_plan`)."""
    return _load_plan(path, plan_class or Plan)


def _fields(plan: _plan.Plan) -> tuple[object, ...]:
    return tuple(getattr(plan, f.name) for f in dataclasses.fields(plan) if f.compare)


class PrivateTable(_release.PrivateTable):
    """A table behind a privacy budget (:class:`snapdp.data.release.table.PrivateTable`) that also
    answers SQL (docs/sql.md)."""

    def sql(
        self, query: str, epsilon: object = None, *, confidence: float = 0.95, delta: object = None
    ) -> Results:
        """Release the aggregates of the SELECT ``query`` (docs/sql.md): one result per aggregate,
        in SELECT order, with HAVING and ORDER BY applied to the released values. ``epsilon``:
        the query's total, split equally between its aggregates (or BigQuery's
        ``OPTIONS(epsilon = …)``). A query outside the grammar raises a
        :class:`~snapdp.data.frontends.sql.SqlError` (line, column, caret) before anything is
        read or spent. FROM may name any table (unqualified): this one is the only one.
        ``delta`` (or ``OPTIONS(delta = …)``) lets GROUP BY take a column's groups from the data
        (docs/sql.md, "Groups from the data")."""
        from snapdp.data.frontends.sql import apply_post_processing, parse_sql  # SQL only

        declaration = Declaration(self.schema, confidence=confidence)
        parsed = parse_sql(query, declaration, epsilon=epsilon, delta=delta)
        schema = parsed.workload.schema  # OPTIONS / CLAMP may refine the declaration
        if schema.privacy_unit is not None:
            check_unit(schema)
        steps = [
            session.Step(q, e, delta=pq.delta)
            for q, e, pq in zip(
                parsed.queries, parsed.epsilons, parsed.workload.queries, strict=True
            )
        ]
        prepared = session.prepare(schema, steps, self.engine, confidence=confidence)
        results = self.release(prepared)
        return Results(apply_post_processing(parsed, results))
