"""Post-processing of released values: SQL's HAVING and ORDER BY (docs/sql.md, "HAVING and
ORDER BY"), and counts rounded to integers (docs/utility.md, "Integer counts").

Both act on what was released, never on the data: which groups are shown, and in which order, is
decided by the noisy values, which costs no privacy (post-processing). Each result says so in its
notes. A :class:`PostProcessing` names the outputs of a query (its grouping columns and its
aggregates, by the names a user wrote), a HAVING condition as a
:mod:`snapdp.data.model.predicate` over those names (evaluated by
:func:`snapdp.data.model.predicate.evaluate`, SQL's three-valued logic), and the ORDER BY keys.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from msgspec import Struct
from msgspec.structs import replace

from snapdp.data.model.predicate import Predicate, evaluate
from snapdp.data.output.results import QueryResult, ResultRow

__all__ = ["Output", "PostProcessing", "apply_post_processing", "integer_counts", "nearest_integer"]

NOTE = (
    "{clause} was applied to the released values, not the true ones (post-processing: no extra "
    "privacy cost; docs/sql.md, 'HAVING and ORDER BY')"
)


class Output(Struct, frozen=True):
    """One SELECT item: a grouping ``column`` or an ``aggregate`` (its index among the query's
    results), under the ``name`` the query gives it."""

    name: str
    column: str | None = None
    aggregate: int | None = None


class PostProcessing(Struct, frozen=True):
    """What to do with the released values of one query's results.

    ``having``: keep the cells for which it is true (over output names; ``#i`` names the i-th
    aggregate); ``order``: (output name, descending) keys, the first the most significant."""

    outputs: tuple[Output, ...] = ()
    having: Predicate | None = None
    order: tuple[tuple[str, bool], ...] = ()


def apply_post_processing(
    post: PostProcessing, results: Sequence[QueryResult]
) -> list[QueryResult]:
    """The results with HAVING and ORDER BY applied to the released values, each said in the
    notes (all results of one query share their cells)."""
    out = list(results)
    if (post.having is None and not post.order) or not out:
        return out
    keys = out[0].key_columns
    cells = [row.keys for row in out[0].rows]
    values = [{row.keys: row.value for row in r.rows} for r in out]

    def env(cell: tuple[Any, ...]) -> dict[str, object]:
        named: dict[str, object] = dict(zip(keys, cell, strict=True))
        for i in range(len(out)):
            named[f"#{i}"] = values[i][cell]
        for o in post.outputs:
            if o.aggregate is not None:
                named[o.name] = values[o.aggregate][cell]
            elif o.column is not None:
                named[o.name] = cell[keys.index(o.column)]
        return named

    kept = [c for c in cells if post.having is None or evaluate(post.having, env(c)) is True]
    notes = [NOTE.format(clause="HAVING")] if post.having is not None else []
    for name, descending in reversed(post.order):  # stable sorts: the first key last

        def key(cell: tuple[Any, ...], n: str = name) -> tuple[int, Any]:
            x = env(cell)[n]
            return (0, x) if x is not None else (1, 0)

        kept.sort(key=key, reverse=descending)
    if post.order:
        notes.append(NOTE.format(clause="ORDER BY"))
    final = []
    for r in out:
        by_cell = {row.keys: row for row in r.rows}
        rows: tuple[ResultRow, ...] = tuple(by_cell[c] for c in kept)
        final.append(replace(r, rows=rows, notes=(*r.notes, *notes)))
    return final


INTEGER_NOTE = (
    "the count is rounded to the nearest integer, and its ± covers the rounding (post-processing: "
    "no extra privacy cost; docs/utility.md, 'Integer counts')"
)


def integer_counts(results: Sequence[QueryResult]) -> list[QueryResult]:
    """Each count released on its own as the integer nearest its grid value (half up), unless
    its query asks for the grid value (``grid_counts``); a count fitted with others (its rows
    carry ``independent``) is left as the fit made it. The ± of such a count is stated already
    as ⌊a + 1/2⌋ (docs/utility.md, "Integer counts")."""
    out = []
    for r in results:
        if r.query.statistic != "count" or r.query.grid_counts:
            out.append(r)
            continue
        if any(row.independent is not None for row in r.rows):
            out.append(r)
            continue
        rows = tuple(replace(row, value=nearest_integer(row.value)) for row in r.rows)
        out.append(replace(r, rows=rows, notes=(*r.notes, INTEGER_NOTE)))
    return out


def nearest_integer(value: float | int) -> int:
    """The integer nearest ``value``, ties up, exactly."""
    return math.floor(Fraction(value) + Fraction(1, 2))
