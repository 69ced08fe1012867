"""The statistics of a release: from a query and the declaration to mechanisms, accuracy and
results (DESIGN §4, §8.3–8.4; docs/data.md, "Statistics").

A query compiles (:func:`compile_query`) into *parts*: exact integer aggregates per cell, each
released by one snapping mechanism per cell, with a share of the query's ε:

* count: the rows; one cell moves by r; bounds [0, N].
* sum: Σq; moves by r·max(|L_q|, |U_q|); bounds [N·min(L_q, 0), N·max(U_q, 0)].
* mean (ratio): Σq (ε/2) and the number of values (ε/2), as sum and count.
* mean (substitute): Σq/n with the declared public n (all of ε); moves by (U_q − L_q)/n;
  bounds [L_q, U_q].
* variance, std: Σw² (ε·0.24), Σw (ε·0.34) and the number of values (ε·0.42), with
  w = 2q − L_q − U_q and W = U_q − L_q; moves by r·W², r·W, r; bounds [0, N·W²], [−N·W, N·W],
  [0, N]. The sample forms (var_samp, std_samp) release the same parts and divide by ñ − 1
  (post-processing, :mod:`snapdp.data.sample_variance`).

(q: a value in quanta, see :mod:`snapdp.data.sensitivity`; N: the public row bound; r: the rows
one unit can add to a cell, see :mod:`snapdp.data.bounding`.) The variance split is the one that
minimises its stated error: that error is (a_Σw² + 2W·a_Σw + 3W²·a_n)/(4ñ), and each a is
proportional to 1/ε of its part, so εᵢ ∝ √(1, 2, 3), taken as the rationals 1000:1414:1732.

**Grouped parts** (DESIGN §8.4). A unit touches at most ``cells`` cells and moves each by at most
``per_cell``, all together by at most ``l1``. Each cell's mechanism gets ε/cells at the per-cell
sensitivity (composition over the cells one unit touches) — or, when ``l1`` is smaller than
cells·per_cell and the per-shift certificate of :func:`snapdp.data.calibration.calibrate_l1`
holds, the full (certified, slack-reduced) ε at sensitivity ``l1``, whichever has less noise.
Without a certificate the result says that it fell back.

**Accuracy before spending.** Count, sum and the substitute mean have a ± that depends on the
public parameters only. A ratio mean's ± is (a_Σ + M·a_n)/ñ and a variance's is
(a_Σw² + 2W·a_Σw + 3W²·a_n)/(4ñ) (union bound over the parts, each at α/parts), with ñ the
noisy count of the cell: :class:`AccuracyStatement` states the numerator before anything is spent
and the result states the ± once ñ is known (post-processing). A std's ± is the square root of its
variance's (|√a − √b| ≤ √|a − b|).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from snapdp._rational import shown_rational
from snapdp.accuracy import accuracy_bound
from snapdp.data import calibration, quantile_values, quantiles, sample_variance
from snapdp.data import exponential_quantiles as expq
from snapdp.data.bounding import Reach, reach
from snapdp.data.engines.base import Aggregates, ValueColumn
from snapdp.data.model.predicate import Predicate, check_predicate, columns_of
from snapdp.data.model.query import ROOT_STATISTICS, SPREAD_STATISTICS, Query
from snapdp.data.model.schema import DEFAULT_MAX_ROWS, Column, Key, Schema, keys_product
from snapdp.data.output.results import QueryResult, ResultRow
from snapdp.data.sensitivity import FixedPoint, fits_int64, fixed_point
from snapdp.data.sum_bound import noise_kind
from snapdp.errors import ParameterError
from snapdp.exponential import exponential_parameters
from snapdp.exponential import sample as exponential_sample
from snapdp.ieee import double_at_least
from snapdp.mechanism import SnappingMechanism
from snapdp.parameters import SnappingParameters
from snapdp.rescaling import mechanism_parameters

__all__ = [
    "AccuracyStatement",
    "Compiled",
    "Noise",
    "Part",
    "accuracy_of",
    "assemble",
    "calibrate",
    "compile_query",
    "exact_inputs",
]

_QUANTILE_NOTE = (
    "quantiles: each lies within one leaf of a value whose true rank is within the rank ± of "
    "p·n; the ± in values covers every value whose released rank is within that rank ± of "
    "p·ñ, read from the released tree (post-processing; docs/data.md, 'Quantiles')"
)
_VARIANCE_SPLIT = (Fraction(1000, 4146), Fraction(1414, 4146), Fraction(1732, 4146))


@dataclass(frozen=True)
class Part:
    """One exact aggregate per cell, released by one mechanism per cell.

    ``source``: ``"rows"``, ``"sum"``, ``"count"`` (non-null values), ``"squares"``, ``"csum"``
    (Σ(2q − L_q − U_q)) or ``"mean"`` (Σq/n, substitute). ``per_cell``/``l1``: sensitivities in
    the part's units; [``lower``, ``upper``]: the mechanism's bounds.
    """

    name: str
    source: str
    weight: Fraction
    per_cell: int | Fraction
    l1: int | Fraction
    lower: int
    upper: int
    cells: int | None = None  # cells one unit touches, when not the query's (tree levels)
    probability: Fraction | None = None  # source "exponential": the quantile's p


@dataclass(frozen=True)
class Noise:
    """A part's calibrated mechanism parameters (exact) and how they were chosen."""

    part: Part
    epsilon: Fraction
    sensitivity: int | Fraction
    cells: int
    calibrated: bool
    note: str | None = None
    presumed: bool = False  # the planner's search: certificates presumed, never for a release

    def parameters(self) -> SnappingParameters:
        """The exact parameters the part's :class:`~snapdp.SnappingMechanism` runs with
        (rescaled, docs/mechanism.md "No power-of-two penalty"); for its accuracy. A ε that the
        mechanism refuses (too small) is a ParameterError naming ``epsilon``, as the mechanism's
        own constructor says it."""
        try:
            return mechanism_parameters(
                self.epsilon, self.sensitivity, self.part.lower, self.part.upper,
                presume_certified=self.presumed,
            )  # fmt: skip
        except ParameterError:
            raise
        except ValueError as exc:
            raise ParameterError(str(exc), parameter="epsilon") from None


