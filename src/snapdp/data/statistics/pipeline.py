"""A query's path through the statistics: compile (checked against the declaration, its parts
from its kind), calibrate (each part's exact mechanism parameters), state the accuracy, read the
exact inputs, draw the noise and assemble the result (docs/data.md, "Statistics").

**Grouped parts** (DESIGN §8.4). A unit touches at most ``cells`` cells and moves each by at most
``per_cell``, all together by at most ``l1``. Each cell's mechanism gets ε/cells at the per-cell
sensitivity (composition over the cells one unit touches) — or, when ``l1`` is smaller than
cells·per_cell and the per-shift certificate of
:func:`snapdp.data.statistics.calibration.calibrate_l1` holds, the full (certified, slack-reduced) ε
at sensitivity ``l1``, whichever has less noise. Without a certificate the result says that it fell
back. Either way the parts' ε compose to the query's exactly (:func:`check_composition`).

Each step that depends on the statistic asks the query's kind
(:mod:`snapdp.data.statistics.kinds`); this module holds what every kind shares.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
from msgspec.structs import replace

from snapdp.data.engines.base import Aggregates
from snapdp.data.model.observed import joint_labels
from snapdp.data.model.query import Query
from snapdp.data.model.schema import DEFAULT_MAX_ROWS, Column, Schema
from snapdp.data.output.results import QueryResult, ResultRow
from snapdp.data.statistics import calibration
from snapdp.data.statistics.bounding import reach
from snapdp.data.statistics.kinds import kind_of
from snapdp.data.statistics.math import exponential_grid as expq
from snapdp.data.statistics.sensitivity import fits_int64
from snapdp.data.statistics.types import AccuracyStatement, Compiled, Noise, Part, frac, up
from snapdp.errors import ParameterError, not_declared
from snapdp.exponential import exponential_parameters
from snapdp.exponential import sample as exponential_sample
from snapdp.mechanism import SnappingMechanism

__all__ = [
    "accuracy_of",
    "assemble",
    "calibrate",
    "check_composition",
    "compile_parts",
    "exact_inputs",
    "mechanisms",
    "noisy_values",
    "notes_for",
]


# -- compiling --------------------------------------------------------------------------------
def compile_parts(query: Query, schema: Schema, epsilon: Fraction) -> Compiled:
    """The query's grouping checked against ``schema``, then its parts from its kind."""
    groupings = _groupings(query, schema)
    n_cells = 1
    for g in groupings:
        n_cells *= g.n_cells
    r = reach(schema, n_cells)
    return kind_of(query).compile(query, schema, epsilon, groupings, n_cells, r)


def _groupings(query: Query, schema: Schema) -> tuple[Column, ...]:
    overrides = dict(query.bins)
    groupings: list[Column] = []
    declared = [c.name for c in schema.columns]
    for name in query.by:
        if name not in declared and name not in overrides:
            raise ParameterError(
                f"{not_declared(name, declared, what='grouping column')}: declare its keys or "
                "bins (docs/data.md, 'The declaration')",
                parameter="by",
            )
        col = schema.column(name) if name in declared else Column(name, "decimal")
        if name in overrides:
            col = replace(col, keys=None, bins=tuple(overrides[name]))
        if not col.is_grouping:
            raise ParameterError(
                f"grouping column {name!r} needs declared keys or bins (docs/data.md, "
                "'The declaration')",
                parameter="by",
            )
        groupings.append(col)
    return tuple(groupings)


# -- calibrating ------------------------------------------------------------------------------
def calibrate(compiled: Compiled, *, presume_certified: bool = False) -> tuple[Noise, ...]:
    """Each part's exact mechanism parameters (see the module docstring, "Grouped parts").

    ``presume_certified``: take the L1 certificate's success for granted
    (:func:`snapdp.data.statistics.calibration.presumed_l1`) — for the planner's search over ε
    only, never for a release.
    """
    noises = (_calibrate_part(compiled, p, presume_certified) for p in compiled.parts)
    out = tuple(replace(n, presumed=presume_certified) for n in noises)
    check_composition(compiled, out)
    return out


