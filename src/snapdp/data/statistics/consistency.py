"""Tables that add up: which nested counts form a family (docs/data.md, "Tables that add up").

Count queries of one release whose groupings nest (the total; by sex; by sex × educ; any counts
whose grouping columns are subsets of one another) and count the same rows are joined into
*families* (:func:`families`, from the declaration and the queries only); each family is replaced
by its joint weighted least-squares fit, :mod:`snapdp.data.statistics.consistency_fit`, which also
states each fitted value's ±. :func:`open_bound` gives the counts of a consistent release bounds
their noise cannot reach, so that the noise is symmetric. Only released values enter
(post-processing: no privacy cost).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from fractions import Fraction

from msgspec import Struct
from msgspec.structs import replace

from snapdp.data.model.schema import Column
from snapdp.data.output.results import QueryResult
from snapdp.errors import ParameterError
from snapdp.mechanism import SnappingMechanism

__all__ = [
    "Counted",
    "apart",
    "check",
    "families",
    "holds_every_row",
    "make_consistent",
    "open_bound",
    "same_rows",
]


class Counted(Struct, frozen=True):
    """The rows a count query counts, as its declaration and its text fix them: its grouping
    columns and its row filter (a typed predicate, compared structurally; None: every row)."""

    columns: tuple[Column, ...]
    where: object = None


def holds_every_row(column: Column) -> bool:
    """Whether the declaration gives every row a cell of ``column``: nulls (and failed casts)
    imputed, and keys or bins that hold every value the cast can give (both booleans; bins from
    at most the least to above the greatest int64, or double, of the column's type). A text or
    date column, or integer keys, can always meet a value with no cell."""
    if column.nulls.action != "impute":
        return False
    if column.keys is not None:
        return column.type == "boolean" and len(column.keys) == 2
    if column.bins is None:
        return False
    low, high = column.bins[0], column.bins[-1]
    if column.type == "integer":
        return math.ceil(low) <= -(1 << 63) and math.ceil(high) > (1 << 63) - 1
    return _double(low) <= -sys.float_info.max and _double(high) == math.inf


def _double(x: Fraction) -> float:
    try:
        return float(x)
    except OverflowError:
        return math.inf if x > 0 else -math.inf


def _nested(x: Counted, y: Counted) -> bool:
    nx, ny = {c.name for c in x.columns}, {c.name for c in y.columns}
    return nx <= ny or ny <= nx


def same_rows(x: Counted, y: Counted) -> bool:
    """Whether two nested counts count the same rows, from the declaration and the queries
    only: the same row filter, and every column the finer one adds gives every row a cell."""
    if x.where != y.where or not _nested(x, y):
        return False
    coarse, fine = (x, y) if len(x.columns) <= len(y.columns) else (y, x)
    names = {c.name for c in coarse.columns}
    return all(holds_every_row(c) for c in fine.columns if c.name not in names)


def families(counts: Sequence[Counted | None]) -> list[list[int]]:
    """The families of nested count queries over the same rows: the connected components (of
    two or more queries) of :func:`same_rows`. ``None`` marks a query that takes no part (not a
    count). A column grouped under one name in two such queries must be the same declaration
    (same keys or bins)."""
    idx = [i for i, g in enumerate(counts) if g is not None]
    parent = {i: i for i in idx}

    def root(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for x in idx:
        for y in idx:
            gx, gy = counts[x], counts[y]
            assert gx is not None and gy is not None
            if x < y and same_rows(gx, gy):
                same = {c.name: c for c in gx.columns}
                for c in gy.columns:
                    if c.name in same and same[c.name] != c:
                        raise ParameterError(
                            f"consistent: two nested counts group by {c.name!r} with different "
                            "keys or bins; give them the same cells (docs/data.md, 'Tables that "
                            "add up')",
                            parameter="consistent",
                        )
                parent[root(y)] = root(x)
    out: dict[int, list[int]] = {}
    for i in idx:
        out.setdefault(root(i), []).append(i)
    return [m for m in out.values() if len(m) > 1]


def apart(counts: Sequence[Counted | None], found: Sequence[Sequence[int]]) -> dict[int, list[int]]:
    """For each count, the nested counts left out of its family because they count other rows
    (another row filter, or a grouping column that can drop rows)."""
    family_of = {i: k for k, f in enumerate(found) for i in f}
    out: dict[int, list[int]] = {}
    for x, gx in enumerate(counts):
        for y, gy in enumerate(counts):
            if x == y or gx is None or gy is None or not _nested(gx, gy):
                continue
            if family_of.get(x, -1 - x) != family_of.get(y, -1 - y):
                out.setdefault(x, []).append(y)
    return out


def check(groupings: Sequence[Counted | None], mode: str) -> list[list[int]]:
    """The families, after every refusal :func:`make_consistent` could raise (mismatched cells,
    too many finest cells, rounding without a finest count): public facts only, so a release
    checks them before anything is drawn or spent."""
    found = families(groupings)
    if found:  # the fit's module is imported by the releases that have a family (~2.5 ms)
        from snapdp.data.statistics.consistency_fit import MAX_CELLS, _chain, _union
    for family in found:
        cols = [g.columns for i in family if (g := groupings[i]) is not None]
        union = _union(cols)
        n = math.prod(c.n_cells for c in union)
        if n > MAX_CELLS:
            raise ParameterError(
                f"consistent: nested counts by {', '.join(c.name for c in union)} have {n:,} "
                f"cells in their finest cross-tabulation; at most {MAX_CELLS:,} can be fitted "
                "(docs/data.md, 'Tables that add up')",
                parameter="consistent",
            )
        if mode != "wls":
            _chain(cols)
    return found


# -- results -----------------------------------------------------------------------------------
def open_bound(per_cell: int | Fraction, cells: int, epsilon: Fraction, max_rows: int) -> int:
    """B such that a count mechanism with bounds [−B, B] never clamps a true count in
    [0, max_rows]: B = max_rows + ⌈1500·Δ·cells/ε⌉.

    Each cell gets noise no larger than at ε/cells and Δ = ``per_cell`` (the L1 calibration is
    only chosen when its noise is smaller), so λ′·Δ <= 2·Δ·cells/ε, Λ <= 2λ′, and one output's
    noise reaches at most (λ′·1074·ln 2 + Λ)·Δ < 1494·Δ·cells/ε (U* >= 2**-1074). A consistent
    release gives its counts these bounds: their noise is then symmetric, which the tail bound
    uses, and a small cell is not biased upwards by the clamp at 0 (docs/data.md, "Tables that
    add up"). :func:`member_of` checks the reach again from the mechanism's own parameters.
    """
    return max_rows + math.ceil(Fraction(1500) * Fraction(per_cell) * cells / epsilon)


def make_consistent(
    results: Sequence[QueryResult],
    groupings: Sequence[Counted | None],
    mechanisms: Sequence[SnappingMechanism | None],
    alpha: float,
    mode: str,
    max_rows: int,
) -> list[QueryResult]:
    """``results`` with every family of nested counts over the same rows replaced by its fit
    (module docstring), and a note on each count left out of a nested count's family;
    ``groupings[i]``/``mechanisms[i]``: query i's rows and count mechanism, or None when it is
    not a count. Reads released values only."""
    out = list(results)
    found = families(groupings)
    if found:
        from snapdp.data.statistics.consistency_fit import fit, member_of
    for family in found:
        members = []
        for i in family:
            cols, mech = groupings[i], mechanisms[i]
            assert cols is not None and mech is not None
            members.append(member_of(cols.columns, results[i], mech, max_rows))
        labels = "; ".join(results[i].label for i in family)
        f = fit(members, alpha, mode, max_rows, labels)
        how = {"wls": "", "nonnegative": ", then made non-negative top-down",
               "integer": ", then rounded to non-negative integers top-down"}[mode]  # fmt: skip
        note = (
            f"consistent with {labels}: fitted jointly by weighted least squares{how}, so margins "
            "equal the sums of their cells; post-processing of released values only (no privacy "
            f"cost); each ± bounds a combination of the {f.noises} released noises and assumes "
            "that contribution bounds drop no row (docs/data.md, 'Tables that add up')"
        )
        for k, i in enumerate(family):
            r = results[i]
            rows = tuple(
                replace(row, value=float(v), accuracy=float(a), independent=row.value)
                for row, v, a in zip(r.rows, f.values[k], f.accuracy[k], strict=True)
            )
            out[i] = replace(r, rows=rows, notes=(*r.notes, note))
    for i, others in apart(groupings, found).items():
        labels = "; ".join(results[j].label for j in others)
        note = (
            f"consistent: not fitted with {labels}: different rows (another row filter, or a "
            "grouping column whose declared keys or bins can miss a row; docs/data.md, 'Tables "
            "that add up')"
        )
        out[i] = replace(out[i], notes=(*out[i].notes, note))
    return out