@dataclass(frozen=True)
class Compiled:
    """A query checked against the declaration: its grouping, value column and parts."""

    query: Query
    epsilon: Fraction
    groupings: tuple[Column, ...]
    value: ValueColumn | None
    fixed: FixedPoint | None
    parts: tuple[Part, ...]
    reach: Reach
    schema: Schema = field(repr=False)
    leaf: Column | None = None  # quantiles: the value column binned at the tree's leaves
    tree: Any = None  # quantiles: the tree (snapdp.data.quantiles.TreeSpec)
    where: Predicate | None = None  # the row filter, literals typed by the declaration
    where_columns: tuple[Column, ...] = ()  # the declared columns it reads
    grid: Any = None  # exponential quantiles: the candidates (exponential_quantiles.QuantileGrid)

    @property
    def engine_groupings(self) -> tuple[Column, ...]:
        """The grouping the engine counts: the query's, then the leaves for quantiles."""
        return self.groupings if self.leaf is None else (*self.groupings, self.leaf)

    @property
    def n_cells(self) -> int:
        """The number of cells (1 when ungrouped)."""
        n = 1
        for g in self.groupings:
            n *= g.n_cells
        return n


@dataclass(frozen=True)
class AccuracyStatement:
    """The accuracy a query will have, stated before anything is spent (DESIGN §4).

    ``accuracy``: the ± of every released value at ``confidence``, when it depends on public
    parameters only (count, sum, substitute mean); else None and ``per_count`` is the numerator
    c such that the ± of a cell with noisy count ñ is c/ñ (ratio mean, variance; for a std,
    √(c/ñ)), capped at ``cap`` (the width of the value range). ``epsilon``: the query's exact ε.
    """

    query: Query
    epsilon: Fraction
    confidence: float
    accuracy: float | None
    per_count: float | None = None
    cap: float | None = None
    notes: tuple[str, ...] = ()
    rank: float | None = None
    leaf_width: float | None = None
    targets: tuple[float, ...] = ()  # quantiles: per probability, the bound the value ± uses
    count_accuracy: float | None = None  # sample forms: the count's ± (docs/sql.md)
    largest: float | None = None  # sample forms: V, the largest population variance

    @property
    def label(self) -> str:
        """The query's label."""
        return self.query.label

    def at(self, n: int | float) -> float:
        """The ± for a cell of ``n`` rows (n > 0): exact statement for count-independent
        statistics; for ratio forms, the bound with ñ = n (a planning figure)."""
        if self.accuracy is not None:
            return self.accuracy
        assert self.per_count is not None and self.cap is not None
        if not n > 0:
            return self.cap
        if self.leaf_width is not None:
            return min(self.cap, _up(self.leaf_width + self.per_count / n))
        if self.count_accuracy is not None and self.largest is not None:
            root = self.query.statistic in ROOT_STATISTICS
            return sample_variance.sample_accuracy(
                self.per_count, self.count_accuracy, self.largest, float(n), root=root
            )
        a = _up(self.per_count / n)
        if self.query.statistic == "std":
            a = _up(math.sqrt(a))
        return min(self.cap, a)

    def describe(self) -> str:
        """The accuracy in words."""
        if self.accuracy is not None:
            return f"±{_num(self.accuracy)}"
        if self.rank is not None and self.query.method == "exponential":
            return (
                f"rank ±{_num(self.rank)} (for every n); in values ±({_num(self.leaf_width or 0.0)}"
                f" + {_num(self.per_count or 0.0)}/n) if n rows are evenly spread"
            )
        if self.rank is not None:
            return (
                f"rank ±{_num(self.rank)}; in values ±({_num(self.leaf_width or 0.0)} + "
                f"{_num(self.per_count or 0.0)}/ñ) if evenly spread, ñ the noisy count of the cell"
            )
        if self.count_accuracy is not None:
            c, a = _num(self.per_count or 0.0), _num(self.count_accuracy)
            v = _num(self.largest or 0.0)
            core = f"{c}/(ñ − 1) + {v}·{a}/((ñ − 1)·max(1, ñ − 1 − {a}))"
            if self.query.statistic in ROOT_STATISTICS:
                return f"±√({core}), ñ the noisy count of the cell"
            return f"±{core}, ñ the noisy count of the cell"
        if self.query.statistic == "std":
            return f"±√({_num(self.per_count or 0.0)}/ñ), ñ the noisy count of the cell"
        return f"±{_num(self.per_count or 0.0)}/ñ, ñ the noisy count of the cell"


