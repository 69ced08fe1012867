"""The release session: the one path from a planned workload to released results (docs/data.md,
"The order of a release"; docs/plans.md, "Running a plan").

Every front end — :meth:`snapdp.data.Plan.run` (plan files and the page), ``snapdp release``,
``snapdp sql``, :meth:`snapdp.data.PrivateTable.release` and :meth:`~snapdp.data.PrivateTable.sql`
— releases through these two steps:

1. :func:`prepare` (reads no data, opens no ledger): compiles each query ONCE at its planned ε,
   checks the consistent families, calibrates the noise (a two-phase query's split at its cap,
   never a one-phase calibration it would not use), runs the parameter-only refusals, and checks
   that every column the queries use is in the source (its header or schema, not its values);
2. :func:`run` (given the ledger, opened once by the caller after :func:`prepare` succeeded, so
   a refused release creates no ledger file): a workload of fixed ε **spends** its total in one
   entry, committed before any result is returned (a failure before any noise is drawn records
   nothing; a failure after it still spends, since the noise exists); a workload with a
   two-phase query **reserves** its cap before any noise is drawn and **settles** the unused
   part in the same entry (a privacy filter, docs/plans.md). One δ rule (the sum of every
   mechanism's δ, rounded up, at most 1) and one ledger ``meta`` serve both.

Privacy (DESIGN §8.1): every step before the release core depends on the workload and the
source's column names only; the core's engine calls and draws depend on the compiled queries;
the phase-two hook sees released values only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
from msgspec import Struct
from msgspec.structs import replace

from snapdp.data import statistics
from snapdp.data.engines.base import Engine
from snapdp.data.model.observed import refuse_with_data_keys
from snapdp.data.model.query import Query
from snapdp.data.model.schema import Schema
from snapdp.data.model.workload import PlannedQuery, alpha_of, check_mode
from snapdp.data.output.results import QueryResult
from snapdp.data.planner.consistent_accuracy import consistent_counts
from snapdp.data.planner.two_phase import (
    TwoPhase,
    first_phase,
    phase_two_epsilon,
    smallest_count,
    split_noises,
    with_target,
)
from snapdp.data.release import groups, unit_keys
from snapdp.data.release.core import Noisy, Progress, hash_key, release_core
from snapdp.data.release.groups import Selection, plan_selections
from snapdp.data.statistics import Compiled, Noise
from snapdp.data.statistics.consistency import Counted
from snapdp.data.statistics.refusals import check_release
from snapdp.errors import ParameterError
from snapdp.mechanism import SnappingMechanism

__all__ = ["Prepared", "Step", "check_columns", "prepare", "run", "up_delta"]


class Step(Struct, frozen=True):
    """One query as the session releases it: the planned query (its target, if any, is checked
    against the result), its ε (a two-phase query's cap) and its two-phase plan."""

    query: Query
    epsilon: Fraction
    two_phase: TwoPhase | None = None
    planned: PlannedQuery | None = None  # for the two-phase search and the target's verdict
    delta: Fraction | None = None  # groups from the data (docs/sql.md)


class Prepared(Struct, frozen=True):
    """A release ready to run: compiled once, calibrated, checked against the source's columns.
    Nothing in it depends on the data."""

    schema: Schema
    steps: tuple[Step, ...]
    compiled: tuple[Compiled, ...]
    noises: tuple[tuple[Noise, ...], ...]
    counts: tuple[Counted | None, ...]
    mode: str | None
    confidence: float
    alpha: float
    selections: tuple[Selection, ...] = ()

    @property
    def total(self) -> Fraction:
        """The ε the release spends (fixed ε), or reserves (its two-phase caps included)."""
        return sum((s.epsilon for s in self.steps), Fraction(0))

    @property
    def selection_delta(self) -> float:
        """The δ of its key selections (groups from the data)."""
        return math.fsum(float(s.delta) for s in self.selections)

    @property
    def adaptive(self) -> bool:
        """Whether some query chooses its ε from released values (reserve, then settle)."""
        return any(s.two_phase is not None for s in self.steps)

    def meta(self, seeded: bool) -> dict[str, Any]:
        """The ledger entry's description: the one form every release writes."""
        return {
            "queries": [c.query.label for c in self.compiled],
            "epsilon": [str(s.epsilon) for s in self.steps],
            "two_phase": [s.two_phase is not None for s in self.steps],
            "confidence": self.confidence,
            "schema": self.schema.describe(),
            "seeded": seeded,
            **({"delta": [str(s.delta) for s in self.selections]} if self.selections else {}),
        }


def prepare(
    schema: Schema,
    steps: Sequence[Step],
    engine: Engine,
    *,
    confidence: float,
    consistent: bool | str = False,
) -> Prepared:
    """Step 1 of a release (module docstring): every refusal that needs no data value, before
    any ledger is opened. ``confidence``: every ± holds with it (α = 1 − the decimal written)."""
    steps = tuple(steps)
    if not steps:
        raise ParameterError("a release needs at least one query", parameter="queries")
    alpha = alpha_of(confidence)
    mode = check_mode(consistent)
    epsilons, selections = plan_selections(
        schema, [s.query for s in steps], [s.epsilon for s in steps], [s.delta for s in steps]
    )
    if selections:
        _refuse_adaptive(steps, mode)
    planned = [
        statistics.compile_query(s.query, schema, e) for s, e in zip(steps, epsilons, strict=True)
    ]
    own: dict[int, tuple[Noise, ...]] = {}
    for i, (s, c) in enumerate(zip(steps, planned, strict=True)):
        if s.two_phase is None:  # the parameter-only refusals, as the planner states them
            own[i] = statistics.calibrate(c)
            check_release(c, own[i])
    compiled, counts = consistent_counts(planned, mode)
    noises: list[tuple[Noise, ...]] = []
    for i, (s, c) in enumerate(zip(steps, compiled, strict=True)):
        if s.two_phase is not None:  # every mechanism at its largest ε: phase 2 at cap − ε₁
            noises.append(split_noises(c, s.two_phase.phase1, c.epsilon - s.two_phase.phase1))
        else:
            noises.append(own[i] if c is planned[i] else statistics.calibrate(c))
    check_columns(engine, schema, compiled)
    return Prepared(
        schema, steps, tuple(compiled), tuple(noises), tuple(counts), mode, confidence, alpha,
        tuple(selections),
    )  # fmt: skip


def _refuse_adaptive(steps: Sequence[Step], mode: str | None) -> None:
    """Groups from the data are released at a fixed ε and without a consistent fit."""
    targeted = [s.query.label for s in steps if s.two_phase is not None]
    refuse_with_data_keys(targeted, mode is not None)


def run(
    prepared: Prepared,
    engine: Engine,
    ledger: Any,
    dataset: str,
    *,
    rng: np.random.Generator | None = None,
    on_step: Callable[[str], None] | None = None,
) -> tuple[list[QueryResult], Fraction]:
    """Step 2 of a release (module docstring): (results in query order, ε spent).
    ``on_step``: called with a public label as each two-phase query starts its phase two
    (:func:`phase_two_steps` of them; their number never depends on the data)."""
    p = prepared
    what = "; ".join(c.query.label for c in p.compiled)
    meta = p.meta(rng is not None)
    if not p.adaptive:
        # groups from the data: their δ is paid by the dataset's δ budget (docs/plans.md)
        paid = {"selection_delta": p.selection_delta} if p.selections else {}
        ledger.check(p.total, **paid)
        progress = Progress()
        total = p.total  # an extra selection count takes its ε from its query's
        planned_delta = _planned_delta(p.noises) + p.selection_delta
        try:
            key = hash_key(rng)
            if p.selections:
                results = _selected_release(p, engine, rng, key, progress)
            else:
                released = release_core(
                    engine, p.schema, list(p.compiled), list(p.noises), rng=rng, key=key,
                    confidence=p.confidence, alpha=p.alpha, mode=p.mode, counts=list(p.counts),
                    progress=progress,
                )  # fmt: skip
                results = _with_targets(p, released.results, released.noisy, {})
        except BaseException:
            if progress.noise_drawn:  # noise exists: its ε counts, whatever happens next
                ledger.spend(total, up_delta(planned_delta), what, dataset, meta, **paid)
            raise
        ledger.spend(total, up_delta(_delta(results)), what, dataset, meta, **paid)
        return results, total
    entry = ledger.reserve(p.total, up_delta(_planned_delta(p.noises)), what, dataset, meta)
    needs: dict[int, tuple[float, Compiled]] = {}
    eps1 = {i: s.two_phase.phase1 for i, s in enumerate(p.steps) if s.two_phase is not None}

    def phase_two(
        compiled: list[Compiled], noises: list[tuple[Noise, ...]], noisy: Noisy
    ) -> dict[int, tuple[Compiled, tuple[Noise, ...]]]:
        """Each two-phase query's ε₂ from its released counts (and public parameters only)."""
        chosen = {}
        for i, e1 in eps1.items():
            if on_step is not None:
                on_step(f"phase two of {p.compiled[i].query.label}")
            left = compiled[i].epsilon - e1
            smallest = smallest_count(compiled[i], noises[i], noisy[i], p.alpha)
            planned = p.steps[i].planned
            assert planned is not None  # a two-phase step carries its planned query
            eps2, _ = phase_two_epsilon(p.schema, planned, e1, left, smallest)
            needs[i] = (smallest, compiled[i])
            c = replace(compiled[i], epsilon=e1 + eps2)
            chosen[i] = (c, split_noises(c, e1, eps2))
        return chosen

    progress = Progress()
    try:
        released = release_core(
            engine, p.schema, list(p.compiled), list(p.noises), rng=rng, key=hash_key(rng),
            confidence=p.confidence, alpha=p.alpha, mode=p.mode, counts=list(p.counts),
            first=first_phase, hook=phase_two, progress=progress,
        )  # fmt: skip
        results = _with_targets(p, released.results, released.noisy, needs)
    except BaseException:
        if not progress.noise_drawn:  # nothing released: the whole reservation comes back
            ledger.settle(entry, Fraction(0), 0.0)
        raise
    spent = sum((c.epsilon for c in released.compiled), Fraction(0))
    ledger.settle(entry, spent, up_delta(_delta(results)))
    return results, spent


def _selected_release(
    p: Prepared, engine: Engine, rng: np.random.Generator | None, key: str, progress: Progress
) -> list[QueryResult]:
    """A release with groups from the data (:mod:`snapdp.data.release.groups`): the selections
    first, then every other query in one core run; each result only for its kept keys."""

    by_value = unit_keys.by_value(p.schema, [s.count.query for s in p.selections])

    def count(schema: Schema, c: Compiled, noise: tuple[Noise, ...]) -> QueryResult:
        out = release_core(
            engine, schema, [c], [noise], rng=rng, key=key, confidence=p.confidence,
            alpha=p.alpha, progress=progress, by_value=by_value,
        )  # fmt: skip
        return out.results[0]

    chosen = groups.select(p.selections, p.compiled, p.schema, count, engine, key)
    first = {s.members[0]: s for s in p.selections}
    live = [
        i
        for i in range(len(p.compiled))
        if i not in chosen.results and chosen.compiled.get(i, p.compiled[i]) is not None
    ]
    compiled = [chosen.compiled.get(i) or p.compiled[i] for i in live]
    released = release_core(
        engine, p.schema, compiled, [p.noises[i] for i in live], rng=rng, key=key,
        confidence=p.confidence, alpha=p.alpha, progress=progress, by_value=by_value,
    ) if live else None  # fmt: skip
    by_index = dict(zip(live, released.results if released else [], strict=True))
    results = []
    for i, c in enumerate(p.compiled):
        r = chosen.results.get(i) or by_index.get(i)
        if r is None:
            r = groups.empty(c, _planned_delta([p.noises[i]]), p.confidence)
        if i in chosen.shown:
            r = groups.finish(r, chosen.shown[i], first.get(i), chosen.notes[i], by_value)
            r = replace(r, epsilon=p.steps[i].epsilon)
        results.append(r)
    return results


def phase_two_steps(prepared: Prepared) -> int:
    """How many times :func:`run` calls its ``on_step``: one per two-phase query (public)."""
    return sum(s.two_phase is not None for s in prepared.steps)


def check_columns(engine: Engine, schema: Schema, compiled: Sequence[Compiled]) -> None:
    """Every column the queries use is in the source (its header or schema: not its values)."""
    present = set(engine.column_names())
    used = [g.name for c in compiled for g in c.engine_groupings]
    used += [c.value.column.name for c in compiled if c.value is not None]
    used += [w.name for c in compiled for w in c.where_columns]
    if schema.privacy_unit is not None:
        used.append(schema.privacy_unit)
    for name in dict.fromkeys(used):
        if name not in present:
            raise ParameterError(  # names the declared column only, never the source's
                f"column {name!r} is not in the header of {engine.describe()} "
                "(`snapdp check` compares a source with its declaration)",
                parameter="data",
            )


def up_delta(delta: float) -> float:
    """The δ recorded for a release: the exact sum rounded up to a double, at most 1."""
    return min(1.0, math.nextafter(delta, math.inf)) if delta > 0 else 0.0


def _delta(results: Sequence[QueryResult]) -> float:
    return math.fsum(r.delta for r in results)


def _planned_delta(noises: Sequence[Sequence[Noise]]) -> float:
    return math.fsum(
        n.cells
        * SnappingMechanism(n.epsilon, n.sensitivity, n.part.lower, n.part.upper).privacy.delta
        for ns in noises
        for n in ns
    )


def _with_targets(
    p: Prepared,
    results: list[QueryResult],
    noisy: Noisy,
    needs: dict[int, tuple[float, Compiled]],
) -> list[QueryResult]:
    """Each result with its target's verdict (released values and public parameters only)."""
    out = []
    for i, (r, s) in enumerate(zip(results, p.steps, strict=True)):
        if s.planned is not None:
            r = with_target(r, s.planned, s.epsilon, noisy[i], p.schema, needs.get(i))
        out.append(r)
    return out
