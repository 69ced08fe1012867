"""The ± of a consistent release before anything is spent (``--dry-run``, ``snapdp plan``;
docs/data.md, "Tables that add up").

A consistent release gives its families' counts open bounds (other mechanisms than an
independent count's) and states each fitted value's ± from the fit
(:func:`snapdp.data.statistics.consistency.make_consistent`): the smaller of the fit bound and
the count's own ± plus the fit's shift |v − z| (each with the fit's rounding |v − ŷ| in the rounding
modes). The shift is known only once the noise is drawn, so the statement shown before the
release is the one the release makes when the fit moves no count, which is the least it states:
this module runs the release's own steps — :func:`consistent_counts`, the
calibration, :func:`snapdp.data.statistics.assemble` and the fit — on a table of zeros (a
consistent table, read from nowhere), and keeps, per query, the smallest ± of its cells. Every
value of the release states at least that ± (each of its two bounds only grows with the shift and
the rounding). It reads no data and draws no noise.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import numpy as np
from msgspec.structs import replace

from snapdp.data.model.query import Query
from snapdp.data.model.schema import Schema
from snapdp.data.model.workload import alpha_of, check_mode
from snapdp.data.statistics import (
    AccuracyStatement,
    Compiled,
    accuracy_of,
    assemble,
    calibrate,
    compile_query,
    consistency,
    mechanisms,
)
from snapdp.data.statistics.consistency import make_consistent

__all__ = ["NOTE", "consistent_counts", "consistent_statements"]

NOTE = (
    "consistent: ± as stated when the joint fit moves no count, the least the release states; "
    "a value the fit moves states the smaller of the fit bound and its own ± plus the shift "
    "|v − z| (docs/data.md, 'Tables that add up')"
)


def consistent_statements(
    schema: Schema,
    queries: Sequence[Query],
    epsilons: Sequence[Fraction],
    confidence: float,
    consistent: bool | str,
    *,
    presume_certified: bool = False,
) -> list[AccuracyStatement]:
    """Each query's accuracy statement as a release with ``consistent`` states it (module
    docstring); without a mode, the independent statements. ``presume_certified``: the
    planner's draft (L1 certificates taken for granted, as in
    :meth:`snapdp.data.planner.plan.Plan.preview`)."""
    mode = check_mode(consistent)
    alpha = alpha_of(confidence)
    compiled = [compile_query(q, schema, e) for q, e in zip(queries, epsilons, strict=True)]
    compiled, counts = consistent_counts(compiled, mode)
    noises = [calibrate(c, presume_certified=presume_certified) for c in compiled]
    statements = [
        accuracy_of(c, n, confidence, alpha) for c, n in zip(compiled, noises, strict=True)
    ]
    if mode is None:
        return statements
    members = [i for i, g in enumerate(counts) if g is not None]
    if not members:
        return statements
    results, mechs = [], []
    for i in members:
        c, n = compiled[i], noises[i]
        m = mechanisms(n, None)  # parameters only: nothing is drawn
        zeros = {p.part.name: np.zeros(c.n_cells) for p in n}
        results.append(assemble(c, n, zeros, confidence, alpha, m))
        mechs.append(m[0])
    fitted = make_consistent(
        results, [counts[i] for i in members], mechs, alpha, mode, schema.max_rows
    )
    for i, before, after in zip(members, results, fitted, strict=True):
        if after is before:  # not a nested count
            continue
        added = tuple(n for n in after.notes if n not in before.notes)
        if all(row.independent is None for row in after.rows):  # left out: released on its own
            statements[i] = replace(statements[i], notes=(*statements[i].notes, *added))
            continue
        least = min(row.accuracy for row in after.rows)
        statements[i] = replace(
            statements[i], accuracy=least, notes=(*statements[i].notes, *added, NOTE)
        )
    return statements


def consistent_counts(
    compiled: list[Compiled], mode: str | None
) -> tuple[list[Compiled], list[consistency.Counted | None]]:
    """With a ``consistent`` mode: (``compiled`` with its families' counts given open bounds, each
    query's count grouping or None); refuses an invalid family. Without: (``compiled``, [])."""
    if mode is None:
        return compiled, []
    counts = count_groupings(compiled)
    families = consistency.check(counts, mode)
    return _open_counts(compiled, [i for f in families for i in f]), counts


def _open_counts(compiled: list[Compiled], members: list[int]) -> list[Compiled]:
    """The counts of consistent families with bounds their noise never reaches (symmetric noise,
    no clamp at 0; :func:`snapdp.data.statistics.consistency.open_bound`)."""
    out = list(compiled)
    for i in members:
        c = compiled[i]
        (part,) = c.parts
        cells = c.reach.cells if part.cells is None else part.cells
        b = consistency.open_bound(part.per_cell, cells, c.epsilon * part.weight, c.schema.max_rows)
        out[i] = replace(c, parts=(replace(part, lower=-b, upper=b),))
    return out


def count_groupings(compiled: list[Compiled]) -> list[consistency.Counted | None]:
    """Each query's rows (grouping and row filter) when it is a count (it can join a consistent
    family), else None."""
    return [
        consistency.Counted(c.groupings, c.where) if c.query.statistic == "count" else None
        for c in compiled
    ]