# -- compiling --------------------------------------------------------------------------------
def compile_query(query: Query, schema: Schema, epsilon: Fraction) -> Compiled:
    """Check ``query`` against ``schema`` and work out its parts (no data is read). A row filter
    changes no part: it only removes rows, each on its own, before contribution bounding."""
    if not isinstance(query, Query):
        raise ParameterError(f"a query must be a Query, not {query!r}", parameter="queries")
    try:
        return _compiled(query, schema, Fraction(epsilon))
    except TypeError:  # an unhashable part (never in a valid declaration): compile afresh
        return _compile(query, schema, epsilon)


@functools.lru_cache(maxsize=4096)
def _compiled(query: Query, schema: Schema, epsilon: Fraction) -> Compiled:
    """:func:`compile_query` of these public parameters, once per process: the planner's
    preview, its refusals and the release session share one compilation (a pure function of
    frozen values; an error is raised again on every call, never cached)."""
    return _compile(query, schema, epsilon)


def _compile(query: Query, schema: Schema, epsilon: Fraction) -> Compiled:
    compiled = _compile_parts(query, schema, epsilon)
    if query.where is None:
        return compiled
    where = check_predicate(query.where, schema)
    used = tuple(schema.column(name) for name in columns_of(where))
    return replace(compiled, where=where, where_columns=used)


