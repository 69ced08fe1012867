"""Quantiles, from a tree histogram per cell or by the exact exponential mechanism
(docs/data.md, "Quantiles" and "Quantiles by the exponential mechanism")."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from msgspec.structs import replace

from snapdp.data.engines.base import Aggregates
from snapdp.data.model.keys import Key
from snapdp.data.model.query import Query
from snapdp.data.model.schema import Column, Schema
from snapdp.data.output.results import ResultRow
from snapdp.data.statistics.bounding import Reach, reach
from snapdp.data.statistics.math import exponential_grid as expq
from snapdp.data.statistics.math import quantile_stages, quantile_values
from snapdp.data.statistics.math import quantile_tail as quantiles_tail
from snapdp.data.statistics.math import quantile_tree as quantiles
from snapdp.data.statistics.math.sum_bound import noise_kind
from snapdp.data.statistics.sensitivity import FixedPoint
from snapdp.data.statistics.types import (
    AccuracyStatement,
    Compiled,
    Kind,
    Noise,
    Noisy,
    Part,
    frac,
    noise_accuracy,
    numeric_column,
    up,
)
from snapdp.errors import ParameterError
from snapdp.ieee import double_at_least

__all__ = ["AUTO", "EXPONENTIAL", "TREE"]

_QUANTILE_NOTE = (
    "quantiles: each lies within one leaf of a value whose true rank is within the rank ± of "
    "p·n; the ± in values covers an interval, read from the released tree, that holds a "
    "p-quantile of the data (post-processing; docs/utility.md, 'The tree's value ±: one tail "
    "per edge')"
)


@functools.lru_cache(maxsize=64)
def _tree_spec(lower: Fraction, upper: Fraction, resolution: Fraction) -> Any:
    """The stats module's tree for these exact parameters (cached: a release compiles its
    queries more than once; the branching is pinned per number of leaves,
    :mod:`snapdp.data.statistics.math.tree_branching`)."""
    return quantiles.tree_spec(lower, upper, resolution)


def _bounded_column(query: Query, schema: Schema) -> Column:
    """The value column of quantiles: numeric, with declared bounds that fit."""
    col = numeric_column(query, schema)
    if col.lower is None or col.upper is None:
        raise ParameterError(
            f"column {col.name!r} needs declared bounds for quantiles", parameter="lower"
        )
    quantile_values.check_bounds(col)
    return col


def _compile_tree(
    query: Query,
    schema: Schema,
    epsilon: Fraction,
    groupings: tuple[Column, ...],
    by_cells: int,
    _reach: Reach,
) -> Compiled:
    """Quantiles from a tree histogram per cell (docs/data.md, "Quantiles").

    The engine counts rows per (cell, leaf): the value column binned at the leaf edges, the outer
    edges pushed to ±2^63 (integer) or ±2^1024 (decimal, past every double) so that a value below L
    counts in the first leaf and one above U in the last (the clamp). Level l of the trees of all
    cells is one part with ε/depth: a unit moves its nodes by L1 <= l1 rows in all (computed over
    cells × leaves) and touches at most min(cells touched, #nodes of the level over all cells) of
    them.
    """
    col = _bounded_column(query, schema)
    assert col.lower is not None and col.upper is not None
    qmod = quantiles
    span = col.upper - col.lower
    resolution = query.resolution
    if resolution is None:
        resolution = span / 1024
        if col.type == "integer":
            resolution = max(resolution, Fraction(1))
    tree = _tree_spec(col.lower, col.upper, resolution)
    edges = _type_edges(col, qmod.leaf_edges(tree))
    leaf = replace(col, lower=None, upper=None, keys=None, bins=edges)
    r = reach(schema, by_cells * tree.leaves)
    n = schema.max_rows
    cells = [min(r.cells, by_cells * tree.nodes(lv)) for lv in range(1, tree.depth + 1)]
    # Bounds the noise never reaches (each node gets ε/(depth·cells) or less noise at Δ = l1),
    # so that the clamp never binds and the tail bound of the ± holds (docs/data.md, "Quantiles").
    lo, hi = qmod.node_bounds(tree, epsilon / max(cells), r.l1, n)
    parts = tuple(
        Part(f"level{lv}", f"level{lv}", Fraction(1, tree.depth), r.l1, r.l1, lo, hi, cells[lv - 1])
        for lv in range(1, tree.depth + 1)
    )
    return Compiled(query, epsilon, groupings, None, None, parts, r, schema, leaf, tree)


def _compile_exponential(
    query: Query,
    schema: Schema,
    epsilon: Fraction,
    groupings: tuple[Column, ...],
    by_cells: int,
    _reach: Reach,
) -> Compiled:
    """Quantiles by the exact exponential mechanism (docs/data.md, "Quantiles by the exponential
    mechanism"): the engine counts rows per (cell, grid cell), the outer edges pushed out as for
    the tree (the clamp); three parts per probability with ε·wₚ/3 each, wₚ proportional to
    max(p, 1 − p): the point (its middle-rank loss with slack κ, docs/utility.md, "The point's
    loss: the middle rank") and two brackets aimed K rows below and above p·n (docs/utility.md,
    "The exponential mechanism's value ±"); loss sensitivity max(a, b − a)·l1 for p = a/b, every
    group at that ε
    (a unit's rows over the groups add up to at most l1, and each group's privacy loss grows
    with its own share)."""
    col = _bounded_column(query, schema)
    assert col.lower is not None and col.upper is not None
    grid = expq.quantile_grid(col.lower, col.upper, col.type == "integer", query.resolution)
    leaf = replace(col, lower=None, upper=None, keys=None, bins=_type_edges(col, grid.edges))
    r = reach(schema, by_cells * grid.cells)
    draws = 3 * len(query.quantiles)
    parts: list[Part] = []
    for i, (p, weight) in enumerate(
        zip(query.quantiles, expq.probability_weights(query.quantiles), strict=True)
    ):
        share = weight / 3
        sens = expq.sensitivity(p, r.l1)
        params = expq.parameters(epsilon * share, p, r.l1, grid.cells)  # refuses a small ε
        k = expq.bracket_offset(params, p, _BRACKET_ALPHA / draws)
        middle = expq.middle_slack(params, p, _CHOICE_ALPHA / draws)
        top = grid.cells - 1
        parts += [
            Part(f"q{i + 1}", "exponential", share, sens, sens, 0, top, 1, p, 0, middle),
            Part(f"q{i + 1}lo", "exponential", share, sens, sens, 0, top, 1, p, -k),
            Part(f"q{i + 1}hi", "exponential", share, sens, sens, 0, top, 1, p, k),
        ]
    return Compiled(query, epsilon, groupings, None, None, tuple(parts), r, schema, leaf, grid=grid)


#: The confidence the brackets' offset K is set for (99%): a statement at this confidence or
#: less states a value ± from the brackets; above it, the range.
_BRACKET_ALPHA = 0.01


def _type_edges(col: Column, edges: Sequence[Fraction]) -> tuple[Fraction, ...]:
    """``edges`` with the outer ones pushed to the ends of the column's type: ±2^63 (integer,
    compared exactly) or ±2^1024 (decimal, past every double: it compares as ±inf), so that a
    value below L counts in the first bin and one above U in the last (the clamp)."""
    big = Fraction(1 << 63) if col.type == "integer" else Fraction(1 << 1024)
    return (-big, *edges[1:-1], big)


def _quantile_accuracy(
    compiled: Compiled,
    noises: Sequence[Noise],
    confidence: float,
    alpha: float,
    notes: tuple[str, ...],
    with_targets: bool = True,
) -> AccuracyStatement:
    """Rank ± = 2·c, c the CDF ± at every leaf edge at once, and per probability the two-sided
    rₚ the rank ± uses (:func:`_bounds_at`, at α). The value interval's bounds, in two stages
    (docs/utility.md, "The tree's value ±: two stages"): r₁ two-sided at α₁ (``value_first``)
    and r₂ one tail per edge at α₂ over all the edges (``value_targets``, the largest a row
    reads its interval with). In values, before the release, a planning figure: leaf width +
    rank·(U − L)/n for n evenly spread rows (the release states the ± from the released tree,
    see :func:`_quantile_rows`)."""
    tree = compiled.tree
    probs = compiled.query.quantiles if with_targets else ()
    cdf, targets = _bounds_at(compiled, noises, alpha, probs, 2)
    alpha1, alpha2 = quantile_stages.split_alpha(alpha)
    first = _bounds_at(compiled, noises, alpha1, probs, 2)[1] if probs else []
    values = _bounds_at(compiled, noises, alpha2, probs, 1)[1] if probs else []
    span = float(tree.upper - tree.lower)
    return AccuracyStatement(
        compiled.query,
        compiled.epsilon,
        confidence,
        None,
        up(2 * cdf) * span,
        span,
        (*notes, _QUANTILE_NOTE),
        rank=up(2 * cdf),
        leaf_width=float(tree.leaf_width),
        targets=tuple(targets),
        value_targets=tuple(values),
        kinds=tuple(noise_kind(n.parameters()) for n in noises),
        alpha=alpha,
        value_first=tuple(first),
    )


def _bounds_at(
    compiled: Compiled,
    noises: Sequence[Noise],
    alpha: float,
    probs: Sequence[Fraction],
    sides: int,
) -> tuple[float, list[float]]:
    """At α: c, the CDF ± at every leaf edge at once, and per probability p a bound on the error
    D of C̃(t) − p·Ñ (least-squares CDF) at every edge t = 0..n, both sides (``sides`` = 2) or
    one tail per edge (1, docs/utility.md). Each the smallest of: W·(the largest node ± at
    α/T), T the nodes of one cell's tree (union bound; Wₚ for D); the Chernoff bound over the
    tree's noises (:func:`~snapdp.data.statistics.math.quantile_tail.chernoff_cdf`);
    :func:`~snapdp.data.statistics.math.quantile_tail.tree_tail_bound` (each node's whole error,
    its rounding averaged out, the clamp never binding: node bounds); for D also (1 + p)·c.
    Public parameters only, cached (docs/data.md, "Accuracy before spending")."""
    tree = compiled.tree
    nodes = sum(tree.nodes(lv) for lv in range(1, tree.depth + 1))
    params = [n.parameters() for n in noises]
    node = max(noise_accuracy(n, alpha / nodes) for n in noises)
    # every level's noise scale and grid (in rows) taken at their largest
    scale = max(p.scale * p.sensitivity for p in params)
    grid = max(p.grid * p.sensitivity for p in params)
    kinds = tuple(noise_kind(p) for p in params)
    b, depth = tree.branching, tree.depth
    cdf = min(up(tree.weight * node), _chernoff_cdf(tree, scale, grid, 1, alpha, nodes))
    cdf = min(cdf, quantiles_tail.tree_tail_bound(b, depth, kinds, alpha))
    out: list[float] = []
    for p in probs:
        w1 = quantiles_tail.target_weight_stats(b, depth, float(p))[0]
        tail = _chernoff_cdf(tree, scale, grid, 1, alpha, nodes, float(p), sides)
        tree_tail = quantiles_tail.tree_tail_bound(b, depth, kinds, alpha, float(p), sides == 1)
        out.append(min(up(w1 * node), tail, tree_tail, up((1 + float(p)) * cdf)))
    return cdf, out


def _exponential_accuracy(
    compiled: Compiled,
    noises: Sequence[Noise],
    confidence: float,
    alpha: float,
    notes: tuple[str, ...],
    with_targets: bool = True,
) -> AccuracyStatement:
    """Rank ± of each point (every draw at α/#draws): the released cell's true rank interval lies
    within it of p·n, for every n
    (:func:`snapdp.data.statistics.math.exponential_grid.rank_bound`). In
    values the release reads the ± from its two brackets (:func:`_exponential_rows`); before it,
    a planning figure: a cell + (point rank ± + K + bracket rank ±)·(U − L)/n for n evenly
    spread rows."""
    grid = compiled.grid
    each = alpha / len(noises)
    targets, spans = [], []
    for i in range(len(compiled.query.quantiles)):
        point, half, _holds = _ranks(compiled, i, each)
        targets.append(up(point))
        spans.append(point + half)
    rank = max(targets)
    span = double_at_least(grid.upper - grid.lower)
    note = (
        "quantiles (exponential mechanism, exact, pure ε): each released value is the middle of a "
        f"cell of {frac(grid.width)} whose true rank is within the rank ± of p·n, whatever n, "
        "moved into the interval of two bracketing draws; the ± in values is read from that "
        "interval (docs/utility.md, 'The exponential mechanism's value ±')"
    )
    return AccuracyStatement(
        compiled.query,
        compiled.epsilon,
        confidence,
        None,
        min(span, up(max(spans) * span)),
        span,
        (*notes, note),
        rank=rank,
        leaf_width=float(grid.width),
        targets=tuple(targets),
    )


def _ranks(compiled: Compiled, i: int, each: float) -> tuple[float, float, bool]:
    """For probability i at α = ``each`` per draw: the point's rank ±, the brackets' half-width
    in ranks (K + their rank ±) and whether their rank ± is below K (the brackets hold)."""
    p = compiled.query.quantiles[i]
    by_name = {part.name: part for part in compiled.parts}
    point, lo = by_name[f"q{i + 1}"], by_name[f"q{i + 1}lo"]
    cells, l1 = compiled.grid.cells, compiled.reach.l1

    # the point and its brackets: the same ε and sensitivity
    params = expq.parameters(compiled.epsilon * point.weight, p, l1, cells)
    bracket = expq.rank_bound(params, p, each)
    assert point.middle is not None
    own = expq.point_rank_bound(params, p, each, point.middle)
    k = -lo.offset
    return own, k + bracket, bracket < k


#: The quantile tail bound, cached per (tree, scale, grid, α, nodes, probability): a pure
#: function of public parameters that the planner, the plan's preview and the release each ask for.
_chernoff_cdf = functools.lru_cache(maxsize=4096)(quantiles_tail.chernoff_cdf)


def _exponential_rows(
    compiled: Compiled,
    statement: AccuracyStatement,
    noisy: Noisy,
    i: int,
    keys: tuple[Key | str, ...],
) -> list[ResultRow]:
    """Each probability's point moved into [the lower edge of the low bracket's cell, the top of
    the high bracket's cell], the ± in values its larger distance to an end (post-processing of
    the three draws; the range when the brackets do not hold at this confidence or cross)."""
    grid = compiled.grid
    assert statement.cap is not None
    bounds = (grid.lower, grid.upper)
    each = (1 - statement.confidence) / len(compiled.parts)
    rows = []
    for n, (p, rank) in enumerate(zip(compiled.query.quantiles, statement.targets, strict=True)):
        j, jlo, jhi = (int(noisy[f"q{n + 1}{s}"][i]) for s in ("", "lo", "hi"))
        lo, hi = grid.edges[jlo], grid.top(jhi)
        if not (_ranks(compiled, n, each)[2] and lo <= hi):
            value = quantile_values.released_value(grid.value(j), *bounds)
            whole = quantile_values.released_interval(grid.lower, grid.upper, *bounds)
            rows.append(ResultRow(keys, value, statement.cap, p, rank, interval=whole))
            continue  # the whole range: every row states an interval, whatever the draws
        value = quantile_values.released_value(min(max(grid.value(j), lo), hi), *bounds)
        acc = quantile_values.value_pm(value, lo, hi)
        interval = quantile_values.released_interval(lo, hi, *bounds)
        rows.append(ResultRow(keys, value, acc, p, rank, interval=interval))
    return rows


def _quantile_rows(
    compiled: Compiled,
    statement: AccuracyStatement,
    noisy: Noisy,
    i: int,
    keys: tuple[Key | str, ...],
) -> list[ResultRow]:
    tree = compiled.tree
    qmod = quantiles
    levels: list[Any] = []
    for lv in range(1, tree.depth + 1):
        width = tree.nodes(lv)
        levels.append(noisy[f"level{lv}"][i * width : (i + 1) * width])
    leaves = qmod.consistent_leaves(levels, tree)
    ls_cdf = qmod.least_squares_cdf(levels, tree)  # the value ± is read from it (before isotonic)
    probs = compiled.query.quantiles
    exact = qmod.exact_quantiles(leaves, tree, probs, float(ls_cdf[-1]))  # at p·Ñ
    if compiled.leaf is not None and compiled.leaf.type == "integer":  # from the declaration
        exact = tuple(qmod.integer_in_leaf(x, tree) for x in exact)
    assert statement.rank is not None
    cdf = statement.rank / 2  # the CDF ± at every edge at once (the rank ± is 2·cdf)
    rows = []
    bounds = (tree.lower, tree.upper)
    integers = compiled.leaf is not None and compiled.leaf.type == "integer"
    integers &= tree.lower.denominator == tree.upper.denominator == 1  # from the declaration
    assert statement.alpha is not None
    stages = zip(statement.targets, statement.value_first, statement.value_targets, strict=True)
    for p, x, (target, first, second) in zip(probs, exact, stages, strict=True):
        radius = quantile_stages.value_radius(
            ls_cdf, tree.branching, tree.depth, statement.kinds, statement.alpha, float(p),
            first, second,
        )  # fmt: skip
        lo, hi = qmod.value_interval(ls_cdf, tree, p, radius)  # exact leaf edges
        if integers:  # a p-quantile of integers lies at an integer (docs/utility.md)
            lo, hi = quantile_values.integer_interval(lo, hi, tree.upper)
        if lo > hi:  # only when the value claim failed (probability <= α): state the bounds
            lo, hi = tree.lower, tree.upper
        # moved into [lo, hi] (only toward every p-quantile there), inside the bounds as
        # released; the ± covers the rounding (docs/data.md; docs/utility.md, "Quartiles at p·Ñ")
        v = quantile_values.released_value(min(max(x, lo), hi), *bounds)
        acc = quantile_values.value_pm(v, lo, hi)
        rank = quantiles_tail.released_rank(float(p), cdf, target)  # (1 + p)·cdf, or less
        interval = quantile_values.released_interval(lo, hi, *bounds)
        rows.append(ResultRow(keys, v, acc, p, rank, interval=interval))
    return rows


def _tree_inputs(
    compiled: Compiled, aggregates: Aggregates, value_index: int | None
) -> dict[str, list[int | Fraction]]:
    """Each level's node counts per cell, summed exactly from the engine's leaf counts."""
    tree = compiled.tree
    per_cell = [
        quantiles.level_counts(aggregates.rows[i * tree.leaves : (i + 1) * tree.leaves], tree)
        for i in range(compiled.n_cells)
    ]
    return {
        f"level{lv}": [x for levels in per_cell for x in levels[lv - 1]]
        for lv in range(1, tree.depth + 1)
    }


def _grid_inputs(
    compiled: Compiled, aggregates: Aggregates, value_index: int | None
) -> dict[str, list[int | Fraction]]:
    """Every part (one per probability) reads the rows per (cell, grid cell)."""
    return {part.name: list(aggregates.rows) for part in compiled.parts}


def _rows_unit(part: Part, fp: FixedPoint | None) -> str:
    return "1 row"


TREE = Kind(_compile_tree, _quantile_accuracy, _tree_inputs, _quantile_rows, _rows_unit)
EXPONENTIAL = Kind(
    _compile_exponential, _exponential_accuracy, _grid_inputs, _exponential_rows, _rows_unit
)


_CHOICE_ALPHA = 0.05  # the confidence (95%) the two methods' figures are compared at


def _compile_auto(
    query: Query,
    schema: Schema,
    epsilon: Fraction,
    groupings: tuple[Column, ...],
    by_cells: int,
    r: Reach,
) -> Compiled:
    """The method with the smaller planned ± at this ε (public parameters only): both compiled,
    then compared by the half-width in ranks of the interval each reads its value ± from — the
    tree's rₚ + c (the CDF ± c, its value interval's bound rₚ), the exponential mechanism's
    K + its brackets' rank ± — at 95%, the largest over the probabilities (docs/utility.md,
    "Quantiles: the tree or the exponential mechanism")."""
    tree = _compile_tree(query, schema, epsilon, groupings, by_cells, r)
    try:
        expo = _compile_exponential(query, schema, epsilon, groupings, by_cells, r)
    except ParameterError:  # too many cells, or too small an ε per draw: the tree
        return tree
    return expo if _exponential_half(expo) < _tree_half(tree) else tree


def _tree_half(compiled: Compiled) -> float:
    """max over p of rₚ + c at 95% (rₚ one tail per edge over all the edges at α: the one-stage
    figure, kept so that the same queries take the same method), each level's noise composed
    over the cells a unit touches
    (the planner's figure, without the L1 calibration; certificates presumed: a comparison of
    public figures, never a statement, so a draft plan certifies nothing)."""
    noises = [
        Noise(part, compiled.epsilon * part.weight / (part.cells or 1), part.per_cell,
              part.cells or 1, False, presumed=True)
        for part in compiled.parts
    ]  # fmt: skip
    probs = compiled.query.quantiles
    cdf, values = _bounds_at(compiled, noises, _CHOICE_ALPHA, probs, 1)
    return max(t + up(2 * cdf) / 2 for t in values)


def _exponential_half(compiled: Compiled) -> float:
    """max over p of K + the brackets' rank ± at 95% (each of the 3·#p draws at α/(3·#p))."""
    each = _CHOICE_ALPHA / len(compiled.parts)
    return max(_ranks(compiled, i, each)[1] for i in range(len(compiled.query.quantiles)))


