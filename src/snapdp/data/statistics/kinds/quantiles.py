"""Quantiles, from a tree histogram per cell or by the exact exponential mechanism
(docs/data.md, "Quantiles" and "Quantiles by the exponential mechanism")."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import replace
from fractions import Fraction
from typing import Any

from snapdp.data import exponential_quantiles as expq
from snapdp.data import quantile_values, quantiles
from snapdp.data.engines.base import Aggregates
from snapdp.data.model.keys import Key
from snapdp.data.model.query import Query
from snapdp.data.model.schema import Column, Schema
from snapdp.data.output.results import ResultRow
from snapdp.data.statistics.bounding import Reach, reach
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
from snapdp.parameters import SnappingParameters

__all__ = ["EXPONENTIAL", "TREE"]

_QUANTILE_NOTE = (
    "quantiles: each lies within one leaf of a value whose true rank is within the rank ± of "
    "p·n; the ± in values covers every value whose released rank is within that rank ± of "
    "p·ñ, read from the released tree (post-processing; docs/data.md, 'Quantiles')"
)


@functools.lru_cache(maxsize=64)
def _tree_spec(lower: Fraction, upper: Fraction, resolution: Fraction) -> Any:
    """The stats module's tree for these exact parameters (cached: choosing it takes seconds for
    thousands of leaves, and a release compiles its queries more than once)."""
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
    edges = list(qmod.leaf_edges(tree))
    # Every value of the type lies in [−big, big): int64 for integers (compared exactly), finite
    # doubles otherwise (2^1024 is past the largest double: its edge compares as ±inf).
    big = Fraction(1 << 63) if col.type == "integer" else Fraction(1 << 1024)
    edges[0], edges[-1] = -big, big
    leaf = replace(col, lower=None, upper=None, keys=None, bins=tuple(edges))
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
    the tree (the clamp); one part per probability with ε/#probabilities, loss sensitivity
    max(a, b − a)·l1 for p = a/b, every group at that ε (a unit's rows over the groups add up
    to at most l1, and each group's privacy loss grows with its own share)."""
    col = _bounded_column(query, schema)
    assert col.lower is not None and col.upper is not None
    grid = expq.quantile_grid(col.lower, col.upper, col.type == "integer", query.resolution)
    edges = list(grid.edges)
    big = Fraction(1 << 63) if col.type == "integer" else Fraction(1 << 1024)
    edges[0], edges[-1] = -big, big
    leaf = replace(col, lower=None, upper=None, keys=None, bins=tuple(edges))
    r = reach(schema, by_cells * grid.cells)
    share = Fraction(1, len(query.quantiles))
    parts = []
    for i, p in enumerate(query.quantiles):
        sens = expq.sensitivity(p, r.l1)
        expq.parameters(epsilon * share, p, r.l1, grid.cells)  # refuses a too small ε, by name
        parts.append(Part(f"q{i + 1}", "exponential", share, sens, sens, 0, grid.cells - 1, 1, p))
    return Compiled(query, epsilon, groupings, None, None, tuple(parts), r, schema, leaf, grid=grid)


def _quantile_accuracy(
    compiled: Compiled,
    noises: Sequence[Noise],
    confidence: float,
    alpha: float,
    notes: tuple[str, ...],
    with_targets: bool = True,
) -> AccuracyStatement:
    """Rank ± = 2·c, c the CDF ± at every leaf edge at once: the smaller of W·(the largest node
    ± at α/T), T the nodes of one cell's tree (union bound), and the tail bound over the tree's
    noises (:func:`snapdp.data.quantiles.chernoff_cdf`); in values, before the release, a
    planning figure: leaf width + rank·(U − L)/n for n evenly spread rows (the release states
    the ± from the released tree, see :func:`_quantile_rows`)."""
    tree = compiled.tree
    nodes = sum(tree.nodes(lv) for lv in range(1, tree.depth + 1))
    params = [n.parameters() for n in noises]
    node = max(noise_accuracy(n, alpha / nodes) for n in noises)
    cdf = up(tree.weight * node)
    # the clamp never binds (node bounds): the tail bound over the tree's noises applies, with
    # every level's noise scale and grid (in rows) taken at their largest
    scale = max(p.scale * p.sensitivity for p in params)
    grid = max(p.grid * p.sensitivity for p in params)
    cdf = min(cdf, _chernoff_cdf(tree, scale, grid, 1, alpha, nodes))
    # per probability p: a bound on the error of C̃(t) − p·Ñ at every edge (least-squares CDF)
    targets = []
    for p in compiled.query.quantiles if with_targets else ():
        w1 = quantiles.target_weight_stats(tree.branching, tree.depth, float(p))[0]
        tail = _chernoff_cdf(tree, scale, grid, 1, alpha, nodes, float(p))
        targets.append(min(up(w1 * node), tail, up((1 + float(p)) * cdf)))

    cdf, targets = _tighter_tail(compiled, params, alpha, cdf, targets)
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
    )