def _compile_parts(query: Query, schema: Schema, epsilon: Fraction) -> Compiled:
    overrides = dict(query.bins)
    groupings: list[Column] = []
    declared = {c.name for c in schema.columns}
    for name in query.by:
        if name not in declared and name not in overrides:
            raise ParameterError(
                f"grouping column {name!r} is not declared: declare its keys or bins "
                "(docs/data.md, 'The declaration')",
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
    n_cells = 1
    for g in groupings:
        n_cells *= g.n_cells
    r = reach(schema, n_cells)
    n = schema.max_rows
    stat = query.statistic
    if stat == "count":
        part = Part("count", "rows", Fraction(1), r.per_cell, r.l1, 0, n)
        return Compiled(query, epsilon, tuple(groupings), None, None, (part,), r, schema)
    assert query.column is not None
    col = schema.column(query.column)
    if col.type not in ("integer", "decimal"):
        raise ParameterError(
            f"a {stat} needs a numeric column; {col.name!r} is declared {col.type}",
            parameter="column",
        )
    if stat == "quantiles":
        return _compile_quantiles(query, schema, epsilon, tuple(groupings), col, n_cells)
    squares = stat in SPREAD_STATISTICS
    fp = fixed_point(col, n, squares=squares)
    impute = None
    if col.nulls.action == "impute":
        assert col.nulls.value is not None
        q = round(Fraction(col.nulls.value) * 10**fp.decimals)  # type: ignore[arg-type]
        impute = min(max(q, fp.lower_q), fp.upper_q)
    value = ValueColumn(col, fp.decimals, fp.lower_q, fp.upper_q, impute, squares)
    parts: tuple[Part, ...]
    if stat == "sum":
        lo, hi = fp.sum_bounds(n)
        parts = (Part("sum", "sum", Fraction(1), r.per_cell * fp.magnitude,
                      r.l1 * fp.magnitude, lo, hi),)  # fmt: skip
    elif stat == "mean" and query.method == "substitute":
        parts = (_substitute_part(query, schema, fp, r, n_cells),)
    elif stat == "mean":
        lo, hi = fp.sum_bounds(n)
        half = Fraction(1, 2)
        parts = (
            Part("sum", "sum", half, r.per_cell * fp.magnitude, r.l1 * fp.magnitude, lo, hi),
            Part("count", "count", half, r.per_cell, r.l1, 0, n),
        )
    else:  # variance, std and their sample forms
        w = fp.width
        sq, cs, ct = _VARIANCE_SPLIT
        parts = (
            Part("squares", "squares", sq, r.per_cell * w * w, r.l1 * w * w, 0, n * w * w),
            Part("csum", "csum", cs, r.per_cell * w, r.l1 * w, -n * w, n * w),
            Part("count", "count", ct, r.per_cell, r.l1, 0, n),
        )
    _check_magnitudes(col, parts)
    return Compiled(query, epsilon, tuple(groupings), value, fp, parts, r, schema)


def _check_magnitudes(col: Column, parts: Sequence[Part]) -> None:
    """Mechanism parameters must stay far inside the double range (the accuracy and the
    outputs are doubles)."""
    limit = 1 << 1000
    for p in parts:
        values: list[Fraction] = [Fraction(p.lower), Fraction(p.upper)]
        values += [Fraction(p.per_cell), Fraction(p.l1)]
        if max(abs(v) for v in values) >= limit:
            raise ParameterError(
                f"column {col.name!r}: bounds [{_frac(col.lower)}, {_frac(col.upper)}] are too "
                "large for the row bound (every bound times the row bound must stay below 1e300)",
                parameter="upper",
            )


@functools.lru_cache(maxsize=64)
def _tree_spec(lower: Fraction, upper: Fraction, resolution: Fraction) -> Any:
    """The stats module's tree for these exact parameters (cached: choosing it takes seconds for
    thousands of leaves, and a release compiles its queries more than once)."""
    return quantiles.tree_spec(lower, upper, resolution)


def _compile_quantiles(
    query: Query,
    schema: Schema,
    epsilon: Fraction,
    groupings: tuple[Column, ...],
    col: Column,
    by_cells: int,
) -> Compiled:
    """Quantiles from a tree histogram per cell (docs/data.md, "Quantiles").

    The engine counts rows per (cell, leaf): the value column binned at the leaf edges, the outer
    edges pushed to ±2^63 (integer) or ±2^1024 (decimal, past every double) so that a value below L
    counts in the first leaf and one above U in the last (the clamp). Level l of the trees of all
    cells is one part with ε/depth: a unit moves its nodes by L1 <= l1 rows in all (computed over
    cells × leaves) and touches at most min(cells touched, #nodes of the level over all cells) of
    them.
    """
    if col.lower is None or col.upper is None:
        raise ParameterError(
            f"column {col.name!r} needs declared bounds for quantiles", parameter="lower"
        )
    quantile_values.check_bounds(col)
    if query.method == "exponential":
        return _compile_exponential(query, schema, epsilon, groupings, col, by_cells)
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
    col: Column,
    by_cells: int,
) -> Compiled:
    """Quantiles by the exact exponential mechanism (docs/data.md, "Quantiles by the exponential
    mechanism"): the engine counts rows per (cell, grid cell), the outer edges pushed out as for
    the tree (the clamp); one part per probability with ε/#probabilities, loss sensitivity
    max(a, b − a)·l1 for p = a/b, every group at that ε (a unit's rows over the groups add up
    to at most l1, and each group's privacy loss grows with its own share)."""
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