def _calibrate_part(compiled: Compiled, part: Part, presume: bool = False) -> Noise:
    eps = compiled.epsilon * part.weight
    cells = compiled.reach.cells if part.cells is None else part.cells
    if part.source == "mean":
        cells = 1
    if cells == 1:
        return Noise(part, eps, part.per_cell, 1, False)
    composed = Noise(part, eps / cells, part.per_cell, cells, False)
    if not part.l1 < cells * part.per_cell:
        return composed
    if presume:
        cal = calibration.presumed_l1(eps, part.l1, part.lower, part.upper, cells)
    else:
        cal = calibration.calibrate_l1(eps, part.l1, part.lower, part.upper, cells)
    if not cal.certified:
        why = f": {cal.note}" if cal.note else ""
        return replace(composed, note=f"{part.name}: calibrated per group (ε/{cells}){why}")
    cal_eps, cal_sens = Fraction(cal.epsilon), cal.sensitivity
    if Fraction(cal_sens) / cal_eps < Fraction(part.per_cell) * cells / eps:
        note = (
            f"{part.name}: calibrated to the whole table's L1 sensitivity {cal_sens} at the full "
            "ε (certified per-shift bound; docs/data.md)"
        )
        return Noise(part, cal_eps, cal_sens, cells, True, note, slack=cal.slack)
    return composed


def mechanisms(noises: Sequence[Noise], rng: np.random.Generator | None) -> list[SnappingMechanism]:
    """One mechanism per part (shared by the part's cells: each call draws fresh noise)."""
    return [
        SnappingMechanism(n.epsilon, n.sensitivity, n.part.lower, n.part.upper, rng=rng)
        for n in noises
    ]


def check_composition(compiled: Compiled, noises: Sequence[Noise]) -> None:
    """The parts' ε compose to the query's exactly (as Fractions): an internal error otherwise,
    never a refusal (the calibration must not spend more, nor state less, than allocated)."""
    spent = sum((n.spent for n in noises), Fraction(0))
    if spent != compiled.epsilon:
        raise AssertionError(
            f"{compiled.query.label}: the parts' ε add up to {spent}, not the query's "
            f"{compiled.epsilon}"
        )


# -- accuracy ---------------------------------------------------------------------------------
def accuracy_of(
    compiled: Compiled,
    noises: Sequence[Noise],
    confidence: float,
    alpha: float,
    *,
    targets: bool = True,
) -> AccuracyStatement:
    """The query's accuracy at ``confidence`` = 1 − ``alpha`` (docs/data.md, "Accuracy before
    spending"). ``targets=False``: leave a quantile statement's per-probability ``targets`` empty
    (the planner's figures, :meth:`AccuracyStatement.at` and ``describe``, do not read them; a
    release needs them)."""
    notes = notes_for(compiled, noises)
    return kind_of(compiled.query).accuracy(compiled, noises, confidence, alpha, notes, targets)


def notes_for(compiled: Compiled, noises: Sequence[Noise]) -> tuple[str, ...]:
    """Plain statements qualifying every value of the query: the neighbouring relation, the null
    and fit rules applied, the row bound the ± holds for, calibration fallbacks."""
    schema, query = compiled.schema, compiled.query
    notes: list[str] = []
    if query.statistic == "mean" and query.method == "substitute":
        notes.append(
            f"neighbours: substitute one row; ± holds for tables of n = {schema.rows:,} rows "
            "(declared public, not checked)"
        )
    else:
        notes.append(f"neighbours: {compiled.reach.relation}")
    if schema.privacy_unit is not None:
        rule = "dropped" if schema.null_units == "drop" else "each its own unit"
        notes.append(f"rows with a null {schema.privacy_unit}: {rule}")
    for g in compiled.groupings:
        outside = "not a declared key" if g.keys is not None else "outside every bin"
        notes.append(
            f"{g.name}: cells that are not {g.type} count as null; nulls {g.nulls.describe()}; "
            f"rows whose {g.name} is {outside} are dropped"
        )
    used = compiled.value.column if compiled.value is not None else None
    if compiled.leaf is not None:
        used = schema.column(compiled.leaf.name)
    if used is not None:
        c = used
        notes.append(
            f"{c.name}: cells that are not {c.type} count as null; nulls {c.nulls.describe()}; "
            f"values clamped to [{frac(c.lower)}, {frac(c.upper)}]"
        )
    if schema.max_rows != DEFAULT_MAX_ROWS and query.method != "substitute":
        notes.append(f"± holds for tables of at most {schema.max_rows:,} rows (declared)")
    notes += [n.note for n in noises if n.note]
    return tuple(notes)


# -- the exact inputs of the mechanisms --------------------------------------------------------
def exact_inputs(
    compiled: Compiled, aggregates: Aggregates, value_index: int | None
) -> dict[str, list[int | Fraction]]:
    """Each part's exact aggregate per cell (engine output, or derived from it exactly)."""
    return kind_of(compiled.query).inputs(compiled, aggregates, value_index)