def _tighter_tail(
    compiled: Compiled,
    params: Sequence[SnappingParameters],
    alpha: float,
    cdf: float,
    targets: list[float],
) -> tuple[float, list[float]]:
    """The CDF ± c and the per-probability ± rₚ of :func:`_quantile_accuracy`, each lowered to
    :func:`snapdp.data.quantiles.tree_tail_bound` when that is smaller: each node's whole error
    (noise and snapping) with its rounding averaged out, the clamp never binding (node bounds).
    Public parameters only; cached in the quantiles module (docs/data.md, "Accuracy before
    spending", *Averaged*)."""
    tree = compiled.tree
    kinds = tuple(noise_kind(p) for p in params)
    cdf = min(cdf, quantiles.tree_tail_bound(tree.branching, tree.depth, kinds, alpha))
    probs = compiled.query.quantiles
    out = []
    for i, target in enumerate(targets):  # empty when the caller asked for no targets
        p = float(probs[i])
        tail = quantiles.tree_tail_bound(tree.branching, tree.depth, kinds, alpha, p)
        out.append(min(target, tail, up((1 + p) * cdf)))
    return cdf, out


def _exponential_accuracy(
    compiled: Compiled,
    noises: Sequence[Noise],
    confidence: float,
    alpha: float,
    notes: tuple[str, ...],
    with_targets: bool = True,
) -> AccuracyStatement:
    """Rank ± (every probability at once: each at α/#probabilities): the released value is the
    middle of a grid cell whose true rank interval lies within it of p·n, for every n
    (:func:`snapdp.data.exponential_quantiles.rank_bound`). In values: a planning figure, half
    a cell + rank·(U − L)/n for n evenly spread rows; the release can state no more."""
    grid = compiled.grid
    each = alpha / len(noises)
    targets = []
    for n, p in zip(noises, compiled.query.quantiles, strict=True):
        params = expq.parameters(n.epsilon, p, compiled.reach.l1, grid.cells)
        targets.append(up(expq.rank_bound(params, p, each)))
    rank = max(targets)
    span = double_at_least(grid.upper - grid.lower)  # the ± in values covers the whole range
    note = (
        "quantiles (exponential mechanism, exact, pure ε): each released value is the middle of a "
        f"cell of {frac(grid.width)} whose true rank is within the rank ± of p·n, whatever n; "
        "the ± in values is the range (no count is released; docs/data.md, 'Quantiles by the "
        "exponential mechanism')"
    )
    return AccuracyStatement(
        compiled.query,
        compiled.epsilon,
        confidence,
        None,
        up(rank * span),
        span,
        (*notes, note),
        rank=rank,
        leaf_width=float(grid.half_width),
        targets=tuple(targets),
    )


#: The quantile tail bound, cached per (tree, scale, grid, α, nodes, probability): a pure
#: function of public parameters that the planner, the plan's preview and the release each ask for.
_chernoff_cdf = functools.lru_cache(maxsize=4096)(quantiles.chernoff_cdf)


def _exponential_rows(
    compiled: Compiled,
    statement: AccuracyStatement,
    noisy: Noisy,
    i: int,
    keys: tuple[Key | str, ...],
) -> list[ResultRow]:
    """The released grid cells' values; ± in values: the range (nothing else is released); the
    rank ± per probability."""
    grid = compiled.grid
    assert statement.cap is not None
    rows = []
    for part, p, rank in zip(compiled.parts, compiled.query.quantiles, statement.targets,
                             strict=True):  # fmt: skip
        j = int(noisy[part.name][i])
        value = quantile_values.released_value(grid.value(j), grid.lower, grid.upper)
        rows.append(ResultRow(keys, value, statement.cap, p, rank))
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
    exact = qmod.exact_quantiles(leaves, tree, probs)
    assert statement.rank is not None
    cdf = statement.rank / 2  # the CDF ± at every edge at once (the rank ± is 2·cdf)
    rows = []
    bounds = (tree.lower, tree.upper)
    for p, x, target in zip(probs, exact, statement.targets, strict=True):
        # inside the bounds as released; the ± covers the rounding (docs/data.md)
        v = quantile_values.released_value(x, *bounds)
        lo, hi = qmod.value_interval(ls_cdf, tree, p, target)  # exact leaf edges
        acc = quantile_values.value_pm(v, lo, hi)
        rank = qmod.released_rank(float(p), cdf, target)  # (1 + p)·cdf, or less
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