def _chosen(compiled: Compiled) -> Kind:
    return TREE if compiled.grid is None else EXPONENTIAL


def _auto_accuracy(
    compiled: Compiled,
    noises: Sequence[Noise],
    confidence: float,
    alpha: float,
    notes: tuple[str, ...],
    with_targets: bool = True,
) -> AccuracyStatement:
    """The chosen method's statement, with a note naming it."""
    which = "the tree" if compiled.grid is None else "the exponential mechanism"
    note = (
        f"quantile method: {which}, chosen for its smaller planned ± at this ε (set `method` to "
        "choose; docs/utility.md, 'Quantiles: the tree or the exponential mechanism')"
    )
    kind = _chosen(compiled)
    return kind.accuracy(compiled, noises, confidence, alpha, (*notes, note), with_targets)


def _auto_inputs(
    compiled: Compiled, aggregates: Aggregates, value_index: int | None
) -> dict[str, list[int | Fraction]]:
    return _chosen(compiled).inputs(compiled, aggregates, value_index)


def _auto_rows(
    compiled: Compiled,
    statement: AccuracyStatement,
    noisy: Noisy,
    i: int,
    keys: tuple[Key | str, ...],
) -> list[ResultRow]:
    return _chosen(compiled).rows(compiled, statement, noisy, i, keys)


AUTO = Kind(_compile_auto, _auto_accuracy, _auto_inputs, _auto_rows, _rows_unit)
"""The default: the tree or the exponential mechanism, whichever plans the smaller ± at the
query's ε (:func:`_compile_auto`)."""
