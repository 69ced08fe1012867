"""Running a release plan (docs/plans.md): :func:`run_plan` takes the planner's
:class:`~snapdp.data.planner.plan.Plan` and its preview, prepares the one release session
(:mod:`snapdp.data.release.session`), opens the ledger once, spends once and writes the output.
``snapdp.data.Plan.run`` calls it."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from snapdp._validation import check_epsilon
from snapdp.data.budget.ledger import Ledger, resolve_dataset
from snapdp.data.engines import factory
from snapdp.data.engines.base import Engine
from snapdp.data.model.schema import Schema
from snapdp.data.model.workload import check_unit
from snapdp.data.output.report import write_report
from snapdp.data.output.results import QueryResult
from snapdp.data.output.writers import write_results
from snapdp.data.planner.plan import Plan
from snapdp.data.planner.preview import PlanPreview
from snapdp.data.release import session
from snapdp.errors import ParameterError

__all__ = ["PlanRun", "run_plan"]


@dataclass(frozen=True)
class PlanRun:
    """What :func:`run_plan` released: the results (one per query, plan order), the preview it
    followed, the files written (if any), the ledger it spent on and the ε it spent (at most the
    preview's total: two-phase queries may spend less than their caps)."""

    results: tuple[QueryResult, ...]
    preview: PlanPreview
    files: tuple[Path, ...] = ()
    ledger: Any = None
    spent: Fraction = Fraction(0)


def run_plan(
    plan: Plan,
    *,
    ledger: object = None,
    total_epsilon: object = None,
    output: str | Path | None = None,
    engine: Engine | None = None,
    rng: np.random.Generator | None = None,
    dataset: str | None = None,
    preview: PlanPreview | None = None,
) -> PlanRun:
    """Release every query of ``plan`` as ONE ledger entry and, with ``output``, write
    ``results.csv``, ``results.parquet``, ``results.json`` and ``report.html`` there.

    ``ledger``: a path or :class:`~snapdp.data.budget.ledger.Ledger` (None: in memory);
    ``total_epsilon``: the ledger's total when it is created (default: the plan's
    ``total_epsilon``, else the plan's total). The output folder is created and checked
    writable before anything is spent. ``rng``: seeded noise, NOT private (tests only).
    ``preview``: the plan's :meth:`~snapdp.data.planner.plan.Plan.preview`, to skip planning
    again.
    """
    if preview is None:
        preview = plan.preview()
    elif tuple(a.planned for a in preview.allocations) != tuple(plan.queries):
        raise ParameterError("`preview` is not this plan's preview", parameter="preview")
    out_dir = None if output is None else _prepare_output(Path(output))
    if engine is None:
        engine = _default_engine(plan.source_path(), plan.schema)
    given = None if total_epsilon is None else check_epsilon("total_epsilon", total_epsilon)
    default_total = plan.total_epsilon if plan.total_epsilon is not None else preview.total
    if plan.schema.privacy_unit is not None:
        check_unit(plan.schema)
    steps = [
        session.Step(a.planned.query, a.epsilon, a.two_phase, a.planned)
        for a in preview.allocations
    ]
    prepared = session.prepare(  # before any ledger file
        plan.schema,
        steps,
        engine,
        confidence=plan.queries[0].confidence,
        consistent=plan.consistent,
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
            write_report(results, out_dir, preview, plan.schema),
        )
    return PlanRun(tuple(results), preview, files, book, spent)


def _open_ledger(path: Path, given: Fraction | None, default: Fraction, dataset: str) -> Any:
    """The ledger at ``path`` for ``dataset``: with the total given, or the one it already keeps
    for the dataset, or else (a new budget) the plan's total."""
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
    if source is None:
        raise ParameterError("the plan declares no `source`", parameter="source")
    return factory.default_engine(source, schema)
