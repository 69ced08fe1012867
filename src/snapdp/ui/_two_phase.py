"""What a two-phase target would spend and reach, for group sizes the page's user sets
(docs/ui.md, "Two-phase targets"; docs/plans.md, "Two-phase targets").

A two-phase query's ε depends on the noisy size of its smallest group, known only after phase 1.
Before the run the page shows, for a few plausible group sizes, the ε the query would spend in
all and the ± it would reach — from public parameters only (the planner's own functions, with
the certificates presumed as in its draft) — and says plainly when its target is out of reach.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from snapdp._rational import format_rational
from snapdp.data.model.schema import Schema
from snapdp.data.planner.preview import Allocation, PlanPreview
from snapdp.data.planner.two_phase import phase_two_epsilon, split_statement
from snapdp.ui._document import FieldError

__all__ = ["DEFAULT_SIZES", "group_sizes", "two_phase_json"]

#: The group sizes shown when the page sends none.
DEFAULT_SIZES = (100, 1_000, 10_000)
_MAX_SIZES = 6


def group_sizes(text: object) -> tuple[int, ...]:
    """The page's group sizes ("100, 1000, 10000"): whole numbers ≥ 1, at most six."""
    if text is None or (isinstance(text, str) and not text.strip()):
        return DEFAULT_SIZES
    parts = [p.strip().replace("_", "") for p in text.split(",")] if isinstance(text, str) else []
    if (
        not parts
        or len(parts) > _MAX_SIZES
        or not all(p.isdigit() and 0 < len(p) < 13 for p in parts)
    ):
        raise FieldError(
            f"group sizes must be up to {_MAX_SIZES} whole numbers ≥ 1, comma-separated "
            "(e.g. 100, 1000, 10000)",
            field="sizes",
            parameter="group_size",
        )
    sizes = sorted({int(p) for p in parts})
    if sizes[0] < 1:
        raise FieldError("a group size must be ≥ 1", field="sizes", parameter="group_size")
    return tuple(sizes)


def _at(schema: Schema, a: Allocation, n: int) -> dict[str, Any]:
    """What the query of ``a`` would spend and state for a smallest group of ``n`` rows."""
    tp = a.two_phase
    pq = a.planned
    assert tp is not None
    eps2, needed = phase_two_epsilon(schema, pq, tp.phase1, tp.cap - tp.phase1, n,
                                     presume_certified=True)  # fmt: skip
    reached = split_statement(schema, pq.query, tp.phase1, eps2, pq.confidence, True).at(n)
    return {
        "rows": n,
        "epsilon": format_rational(tp.phase1 + eps2, max_digits=None),
        "accuracy": float(reached),
        "met": needed is not None and Fraction(reached) <= (pq.accuracy or 0),
    }


def two_phase_json(
    schema: Schema, planned: PlanPreview, sizes: tuple[int, ...]
) -> list[dict[str, Any] | None]:
    """Per query (None for one released in one phase): its cap, the rows from which its target
    is met (``floor``, None: never under its cap), ``out_of_reach`` (no group of a realistic
    size meets it: none up to the table's declared ``rows``, else up to the largest size
    shown) and, for each size, the ε it would spend and the ± it would reach."""
    out: list[dict[str, Any] | None] = []
    realistic = schema.rows if schema.rows is not None else max(sizes)
    for a in planned.allocations:
        tp = a.two_phase
        if tp is None:
            out.append(None)
            continue
        out.append(
            {
                "cap": format_rational(tp.cap, max_digits=None),
                "floor": tp.floor,
                "out_of_reach": tp.floor is None or tp.floor > realistic,
                "realistic_rows": realistic,
                "sizes": [_at(schema, a, n) for n in sizes],
            }
        )
    return out