def _substitute_part(query: Query, schema: Schema, fp: FixedPoint, r: Reach, cells: int) -> Part:
    if schema.rows is None:
        raise ParameterError(
            "a substitute mean needs the public row count declared (Schema.rows; CLI --rows)",
            parameter="rows",
        )
    if cells != 1:
        raise ParameterError(
            "a substitute mean cannot be grouped (group sizes are not public)", parameter="by"
        )
    if r.l1 != 1:
        raise ParameterError(
            "a substitute mean needs one row per unit (max_rows_per_unit=1)",
            parameter="max_rows_per_unit",
        )
    # Substituting one row moves Σq by at most the span of what one row can add: [L_q, U_q] when
    # a null is imputed, and also 0 when a null (or unreadable) cell is dropped from the sum.
    span = fp.width
    if schema.column(query.column or "").nulls.action != "impute":
        span = max(fp.upper_q, 0) - min(fp.lower_q, 0)
    sens = Fraction(span, schema.rows)
    return Part("mean", "mean", Fraction(1), sens, sens, fp.lower_q, fp.upper_q)


# -- calibrating ------------------------------------------------------------------------------
def calibrate(compiled: Compiled, *, presume_certified: bool = False) -> tuple[Noise, ...]:
    """Each part's exact mechanism parameters (see the module docstring, "Grouped parts").

    ``presume_certified``: take the L1 certificate's success for granted
    (:func:`snapdp.data.calibration.presumed_l1`) — for the planner's search over ε only, never
    for a release.
    """
    noises = (_calibrate_part(compiled, p, presume_certified) for p in compiled.parts)
    return tuple(replace(n, presumed=presume_certified) for n in noises)


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
        return Noise(part, cal_eps, cal_sens, cells, True, note)
    return composed


def mechanisms(noises: Sequence[Noise], rng: np.random.Generator | None) -> list[SnappingMechanism]:
    """One mechanism per part (shared by the part's cells: each call draws fresh noise)."""
    return [
        SnappingMechanism(n.epsilon, n.sensitivity, n.part.lower, n.part.upper, rng=rng)
        for n in noises
    ]


