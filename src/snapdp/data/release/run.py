"""Running a release plan (docs/plans.md): :func:`run_plan` takes the planner's
:class:`~snapdp.data.planner.plan.Plan` and its preview, prepares the one release session
(:mod:`snapdp.data.release.session`), opens the ledger once, spends once and writes the output.
``snapdp.data.Plan.run`` calls it."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
from msgspec import Struct

from snapdp._validation import check_epsilon
from snapdp.data.budget.datasets import resolve_dataset
from snapdp.data.budget.ledger import Ledger
from snapdp.data.engines import factory
from snapdp.data.engines.base import Engine
from snapdp.data.model.schema import Schema
from snapdp.data.model.workload import check_delta, check_unit
from snapdp.data.output.report import write_report
from snapdp.data.output.results import QueryResult, TableMethods
from snapdp.data.output.writers import write_results
from snapdp.data.planner.plan import Plan
from snapdp.data.planner.preview import PlanPreview
from snapdp.data.release import session
from snapdp.errors import ParameterError

__all__ = ["PlanRun", "ProgressCallback", "run_plan"]

ProgressCallback = Callable[[int, int, str], None]
"""Called as ``callback(done, total, label)`` after each public step of a run (planning,
preparing the mechanisms, releasing, each two-phase query's phase two, writing): ``total`` and the
labels follow from the plan alone, never from the data (docs/plans.md, "Progress")."""


class PlanRun(TableMethods, Struct, frozen=True):
    """What :func:`run_plan` released: the results (one per query, plan order), the preview it
    followed, the files written (if any), the ledger it spent on and the ε it spent (at most the
    preview's total: two-phase queries may spend less than their caps). ``to_pandas()``,
    ``to_polars()``, ``to_arrow()``: the results as one DataFrame (docs/notebooks.md)."""

    results: tuple[QueryResult, ...]
    preview: PlanPreview
    files: tuple[Path, ...] = ()
    ledger: Any = None
    spent: Fraction = Fraction(0)

    def _table_results(self) -> tuple[QueryResult, ...]:
        return self.results


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
    progress: ProgressCallback | None = None,
    total_delta: object = None,
) -> PlanRun:
    """Release every query of ``plan`` as ONE ledger entry and, with ``output``, write
    ``results.csv``, ``results.parquet``, ``results.json`` and ``report.html`` there.

    ``ledger``: a path or :class:`~snapdp.data.budget.ledger.Ledger` (None: in memory, with the
    plan's ``total_epsilon`` or its total as budget). A ledger file spends only from a budget
    the data owner set: the dataset's entry in it, or ``total_epsilon`` given here (the owner's
    act: ``--total-epsilon`` of ``snapdp run``); a plan's ``total_epsilon`` only caps the plan
    and never creates the ledger's budget (docs/plans.md, "Who sets the budget"). Without
    either, the run is refused before the source is opened. The output folder is created and
    checked writable before anything is spent. ``rng``: seeded noise, NOT private (tests only).
    ``preview``: the plan's :meth:`~snapdp.data.planner.plan.Plan.preview`, to skip planning
    again. ``progress``: a :data:`ProgressCallback` (a bar in ``snapdp run``, a line on the page).
    ``total_delta``: the owner's δ budget for a ledger that has none yet (``--total-delta``;
    docs/plans.md, "δ").
    """
    tick = _Ticker(progress, 3 + (output is not None))
    tick("planning")
    if preview is None:
        preview = plan.preview()
    elif tuple(a.planned for a in preview.allocations) != tuple(plan.queries):
        raise ParameterError("`preview` is not this plan's preview", parameter="preview")
    given = None if total_epsilon is None else check_epsilon("total_epsilon", total_epsilon)
    owner_delta = None if total_delta is None else check_delta("total_delta", total_delta)
    book = _early_ledger(plan, ledger, given, dataset, engine)  # before the source is opened
    if book is not None:
        book.total_delta = owner_delta
    fresh = [] if output is None else _missing(Path(output))
    out_dir = None if output is None else _prepare_output(Path(output))
    try:
        return _release(
            plan, preview, out_dir, ledger, given, book, engine, rng, dataset, tick, owner_delta
        )
    except BaseException:  # a failed run leaves no output folder it created
        for folder in fresh:
            with contextlib.suppress(OSError):
                folder.rmdir()  # only when empty
        raise


def _missing(out: Path) -> list[Path]:
    """The folders of ``out`` that do not exist yet, deepest first."""
    return [p for p in (out, *out.parents) if not p.exists()]


def _release(
    plan: Plan,
    preview: PlanPreview,
    out_dir: Path | None,
    ledger: object,
    given: Fraction | None,
    book: Ledger | None,
    engine: Engine | None,
    rng: np.random.Generator | None,
    dataset: str | None,
    tick: _Ticker,
    owner_delta: Fraction | None = None,
) -> PlanRun:
    if engine is None:
        engine = _default_engine(plan.source_path(), plan.schema)
    default_total = plan.total_epsilon if plan.total_epsilon is not None else preview.total
    if plan.schema.privacy_unit is not None:
        check_unit(plan.schema)
    tick("preparing the mechanisms")
    steps = [
        session.Step(a.planned.query, a.epsilon, a.two_phase, a.planned, a.planned.delta)
        for a in preview.allocations
    ]
    prepared = session.prepare(  # before any ledger file
        plan.schema,
        steps,
        engine,
        confidence=plan.queries[0].confidence,
        consistent=plan.consistent,
    )
    in_file = ledger is not None and not isinstance(ledger, Ledger)
    name = resolve_dataset(dataset, None, engine.describe(), ledger_file=in_file)
    if book is not None:
        name = book.dataset
    elif isinstance(ledger, Ledger):
        book = ledger
        if owner_delta is not None:  # the owner's δ budget for a ledger the caller opened
            book.total_delta = owner_delta
    elif ledger is None:
        book = Ledger(None, given or default_total, dataset=name)
    else:
        book = _owner_ledger(Path(str(ledger)), given, name)
        book.total_delta = owner_delta
    tick.total += session.phase_two_steps(prepared)
    tick("releasing")
    results, spent = session.run(prepared, engine, book, name, rng=rng, on_step=tick)
    files: tuple[Path, ...] = ()
    if out_dir is not None:
        tick("writing the results")
        files = (
            *write_results(results, out_dir),
            write_report(results, out_dir, preview, plan.schema),
        )
    tick("done")
    return PlanRun(tuple(results), preview, files, book, spent)


class _Ticker:
    """Counts a run's public steps for a :data:`ProgressCallback`: each call reports the steps
    finished so far and names the one starting ("done" at the end)."""

    def __init__(self, callback: ProgressCallback | None, total: int) -> None:
        self.callback, self.total, self.done = callback, total, -1

    def __call__(self, label: str) -> None:
        self.done += 1
        if self.callback is not None:
            self.callback(min(self.done, self.total), self.total, label)


def _early_ledger(
    plan: Plan, ledger: object, given: Fraction | None, dataset: str | None, engine: object
) -> Ledger | None:
    """The ledger file's budget, opened before the source when the source is one file (its
    dataset name is then its resolved path, as the engine would give it); else None (opened
    once the engine names the source)."""
    source = plan.source_path()
    if engine is not None or ledger is None or isinstance(ledger, Ledger):
        return None
    if not isinstance(source, (str, Path)) or any(c in str(source) for c in "*?["):
        return None
    name = resolve_dataset(dataset, source, str(source), ledger_file=True)
    return _owner_ledger(Path(str(ledger)), given, name)


def _owner_ledger(path: Path, given: Fraction | None, dataset: str) -> Ledger:
    """The ledger at ``path`` for ``dataset`` with the budget its owner set: ``given`` (the
    owner's ``--total-epsilon``, checked against the ledger's) or the ledger's own entry. A plan
    never sets one: without either the run is refused, and nothing is read or spent."""
    if given is not None:
        return Ledger(path, given, dataset=dataset)
    try:
        return Ledger(path, None, dataset=dataset)
    except ParameterError as exc:
        if exc.parameter != "total_epsilon":
            raise
    raise ParameterError(
        f"dataset {dataset} has no privacy budget in ledger {path}, and a plan cannot set one: "
        f"the data owner sets it with `snapdp budget --ledger {path} --dataset {dataset} "
        "--total-epsilon E` or gives `--total-epsilon` to this run (the plan file's "
        "total_epsilon key only caps the plan; docs/plans.md); nothing was read or spent",
        parameter="total_epsilon",
    )


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