def noisy_values(
    mechanism: SnappingMechanism, part: Part, exact: Sequence[int | Fraction]
) -> npt.NDArray[np.float64]:
    """The mechanism's outputs for the exact values, in cell order.

    Each value is first clamped, exactly, to the mechanism's bounds (the mechanism clamps too, so
    this changes nothing); int64 arrays take the vectorised path when the bounds fit, else each
    value takes the exact path.
    """
    if part.source == "exponential":
        return _exponential_values(mechanism, part, exact)
    clamped = [min(max(x, part.lower), part.upper) for x in exact]
    # The path is chosen from the part (its bounds and the type of its exact values: ints for
    # sums and counts, Fractions for a substitute mean), never from the clamped values.
    if fits_int64(part.lower, part.upper) and all(isinstance(x, int) for x in exact):
        return mechanism.release_many(np.array(clamped, dtype=np.int64))
    return np.array([mechanism.release(x) for x in clamped], dtype=np.float64)


def _exponential_values(
    mechanism: SnappingMechanism, part: Part, exact: Sequence[int | Fraction]
) -> npt.NDArray[np.float64]:
    """One exponential-mechanism draw per cell of the grouping: the index of the released grid
    cell (``exact``: the rows per grid cell, cell after cell; the mechanism's bit source)."""
    m, p = part.upper + 1, part.probability  # the grid's cells; the quantile
    assert p is not None
    # the part's calibrated ε is the mechanism's (Noise.epsilon, see mechanisms())
    params = exponential_parameters(mechanism.epsilon, int(part.l1), m)
    out = []
    for start in range(0, len(exact), m):  # the same work for every cell
        counts = [int(c) for c in exact[start : start + m]]
        losses = expq.losses(counts, p, part.offset, part.middle)
        out.append(float(exponential_sample(params, losses, mechanism.bit_source)))
    return np.array(out, dtype=np.float64)


# -- results ----------------------------------------------------------------------------------
def assemble(
    compiled: Compiled,
    noises: Sequence[Noise],
    noisy: dict[str, npt.NDArray[np.float64]],
    confidence: float,
    alpha: float,
    mechs: Sequence[SnappingMechanism],
) -> QueryResult:
    """The query's result from the parts' noisy arrays (post-processing only)."""
    statement = accuracy_of(compiled, noises, confidence, alpha)
    kind = kind_of(compiled.query)
    rows: list[ResultRow] = []
    for i, keys in enumerate(joint_labels(compiled.groupings, compiled.joint)):
        rows += kind.rows(compiled, statement, noisy, i, tuple(keys))
    delta = math.fsum(
        n.cells * m.privacy.delta
        for n, m in zip(noises, mechs, strict=True)
        if n.part.source != "exponential"  # exact: pure ε
    )
    described = {
        n.part.name: _describe(n, m, kind.unit(n.part, compiled.fixed))
        for n, m in zip(noises, mechs, strict=True)
    }
    return QueryResult(
        compiled.query,
        tuple(g.name for g in compiled.groupings),
        tuple(rows),
        compiled.epsilon,
        up(delta) if delta > 0 else 0.0,
        confidence,
        statement.notes,
        described,
    )


def _describe(noise: Noise, mech: SnappingMechanism, unit: str) -> dict[str, Any]:
    if noise.part.source == "exponential":
        params = exponential_parameters(noise.epsilon, int(noise.sensitivity), noise.part.upper + 1)
        return {
            "mechanism": "exponential (exact; docs/exponential.md)",
            "epsilon": str(noise.epsilon),
            "epsilon_used": params.epsilon_used,
            "probability": str(noise.part.probability),
            "sensitivity": str(noise.sensitivity),
            "base": f"{params.numerator}/2^{params.shift}",
            "candidates": params.candidates,
            "loss_cap": params.cap,
            "words_per_draw": params.draw_words,
            "delta": 0.0,
        }
    return {
        "epsilon": str(noise.epsilon),
        "sensitivity": str(noise.sensitivity),
        "lower": str(noise.part.lower),
        "upper": str(noise.part.upper),
        "unit": unit,
        "grid_spacing": mech.grid_spacing,
        # the public rescaling (docs/mechanism.md, "No power-of-two penalty"): ratio 1 when off
        "rescale_ratio": str(mech.rescaling.ratio),
        "mechanism_epsilon": str(mech.rescaling.mechanism_epsilon),
        "mechanism_sensitivity": str(mech.rescaling.mechanism_sensitivity),
        "precision": mech.precision,
        "delta": mech.privacy.delta,
        "cells_touched": noise.cells,
        "l1_calibrated": noise.calibrated,
    }
