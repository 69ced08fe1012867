"""The ± of a consistent release before anything is spent (``--dry-run``, ``snapdp plan``;
docs/data.md, "Tables that add up").

A consistent release gives its families' counts open bounds (other mechanisms than an
independent count's) and states each fitted value's ± from the fit
(:func:`snapdp.data.consistency.make_consistent`): the smaller of the fit bound and the count's
own ± plus the fit's shift |v − z| (each with the fit's rounding |v − ŷ| in the rounding
modes). The shift is known only once the noise is drawn, so the statement shown before the
release is the one the release makes when the fit moves no count, which is the least it states:
this module runs the release's own steps — :func:`snapdp.data.release.consistent_counts`, the
calibration, :func:`snapdp.data.statistics.assemble` and the fit — on a table of zeros (a
consistent table, read from nowhere), and keeps, per query, the smallest ± of its cells. Every
value of the release states at least that ± (each of its two bounds only grows with the shift and
the rounding). It reads no data and draws no noise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from fractions import Fraction

import numpy as np

from snapdp.data.consistency import make_consistent
from snapdp.data.core import consistent_counts
from snapdp.data.model.query import Query
from snapdp.data.model.schema import Schema
from snapdp.data.model.workload import check_mode
from snapdp.data.statistics import (
    AccuracyStatement,
    accuracy_of,
    assemble,
    calibrate,
    compile_query,
    mechanisms,
)

__all__ = ["NOTE", "consistent_statements"]

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
    :meth:`snapdp.data.plan.Plan.preview`)."""
    mode = check_mode(consistent)
    alpha = float(1 - Fraction(repr(float(confidence))))
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
