"""The release core: aggregate, draw the noise (in phases), assemble — shared by
:meth:`snapdp.data.release.table.PrivateTable.release` and plan runs (docs/data.md, "Statistics";
docs/plans.md, "Two-phase targets").

:func:`release_core` takes compiled queries and their calibrated noise and

1. groups the queries by (grouping, row filter): one engine plan each
   (:func:`aggregate_plans`);
2. aggregates, before any noise, every plan whose noise is drawn here (the exact aggregates stay
   in this process); a plan whose engine draws the noise where the aggregates live (Spark
   executors, :class:`~snapdp.data.engines.base.ExecutorNoiseEngine`) is aggregated and noised
   there, with the same mechanisms, and its exact aggregates never leave the engine;
3. **phase 1**: draws the parts ``first`` selects (none without a hook);
4. calls ``hook`` with the released phase-1 values: it returns the queries whose ε it chose
   from them (a two-phase query's phase 2, :mod:`snapdp.data.planner.two_phase`), recompiled, and
   their noise;
5. **phase 2**: draws every other part;
6. assembles the results (post-processing of the noise) and fits consistent families.

The noise is drawn plan by plan, query by query, part by part, within each phase: with a seeded
generator (tests only, not private) a release without a hook draws exactly as it always did, and
a plan run without two-phase queries equals :meth:`PrivateTable.release` of the same queries.

Privacy (DESIGN §8.1): what is drawn, in which order, and every engine call depend on the
compiled queries and public parameters only; the hook sees released values only.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
from msgspec import Struct, field

from snapdp.data import statistics
from snapdp.data.engines.base import AggregatePlan, Engine, ExecutorNoiseEngine, NoiseRequest
from snapdp.data.model.schema import Column, Schema
from snapdp.data.output.postprocess import integer_counts
from snapdp.data.output.results import QueryResult
from snapdp.data.statistics import Compiled, Noise, Part, consistency
from snapdp.mechanism import SnappingMechanism
from snapdp.randomness import bit_source_from

__all__ = [
    "Progress",
    "aggregate_plans",
    "fit_counts",
    "hash_key",
    "release_core",
]

#: Engine sources of the parts that the executors can noise directly.
ENGINE_SOURCES = {"rows": "rows", "sum": "sum", "count": "count", "squares": "squares"}

Noisy = list[dict[str, npt.NDArray[np.float64]]]
#: (queries' indices → (recompiled query, its noise)) chosen from the phase-1 values.
PhaseHook = Callable[
    [list[Compiled], list[tuple[Noise, ...]], Noisy], dict[int, tuple[Compiled, tuple[Noise, ...]]]
]


class Progress(Struct):
    """How far a release got: ``noise_drawn`` turns True just before the first noise is drawn
    (so a caller whose release fails knows whether any output may exist)."""

    noise_drawn: bool = False


class Released(Struct):
    """The core's output: the results (query order), and the compiled queries, noise,
    mechanisms and noisy arrays they were assembled from (after the hook)."""

    results: list[QueryResult]
    compiled: list[Compiled]
    noises: list[tuple[Noise, ...]]
    mechanisms: list[list[SnappingMechanism]]
    noisy: Noisy = field(default_factory=list)


def release_core(
    engine: Engine,
    schema: Schema,
    compiled: list[Compiled],
    noises: list[tuple[Noise, ...]],
    *,
    rng: np.random.Generator | None,
    key: str,
    confidence: float,
    alpha: float,
    mode: str | None = None,
    counts: list[consistency.Counted | None] | None = None,
    first: Callable[[Part], bool] | None = None,
    hook: PhaseHook | None = None,
    progress: Progress | None = None,
    by_value: Collection[str] = (),
) -> Released:
    """Release ``compiled`` with ``noises`` (see the module docstring). ``key``: the bounding's
    hash key (:func:`hash_key`); ``mode``/``counts``: consistent families
    (:func:`consistent_counts`); ``first``: the parts of phase 1 (only with ``hook``);
    ``progress``: updated as the release goes; ``by_value``: the grouping columns whose keys
    were read from the data (:attr:`AggregatePlan.by_value`)."""
    progress = progress if progress is not None else Progress()
    compiled, noises = list(compiled), list(noises)
    plans = aggregate_plans(schema, compiled, key, by_value=by_value)
    executor = [_executor_noise(engine, rng, p, [noises[i] for i in m]) for p, m, _ in plans]
    exact: dict[int, dict[str, list[int | Fraction]]] = {}
    for (plan, members, index), remote in zip(plans, executor, strict=True):
        if not remote:  # every driver-side aggregate before any noise
            aggregates = engine.aggregate(plan)
            for i in members:
                c = compiled[i]
                exact[i] = statistics.exact_inputs(c, aggregates, _value(c, index))
    noisy: Noisy = [{} for _ in compiled]
    mechs: dict[tuple[int, Noise], SnappingMechanism] = {}

    def draw(phase_one: bool) -> None:
        for (plan, members, index), remote in zip(plans, executor, strict=True):
            todo = [
                (i, n)
                for i in members
                for n in noises[i]
                if n.part.name not in noisy[i]
                and (first is not None and hook is not None and first(n.part)) == phase_one
            ]
            if not todo:
                continue
            progress.noise_drawn = True
            if remote:
                _executor(engine, plan, compiled, todo, index, noisy)
                continue
            for i, n in todo:
                m = mechs.setdefault((i, n), _mechanism(n, rng))
                noisy[i][n.part.name] = statistics.noisy_values(m, n.part, exact[i][n.part.name])

    draw(True)
    if hook is not None:
        for i, (c, ns) in hook(compiled, noises, noisy).items():
            compiled[i], noises[i] = c, ns
    draw(False)
    mechanisms = [
        [mechs[i, n] if (i, n) in mechs else _mechanism(n, rng) for n in noises[i]]
        for i in range(len(compiled))
    ]
    results = [
        statistics.assemble(c, n, out, confidence, alpha, m)
        for c, n, out, m in zip(compiled, noises, noisy, mechanisms, strict=True)
    ]
    results = fit_counts(results, counts or [], mechanisms, alpha, mode, schema.max_rows)
    results = integer_counts(results)
    return Released(results, compiled, noises, mechanisms, noisy)


def _value(c: Compiled, index: dict[Any, int]) -> int | None:
    return None if c.value is None else index[c.value]


def _mechanism(n: Noise, rng: np.random.Generator | None) -> SnappingMechanism:
    return SnappingMechanism(n.epsilon, n.sensitivity, n.part.lower, n.part.upper, rng=rng)


def _executor_noise(
    engine: Engine,
    rng: np.random.Generator | None,
    plan: AggregatePlan,
    noises: list[tuple[Noise, ...]],
) -> bool:
    """Whether the engine draws this plan's noise itself: it can, no seeded generator was asked
    for, it has every part's exact aggregate, and it wants to for this many cells (all public).

    Never for a plan whose keys came from the data: its number of cells is the number of distinct
    keys in the data, which one person moves, so a switch at a cell count would show it."""
    return (
        isinstance(engine, ExecutorNoiseEngine)
        and rng is None
        and not plan.by_value
        and plan.joint is None
        and all(n.part.source in ENGINE_SOURCES for ns in noises for n in ns)
        and engine.wants_executor_noise(plan.n_cells)
    )


def _executor(
    engine: Engine,
    plan: AggregatePlan,
    compiled: list[Compiled],
    todo: list[tuple[int, Noise]],
    index: dict[Any, int],
    out: Noisy,
) -> None:
    """The noisy arrays of ``todo``'s parts, drawn by the engine where the aggregates live."""
    assert isinstance(engine, ExecutorNoiseEngine)
    requests = []
    for i, n in todo:
        j = _value(compiled[i], index)
        src = n.part.source if n.part.source == "rows" else f"{n.part.source}{j}"
        requests.append(
            NoiseRequest(
                f"{i}.{n.part.name}", src, (n.epsilon, n.sensitivity, n.part.lower, n.part.upper)
            )
        )
    noisy = engine.noisy_aggregate(plan, requests)
    for i, n in todo:
        out[i][n.part.name] = noisy[f"{i}.{n.part.name}"]