# -- accuracy ---------------------------------------------------------------------------------
def accuracy_of(
    compiled: Compiled,
    noises: Sequence[Noise],
    confidence: float,
    alpha: float,
    *,
    targets: bool = True,
) -> AccuracyStatement:
    """The query's accuracy at ``confidence`` = 1 − ``alpha`` (see the module docstring).
    ``targets=False``: leave a quantile statement's per-probability ``targets`` empty (the
    planner's figures, :meth:`AccuracyStatement.at` and ``describe``, do not read them; a
    release needs them)."""
    notes = notes_for(compiled, noises)
    if compiled.tree is not None:
        return _quantile_accuracy(compiled, noises, confidence, alpha, notes, targets)
    if compiled.grid is not None:
        return _exponential_accuracy(compiled, noises, confidence, alpha, notes)
    a = _part_accuracies(compiled, noises, alpha)
    fp, stat = compiled.fixed, compiled.query.statistic
    if fp is None:
        return AccuracyStatement(
            compiled.query, compiled.epsilon, confidence, a["count"], notes=notes
        )
    q = float(fp.quantum)
    if stat == "sum":
        return AccuracyStatement(compiled.query, compiled.epsilon, confidence, _up(a["sum"] * q),
                                 notes=notes)  # fmt: skip
    if "mean" in a:
        return AccuracyStatement(compiled.query, compiled.epsilon, confidence,
                                 min(_up(a["mean"] * q), float(fp.width * fp.quantum)),
                                 notes=notes)  # fmt: skip
    if stat == "mean":
        num = _up((a["sum"] + fp.magnitude * a["count"]) * q)
        cap = float(fp.width * fp.quantum)
        return AccuracyStatement(
            compiled.query, compiled.epsilon, confidence, None, num, cap, notes
        )
    w = fp.width
    num = _up((a["squares"] + 2 * w * a["csum"] + 3 * w * w * a["count"]) / 4 * q * q)
    largest = Fraction(w * w, 4) * fp.quantum**2  # V: the largest population variance
    cap = float(largest)
    if stat == "std":
        cap = float(Fraction(w, 2) * fp.quantum)
    if stat in ("var_samp", "std_samp"):  # docs/sql.md, "Sample variance"
        cap = float(2 * largest) if stat == "var_samp" else _up(math.sqrt(float(2 * largest)))
        notes = (*notes, sample_variance.FALLBACK_NOTE)
        return AccuracyStatement(
            compiled.query, compiled.epsilon, confidence, None, num, cap, notes,
            count_accuracy=a["count"], largest=_up(float(largest)),
        )  # fmt: skip
    return AccuracyStatement(compiled.query, compiled.epsilon, confidence, None, num, cap, notes)


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
    node = max(_noise_accuracy(n, alpha / nodes) for n in noises)
    cdf = _up(tree.weight * node)
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
        targets.append(min(_up(w1 * node), tail, _up((1 + float(p)) * cdf)))

    cdf, targets = _tighter_tail(compiled, params, alpha, cdf, targets)
    span = float(tree.upper - tree.lower)
    return AccuracyStatement(
        compiled.query,
        compiled.epsilon,
        confidence,
        None,
        _up(2 * cdf) * span,
        span,
        (*notes, _QUANTILE_NOTE),
        rank=_up(2 * cdf),
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
        out.append(min(target, tail, _up((1 + p) * cdf)))
    return cdf, out


def _exponential_accuracy(
    compiled: Compiled,
    noises: Sequence[Noise],
    confidence: float,
    alpha: float,
    notes: tuple[str, ...],
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
        targets.append(_up(expq.rank_bound(params, p, each)))
    rank = max(targets)
    span = double_at_least(grid.upper - grid.lower)  # the ± in values covers the whole range
    note = (
        "quantiles (exponential mechanism, exact, pure ε): each released value is the middle of a "
        f"cell of {_frac(grid.width)} whose true rank is within the rank ± of p·n, whatever n; "
        "the ± in values is the range (no count is released; docs/data.md, 'Quantiles by the "
        "exponential mechanism')"
    )
    return AccuracyStatement(
        compiled.query,
        compiled.epsilon,
        confidence,
        None,
        _up(rank * span),
        span,
        (*notes, note),
        rank=rank,
        leaf_width=float(grid.half_width),
        targets=tuple(targets),
    )


#: The quantile tail bound, cached per (tree, scale, grid, α, nodes, probability): a pure
#: function of public parameters that the planner, the plan's preview and the release each ask for.
_chernoff_cdf = functools.lru_cache(maxsize=4096)(quantiles.chernoff_cdf)


def _part_accuracies(compiled: Compiled, noises: Sequence[Noise], alpha: float) -> dict[str, float]:
    each = alpha / len(noises)
    return {n.part.name: _noise_accuracy(n, each) for n in noises}


@functools.lru_cache(maxsize=4096)
def _noise_accuracy(noise: Noise, alpha: float) -> float:
    """``accuracy_bound`` of the part's mechanism at ``alpha``, cached per noise (a pure function
    of public parameters: a two-phase search asks again for its fixed phase-1 counts)."""
    return accuracy_bound(noise.parameters(), alpha)


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
            f"values clamped to [{_frac(c.lower)}, {_frac(c.upper)}]"
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
    out: dict[str, list[int | Fraction]] = {}
    j = value_index
    if compiled.grid is not None:  # exponential quantiles: every part reads the cell counts
        return {part.name: list(aggregates.rows) for part in compiled.parts}
    if compiled.tree is not None:
        tree = compiled.tree
        qmod = quantiles
        per_cell = [
            qmod.level_counts(aggregates.rows[i * tree.leaves : (i + 1) * tree.leaves], tree)
            for i in range(compiled.n_cells)
        ]
        for lv in range(1, tree.depth + 1):
            out[f"level{lv}"] = [x for levels in per_cell for x in levels[lv - 1]]
        return out
    for part in compiled.parts:
        if part.source == "rows":
            out[part.name] = list(aggregates.rows)
            continue
        assert j is not None and compiled.fixed is not None
        fp = compiled.fixed
        if part.source == "sum":
            out[part.name] = list(aggregates.sums[j])
        elif part.source == "count":
            out[part.name] = list(aggregates.counts[j])
        elif part.source == "squares":
            squares = aggregates.squares[j]
            assert squares is not None
            out[part.name] = list(squares)
        elif part.source == "csum":
            mid2 = fp.lower_q + fp.upper_q
            out[part.name] = [
                2 * s - c * mid2
                for s, c in zip(aggregates.sums[j], aggregates.counts[j], strict=True)
            ]
        else:  # "mean": Σq / n with the declared public n
            rows = compiled.schema.rows
            assert rows is not None
            out[part.name] = [Fraction(s, rows) for s in aggregates.sums[j]]
    return out


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
        losses = expq.losses([int(c) for c in exact[start : start + m]], p)
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
    fp, stat = compiled.fixed, compiled.query.statistic
    cells = keys_product(compiled.groupings)
    rows: list[ResultRow] = []
    for i, keys in enumerate(cells):
        if compiled.tree is not None:
            rows += _quantile_rows(compiled, statement, noisy, i, tuple(keys))
            continue
        if compiled.grid is not None:
            rows += _exponential_rows(compiled, statement, noisy, i, tuple(keys))
            continue
        value, acc = _cell_value(compiled, statement, noisy, i, fp, stat)
        rows.append(ResultRow(tuple(keys), value, acc))
    delta = math.fsum(
        n.cells * m.privacy.delta
        for n, m in zip(noises, mechs, strict=True)
        if n.part.source != "exponential"  # exact: pure ε
    )
    described = {n.part.name: _describe(n, m, fp) for n, m in zip(noises, mechs, strict=True)}
    return QueryResult(
        compiled.query,
        tuple(g.name for g in compiled.groupings),
        tuple(rows),
        compiled.epsilon,
        _up(delta) if delta > 0 else 0.0,
        confidence,
        statement.notes,
        described,
    )


def _exponential_rows(
    compiled: Compiled,
    statement: AccuracyStatement,
    noisy: dict[str, npt.NDArray[np.float64]],
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
    noisy: dict[str, npt.NDArray[np.float64]],
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


def _cell_value(
    compiled: Compiled,
    statement: AccuracyStatement,
    noisy: dict[str, npt.NDArray[np.float64]],
    i: int,
    fp: FixedPoint | None,
    stat: str,
) -> tuple[float, float]:
    if fp is None:
        assert statement.accuracy is not None
        return float(noisy["count"][i]), statement.accuracy
    scale = float(10**fp.decimals)
    lo, hi = float(fp.lower_q) / scale, float(fp.upper_q) / scale
    if statement.accuracy is not None:  # sum, substitute mean
        key = "sum" if stat == "sum" else "mean"
        return float(noisy[key][i]) / scale, statement.accuracy
    assert statement.cap is not None
    n = float(noisy["count"][i])
    if stat == "mean":
        if not n > 0:
            return (lo + hi) / 2, statement.cap
        return min(max(float(noisy["sum"][i]) / scale / n, lo), hi), statement.at(n)
    w = float(fp.width)
    if not n > 0:
        var_q = w * w / 8
    else:
        m1 = min(max(float(noisy["csum"][i]) / n, -w), w)
        m2 = min(max(float(noisy["squares"][i]) / n, 0.0), w * w)
        var_q = min(max(m2 - m1 * m1, 0.0), w * w) / 4
    var = var_q / (scale * scale)
    if statement.largest is not None:  # a sample form (docs/sql.md, "Sample variance")
        root = stat in ROOT_STATISTICS
        value = sample_variance.sample_value(var, n, w * w / 4 / (scale * scale), root=root)
        return value, statement.at(n)
    acc = statement.at(n) if n > 0 else statement.cap
    return (math.sqrt(var) if stat == "std" else var), acc


def _describe(noise: Noise, mech: SnappingMechanism, fp: FixedPoint | None) -> dict[str, Any]:
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
        "unit": _unit(noise.part, fp),
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


def _unit(part: Part, fp: FixedPoint | None) -> str:
    """What one unit of the part's mechanism is worth in the data's units."""
    if fp is None or part.source in ("rows", "count") or part.source.startswith("level"):
        return "1 row"
    if part.source == "squares":
        return f"({fp.quantum})² (centred, doubled)"
    if part.source == "csum":
        return f"{fp.quantum} (centred, doubled)"
    return str(fp.quantum)


def _up(x: float) -> float:
    """x rounded up generously (a few ulps) for stated bounds computed in doubles."""
    return math.nextafter(x * (1 + 2**-50), math.inf)


def _num(x: float) -> str:
    return f"{x:,.6g}"


def _frac(x: Fraction | None) -> str:
    if x is None:
        return "?"
    return shown_rational(x)  # as typed, exactly (capped in length)


def key_label(key: Key | str) -> str:
    """A typed key as text (for tables)."""
    return str(key)
