"""Two-phase releases: the ε of a target whose ± depends on a private group size is chosen from
the released noisy counts, under a cap reserved in advance (DESIGN §8.7; docs/plans.md,
"Two-phase targets").

A ratio mean's ± is (a_Σ + M·a_n)/ñ and a variance's (a_Σw² + 2W·a_Σw + 3W²·a_n)/(4ñ), with ñ
the noisy count of the cell (:mod:`snapdp.data.statistics`). The count is part of the answer.
So a plan releases it first (**phase 1**, at ε₁ = cap·w/2 rounded down to two digits, w the
count's usual share of the query's ε), and then (**phase 2**) gives the other parts the
smallest ε₂ for which the ± the release states, at the smallest released count, meets the
target — at most cap − ε₁. The stated
± already holds at the stated confidence whatever ñ is (the count's error is its M·a_n term), so
the target is met, with that confidence, whenever ε₂ ≤ cap − ε₁ suffices; otherwise phase 2
spends cap − ε₁ and the result says the target was missed and what it would have needed.
Quantiles release the top level of their tree first (its nodes add up to the rows of the cell;
see :func:`phase_one_epsilon`) and plan the other levels for a lower confidence bound of the rows
(:func:`smallest_count`).

**Privacy.** ε₂ is a function of the released phase-1 values and public parameters only, and
ε₁ + ε₂ ≤ cap on every outcome. For pure ε-DP mechanisms chosen adaptively, the privacy loss of
the whole transcript is the sum of each step's loss, each bounded by the ε chosen from the
previous outputs; a sum bounded by the cap on every path is cap-DP (the basic-composition privacy
filter of Rogers, Roth, Ullman and Vadhan, 2016, which also sums the δ of approximate-DP steps).
The ledger reserves the cap before any noise is drawn
(:meth:`snapdp.data.budget.ledger.Ledger.reserve`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from decimal import ROUND_FLOOR, Decimal, localcontext
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from msgspec import Struct
from msgspec.structs import replace

from snapdp.data import statistics
from snapdp.data.model.schema import Schema
from snapdp.data.model.workload import alpha_of
from snapdp.data.output.results import QueryResult
from snapdp.data.planner.search import EPS_MAX, eps_text, num, smallest_epsilon
from snapdp.data.statistics import AccuracyStatement, Compiled, Noise, Part
from snapdp.errors import ParameterError
from snapdp.mechanism import SnappingMechanism

if TYPE_CHECKING:
    from snapdp.data.model.workload import PlannedQuery

__all__ = [
    "TwoPhase",
    "first_phase",
    "phase_one_epsilon",
    "phase_two_epsilon",
    "plan_two_phase",
    "smallest_count",
    "split_noises",
    "split_statement",
    "with_target",
]


class TwoPhase(Struct, frozen=True):
    """How a two-phase query spends: at most ``cap``; ``phase1`` on its counts; its target is met
    for every cell whose noisy count is at least ``floor``; for groups of ``rows`` rows it spends
    ``example`` in all (None: not even the cap meets the target for them)."""

    cap: Fraction
    phase1: Fraction
    floor: int | None
    rows: int | None
    example: Fraction | None


def first_phase(part: Part) -> bool:
    """Whether a part is released in phase 1: a mean's or variance's count, a tree's top level
    (whose nodes add up to the rows of the cell)."""
    return part.source == "count" or part.name == "level1"


def phase_one_epsilon(compiled: Compiled, cap: Fraction) -> Fraction:
    """ε₁, rounded down to two significant digits (a short decimal): half the share of ``cap``
    a mean's or variance's count would get in one phase; a quantile tree's top level gets its
    whole share (the largest node ± of any level bounds the rank ±, so a smaller one could not
    be made up for by the other levels); all of ``cap`` for a tree of one level."""
    weight = sum((p.weight for p in compiled.parts if first_phase(p)), Fraction(0))
    if weight == 0:
        raise ParameterError(
            f"{compiled.query.label} has no count to release first", parameter="group_size"
        )
    if all(first_phase(p) for p in compiled.parts):
        return cap
    exact = cap * weight if compiled.tree is not None else cap * weight / 2
    with localcontext() as ctx:
        ctx.prec = 2
        ctx.rounding = ROUND_FLOOR
        short = Fraction(Decimal(exact.numerator) / Decimal(exact.denominator))
    return short if short > 0 else exact


def _split(compiled: Compiled, eps1: Fraction, eps2: Fraction) -> tuple[Compiled, Compiled]:
    first = [p for p in compiled.parts if first_phase(p)]
    total1 = sum((p.weight for p in first), Fraction(0))
    count = tuple(replace(p, weight=p.weight / total1) for p in first)
    rest = [p for p in compiled.parts if not first_phase(p)]
    total = sum((p.weight for p in rest), Fraction(0))
    others = tuple(replace(p, weight=p.weight / total) for p in rest)
    return replace(compiled, epsilon=eps1, parts=count), replace(
        compiled, epsilon=eps2, parts=others
    )


def split_noises(
    compiled: Compiled, eps1: Fraction, eps2: Fraction, *, presume_certified: bool = False
) -> tuple[Noise, ...]:
    """The calibrated noise of every part of ``compiled`` (in its order) with the count parts at
    ``eps1`` and the others sharing ``eps2`` in their usual proportions."""
    one, two = _split(compiled, eps1, eps2)
    by_name = {
        n.part.name: n
        for c in (one, two)
        for n in statistics.calibrate(c, presume_certified=presume_certified)
    }
    return tuple(by_name[p.name] for p in compiled.parts)


@functools.lru_cache(maxsize=4096)
def split_statement(
    schema: Schema,
    query: Any,
    eps1: Fraction,
    eps2: Fraction,
    confidence: float,
    presume_certified: bool = False,
) -> AccuracyStatement:
    """What the release states for ``query`` with its counts at ``eps1`` and the rest at ``eps2``
    (cached: a pure function of public parameters), without a quantile's per-probability
    ``targets`` (the planner reads :meth:`~AccuracyStatement.at` and the per-count form only)."""
    compiled = statistics.compile_query(query, schema, eps1 + eps2)
    noises = split_noises(compiled, eps1, eps2, presume_certified=presume_certified)
    alpha = alpha_of(confidence)
    return statistics.accuracy_of(compiled, noises, confidence, alpha, targets=False)


@functools.lru_cache(maxsize=4096)
def _one_phase(schema: Schema, query: Any, eps: Fraction, confidence: float) -> AccuracyStatement:
    """What a one-phase release of ``query`` at ``eps`` states (cached)."""
    compiled = statistics.compile_query(query, schema, eps)
    alpha = alpha_of(confidence)
    noises = statistics.calibrate(compiled)
    return statistics.accuracy_of(compiled, noises, confidence, alpha, targets=False)


def _smallest(accuracy: Any, target: Fraction, limit: Fraction) -> Fraction | None:
    """The smallest ε in (0, limit] (to 1/400, rounded up to a short decimal) with
    accuracy(ε) ≤ target, or None when even ``limit`` misses it."""
    if Fraction(accuracy(limit)) > target:
        return None
    try:
        found = smallest_epsilon(accuracy, target)
    except ParameterError:
        return None
    return min(found, limit)


def phase_two_epsilon(
    schema: Schema,
    pq: PlannedQuery,
    eps1: Fraction,
    left: Fraction,
    n: float,
    *,
    presume_certified: bool = False,
) -> tuple[Fraction, Fraction | None]:
    """(ε₂ to spend, ε₂ the target needs or None) for the smallest noisy count ``n``: the
    smallest ε₂ ≤ ``left`` whose stated ± at n meets the target, else ``left`` (best effort).
    ``presume_certified``: a planning draft (never for a release)."""
    target = pq.accuracy
    assert target is not None
    if not left > 0:  # a tree of one level: all of it was phase 1
        return Fraction(0), None
    if not n > 0:
        return left, None

    def at(eps2: Fraction, presume: bool) -> float:
        return split_statement(schema, pq.query, eps1, eps2, pq.confidence, presume).at(n)

    certify = not presume_certified
    found = _grid_smallest(lambda e: at(e, True), target, left)
    if found is not None:
        found = _on_grid(lambda e: at(e, not certify), target, found, left)
    if found is not None:
        return found, found
    needed = _smallest(lambda e: at(e, not certify), target, EPS_MAX)
    return left, needed


#: The public grid phase two's ε is chosen on (docs/plans.md, "Two-phase targets"): 25 round
#: values per decade, each step at most 14% (1, 1.1, …, 2, 2.2, 2.5, …, 5, 5.5, …, 8, 9 times a
#: power of ten). ε₂ depends on the released counts; on this grid it takes few values, so the
#: certificates of its mechanisms are few, reused by later runs and can ship with the package.
GRID = tuple(
    Fraction(m, 10)
    for m in (10, 11, 12, 13, 14, 15, 16, 18, 20, 22, 25, 28, 30, 32, 35, 40, 45, 50, 55, 60, 65,
              70, 75, 80, 90)
)  # fmt: skip


def _grid_position(eps: Fraction) -> tuple[int, Fraction]:
    """(i, scale) with ``GRID[i] * scale`` the smallest grid value ≥ ``eps`` > 0."""
    scale = Fraction(10) ** (len(str(eps.numerator)) - len(str(eps.denominator)) - 1)
    while eps > scale * 10:
        scale *= 10
    while eps <= scale:
        scale /= 10
    i = next((i for i, g in enumerate(GRID) if g * scale >= eps), None)
    return (0, 10 * scale) if i is None else (i, scale)


def grid_up(eps: Fraction) -> Fraction:
    """The smallest value of :data:`GRID` (times a power of ten) that is ≥ ``eps`` > 0."""
    i, scale = _grid_position(eps)
    return GRID[i] * scale


@functools.lru_cache(maxsize=256)
def grid_values(low: Fraction, high: Fraction) -> tuple[Fraction, ...]:
    """Every grid value in [low, high], ascending (``tools/make_certificates.py``; cached: the
    planner asks for the same stretch of the grid again with each ε₂ it checks)."""
    out: list[Fraction] = []
    i, scale = _grid_position(low)
    while (e := GRID[i] * scale) <= high:
        out.append(e)
        i += 1
        if i == len(GRID):
            i, scale = 0, scale * 10
    return tuple(out)


#: How far below the limit :func:`_grid_smallest` bisects the grid (four decades, ~100 values).
_GRID_REACH = Fraction(1, 10**4)


def _grid_smallest(
    at: Callable[[Fraction], float], target: Fraction, limit: Fraction
) -> Fraction | None:
    """The smallest grid value ≤ ``limit`` whose ``at`` meets ``target`` (or ``limit`` when only
    it does), by bisection over the grid (~8 evaluations); None when ``limit`` misses. Below
    four decades under the limit it hands over to :func:`_smallest`."""
    if Fraction(at(limit)) > target:
        return None
    values = grid_values(limit * _GRID_REACH, limit)
    if not values or Fraction(at(values[0])) <= target:
        return _smallest(at, target, limit)
    return _first_meeting(at, target, values[1:], limit)  # values[0] misses


def _first_meeting(
    at: Callable[[Fraction], float], target: Fraction, values: Sequence[Fraction], limit: Fraction
) -> Fraction:
    """The first of the ascending grid ``values`` whose ``at`` meets ``target``, else ``limit``
    (known to meet), by bisection: ``at`` falls as ε grows."""
    lo, hi = -1, len(values)  # values[hi] (or the limit) meets
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if Fraction(at(values[mid])) <= target:
            hi = mid
        else:
            lo = mid
    return values[hi] if hi < len(values) else limit


def _on_grid(
    at: Callable[[Fraction], float], target: Fraction, found: Fraction, limit: Fraction
) -> Fraction | None:
    """The smallest grid value ≥ ``found`` whose ``at`` meets ``target``, or ``limit`` itself when
    that grid value would pass it and ``limit`` meets it (ε₂ then takes the plan's public
    ``cap − ε₁``); None when neither meets it. Rounding up keeps the target; the cap bounds it.
    After four steps up it bisects the rest of the grid below ``limit``: it never leaves it."""
    eps = grid_up(found)
    for _ in range(4):  # a certified ± misses a presumed one's target by a hair, if at all
        if eps >= limit:
            return limit if Fraction(at(limit)) <= target else None
        if Fraction(at(eps)) <= target:
            return eps
        eps = grid_up(eps * Fraction(1001, 1000))
    if Fraction(at(limit)) > target:
        return None
    return _first_meeting(at, target, [v for v in grid_values(eps, limit) if v > eps], limit)


def _smallest_checked(
    at: Callable[[Fraction, bool], float], target: Fraction, limit: Fraction, certify: bool
) -> Fraction | None:
    """:func:`_smallest` of ``at(ε, presume)`` searched with certification presumed (cheap);
    with ``certify``, the ε found is checked with the certified mechanisms and, if it misses
    there, searched again certified."""
    found = _smallest(lambda e: at(e, True), target, limit)
    if certify and found is not None and Fraction(at(found, False)) > target:
        found = _smallest(lambda e: at(e, False), target, limit)
    return found


def _floor(statement: AccuracyStatement, target: Fraction) -> int | None:
    """The smallest count n with statement.at(n) ≤ target (None: no n)."""
    per, width = statement.per_count, statement.leaf_width or 0.0
    if per is None:
        return 1
    room = float(target) - width
    if not room > 0:
        return None
    if statement.query.statistic in ("std", "std_samp"):
        room = room * room
    n = max(1, math.ceil(per / room))
    while Fraction(statement.at(n)) > target:
        n = max(n + 1, math.ceil(n * 1.0001))
        if n > 1 << 62:
            return None
    return n


def plan_two_phase(
    schema: Schema, pq: PlannedQuery, cap: Fraction, presume_certified: bool = False
) -> TwoPhase:
    """The plan of a two-phase query under ``cap`` (reads no data; cached). The floor uses real
    L1 certificates (unless ``presume_certified``); the example ε for ``rows`` rows presumes
    them (a figure: the run chooses its ε with real ones)."""
    return _plan_two_phase(schema, pq, cap, presume_certified)


@functools.lru_cache(maxsize=1024)
def _plan_two_phase(
    schema: Schema, pq: PlannedQuery, cap: Fraction, presume_certified: bool
) -> TwoPhase:
    target = pq.accuracy
    assert target is not None
    compiled = statistics.compile_query(pq.query, schema, cap)
    eps1 = phase_one_epsilon(compiled, cap)
    full = split_statement(schema, pq.query, eps1, cap - eps1, pq.confidence, presume_certified)
    floor = _floor(full, target)
    if floor is None:
        return TwoPhase(cap, eps1, None, None, None)
    rows = _round_rows(10 * floor)
    eps2, needed = phase_two_epsilon(schema, pq, eps1, cap - eps1, rows, presume_certified=True)
    return TwoPhase(cap, eps1, floor, rows, None if needed is None else eps1 + eps2)


def _round_rows(n: int) -> int:
    """n rounded up to one significant digit (12,345 → 20,000)."""
    scale: int = 10 ** (len(str(n)) - 1)
    return -(-n // scale) * scale


# -- the run (used by snapdp.data.release.session) ----------------------------------------
def smallest_count(
    compiled: Compiled,
    noises: Sequence[Noise],
    noisy: dict[str, npt.NDArray[np.float64]],
    alpha: float,
) -> float:
    """The smallest released count over the cells: a mean's or variance's noisy count (the
    denominator of its stated ±), or for quantiles a lower confidence bound of the rows of the
    cell from the top level of its tree (its b nodes' sum, less b times a node's ± at α; the
    stated ± divides by the total of the consistent leaves, which the top level estimates)."""
    if "count" in noisy:
        counts = noisy["count"]
        return float(np.min(counts)) if len(counts) else 0.0
    level = noisy["level1"]
    cells = max(1, compiled.n_cells)
    width = len(level) // cells
    if width == 0:
        return 0.0
    totals = level.reshape(cells, width).sum(axis=1)
    top = next(n for n in noises if n.part.name == "level1")
    node = SnappingMechanism(top.epsilon, top.sensitivity, top.part.lower, top.part.upper)
    return float(np.min(totals)) - width * node.accuracy(alpha)


def with_target(
    result: QueryResult,
    pq: PlannedQuery,
    allowed: Fraction,
    noisy: dict[str, npt.NDArray[np.float64]],
    schema: Schema,
    phase_two: tuple[float, Compiled] | None = None,
) -> QueryResult:
    """The result with ``target_met`` and, when missed, what the target would have needed (from
    the released values and public parameters only). ``phase_two``: for a two-phase query, the
    count its ε₂ was chosen for and the query; the note then gives the smallest cap whose two
    phases (ε₁ from the cap, as the plan splits it) meet the target at that count, so it
    compares like with like: the cap needed against the cap allowed."""
    target = pq.accuracy
    if target is None:
        return result
    worst = max((r.accuracy for r in result.rows), default=0.0)
    if Fraction(worst) <= target:
        return replace(result, target_met=True, target_note="target met")
    if phase_two is not None:
        n, compiled = phase_two
        needed = _cap_needed(schema, pq, compiled, n, allowed)
        return replace(result, target_met=False, target_note=_missed(worst, n, needed, allowed))
    counts = noisy.get("count")
    if counts is None and result.query.statistic == "quantiles":
        counts = np.array([_tree_total(noisy, result, k) for k in range(_cells(result))])
    n = float(np.min(counts)) if counts is not None and len(counts) else 0.0
    # what the whole query would need, planned afresh for a group of ~n rows (one phase)
    needed = None
    if n >= 1:
        rows = max(1, int(n))

        def at(e: Fraction) -> float:
            return float(_one_phase(schema, pq.query, e, pq.confidence).at(rows))

        needed = _smallest(at, target, EPS_MAX)
    return replace(result, target_met=False, target_note=_missed(worst, n, needed, allowed))


def _cap_needed(
    schema: Schema, pq: PlannedQuery, compiled: Compiled, n: float, allowed: Fraction
) -> Fraction | None:
    """The smallest cap in (``allowed``, 2^20] whose two phases meet ``pq``'s target for a group
    of ``n`` rows, or None (:func:`_smallest_checked`, certified)."""
    target = pq.accuracy
    assert target is not None
    if not n > 0:
        return None

    def at(cap: Fraction, presume: bool) -> float:
        cap = max(cap, allowed)  # a missed target needs more than was allowed
        e1 = phase_one_epsilon(compiled, cap)
        return split_statement(schema, pq.query, e1, cap - e1, pq.confidence, presume).at(n)

    found = _smallest_checked(at, target, EPS_MAX, certify=True)
    return None if found is None else max(found, allowed)


def _missed(worst: float, n: float, needed: Fraction | None, allowed: Fraction) -> str:
    need = "no ε up to 2^20" if needed is None else f"ε {eps_text(needed)}"
    return (
        f"target missed: ±{num(worst)}; a group of ~{max(0, round(n)):,} rows would need "
        f"{need}, only {eps_text(allowed)} was left"
    )


def _cells(result: QueryResult) -> int:
    return max(1, len({r.keys for r in result.rows}))


def _tree_total(noisy: dict[str, npt.NDArray[np.float64]], result: QueryResult, cell: int) -> float:
    level = noisy.get("level1")
    if level is None:
        return 0.0
    width = len(level) // _cells(result)
    return float(np.sum(level[cell * width : (cell + 1) * width]))