def aggregate_plans(
    schema: Schema, compiled: Sequence[Compiled], key: str, by_value: Collection[str] = ()
) -> list[tuple[AggregatePlan, list[int], dict[Any, int]]]:
    """One engine plan per distinct (grouping, row filter) of ``compiled``: (the plan, the
    indices of the queries it serves, each value column's index in the plan's values).
    ``by_value``: the grouping columns whose keys were read from the data."""
    members_of: dict[tuple[Any, ...], list[int]] = {}
    for i, c in enumerate(compiled):
        members_of.setdefault((c.engine_groupings, c.where, c.where_columns, c.joint), []).append(i)
    out = []
    for (groupings, where, where_columns, joint), members in members_of.items():
        values = list(dict.fromkeys(compiled[i].value for i in members if compiled[i].value))
        plan = AggregatePlan(
            groupings=groupings,
            values=tuple(v for v in values if v is not None),
            unit=_unit_column(schema),
            null_units=schema.null_units,
            bounds=schema.bounds,
            hash_key=key,
            where=where,
            where_columns=where_columns,
            joint=joint,
            by_value=tuple(g.name for g in groupings if g.name in by_value),
        )
        out.append((plan, members, {v: j for j, v in enumerate(plan.values)}))
    return out


def fit_counts(
    results: list[QueryResult],
    counts: list[consistency.Counted | None],
    mechs: Sequence[Sequence[Any]],
    alpha: float,
    mode: str | None,
    max_rows: int,
) -> list[QueryResult]:
    """The released results with their consistent families fitted (post-processing; docs/data.md,
    "Tables that add up"); as they are without a mode."""
    if mode is None:
        return results
    count_mechs = [m[0] if g is not None else None for g, m in zip(counts, mechs, strict=True)]
    return consistency.make_consistent(results, counts, count_mechs, alpha, mode, max_rows)


def _unit_column(schema: Schema) -> Column | None:
    if schema.privacy_unit is None:
        return None
    for c in schema.columns:
        if c.name == schema.privacy_unit:
            return c
    return Column(schema.privacy_unit, "text")


def hash_key(rng: np.random.Generator | None) -> str:
    """A fresh 128-bit key from the release's random source (the default CSPRNG, or the seeded
    Generator the caller asked for), as 32 hex digits: the four 32-bit key words of the
    bounding rank (:func:`~snapdp.data.engines.base.key_words`; docs/data.md, "Contribution
    bounding")."""
    source = bit_source_from(rng)
    hi, lo = (int(w) for w in source.words(2))
    return f"{hi:016x}{lo:016x}"
