"""The values a statistic passes along its pipeline: parts, calibrated noises, compiled queries,
accuracy statements, the :class:`Kind` each statistic family registers, and number helpers
(docs/data.md, "Statistics")."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
from msgspec import Struct

from snapdp._rational import shown_rational
from snapdp.accuracy import accuracy_bound
from snapdp.data.engines.base import Aggregates, ValueColumn
from snapdp.data.model.keys import Key
from snapdp.data.model.observed import joint_cells
from snapdp.data.model.predicate import Predicate
from snapdp.data.model.query import ROOT_STATISTICS, Query
from snapdp.data.model.schema import Column, Schema
from snapdp.data.output.results import ResultRow
from snapdp.data.statistics.bounding import Reach
from snapdp.data.statistics.math import sample_variance
from snapdp.data.statistics.sensitivity import FixedPoint
from snapdp.errors import ParameterError
from snapdp.parameters import SnappingParameters
from snapdp.rescaling import mechanism_parameters


class Part(Struct, frozen=True):
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
    offset: int = 0  # source "exponential": the target rank is p·n + offset (a bracket)
    middle: int | None = None  # source "exponential": the point's slack κ (its middle-rank loss)


class Noise(Struct, frozen=True):
    """A part's calibrated mechanism parameters (exact) and how they were chosen."""

    part: Part
    epsilon: Fraction
    sensitivity: int | Fraction
    cells: int
    calibrated: bool
    note: str | None = None
    presumed: bool = False  # the planner's search: certificates presumed, never for a release
    slack: Fraction = Fraction(0)  # calibrated: the certificate's per-cell slack s

    @property
    def spent(self) -> Fraction:
        """The ε the part costs: ε per cell times the cells one unit touches, or, calibrated to
        the L1 sensitivity, ε_cal + cells·s (the certificate's composition; DESIGN §8.4)."""
        if self.calibrated:
            return self.epsilon + self.cells * self.slack
        return self.epsilon * self.cells

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


class Compiled(Struct, frozen=True):
    """A query checked against the declaration: its grouping, value column and parts."""

    query: Query
    epsilon: Fraction
    groupings: tuple[Column, ...]
    value: ValueColumn | None
    fixed: FixedPoint | None
    parts: tuple[Part, ...]
    reach: Reach
    schema: Schema
    leaf: Column | None = None  # quantiles: the value column binned at the tree's leaves
    tree: Any = None  # quantiles: the tree (snapdp.data.statistics.math.quantile_tree.TreeSpec)
    where: Predicate | None = None  # the row filter, literals typed by the declaration
    where_columns: tuple[Column, ...] = ()  # the declared columns it reads
    grid: Any = None  # exponential quantiles: the candidates (exponential_quantiles.QuantileGrid)
    joint: tuple[tuple[Key, ...], ...] | None = None  # data groups

    @property
    def engine_groupings(self) -> tuple[Column, ...]:
        """The grouping the engine counts: the query's, then the leaves for quantiles."""
        return self.groupings if self.leaf is None else (*self.groupings, self.leaf)

    @property
    def n_cells(self) -> int:
        """The number of cells (1 when ungrouped; the observed tuples with groups from the data)."""
        return joint_cells(self.groupings, self.joint)


class AccuracyStatement(Struct, frozen=True):
    """The accuracy a query will have, stated before anything is spent (DESIGN §4).

    ``accuracy``: the ± of every released value at ``confidence``, when it depends on public
    parameters only (count, sum, substitute mean); else None and ``at(n)`` is the planning figure
    for a cell of noisy count ñ = n: for the ratio forms the combination of the parts' noises at
    the public worst-case weights, ``per_count``/ñ (mean), ``per_count``/ñ + ``square``/ñ²
    (variance; a std its root), (``per_count`` + ``square``/ñ)/(ñ − 1) (var_samp, std_samp),
    capped at ``cap``: never less than the ± a row with that ñ states when its parts are inside
    their bounds (docs/utility.md, "Variance and std"). ``epsilon``: the query's exact ε.
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
    targets: tuple[float, ...] = ()  # quantiles: per probability, the bound the rank ± uses
    # tree quantiles: r₂, the one-sided bound over all edges at α₂, the largest the value ± uses
    value_targets: tuple[float, ...] = ()
    count_accuracy: float | None = None  # ratio mean: the ± of the released count
    largest: float | None = None  # sample forms: V, the largest population variance
    sum_accuracy: float | None = None  # ratio mean: the ± of the released deviation sum (values)
    # ratio mean, variance, std, tree quantiles: the parts' never-clamped errors
    # (sum_bound.NoiseKind, in the parts' order) and α, for the ± of each row (docs/utility.md)
    kinds: tuple[Any, ...] = ()
    alpha: float | None = None
    # tree quantiles: r₁, the two-sided bound at α₁ that picks the edges the value ± bounds
    value_first: tuple[float, ...] = ()
    # variance, std planning: the ± at ñ is per_count/ñ + square/ñ², the combination rows state
    # at the public weights (its first step; docs/utility.md "Variance and std"); var_samp,
    # std_samp: (per_count + square/ñ)/(ñ − 1) (sample_variance.sample_accuracy)
    square: float = 0.0

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
            return min(self.cap, up(self.leaf_width + self.per_count / n))
        if self.largest is not None:  # var_samp, std_samp: the combination with ñ − 1
            root = self.query.statistic in ROOT_STATISTICS
            return sample_variance.sample_accuracy(
                self.per_count, self.square, self.largest, float(n), root=root
            )
        # mean, variance, std: the combination at the public weights, the most a row with
        # ñ = n states (docs/utility.md, "Variance and std")
        a = up(self.per_count / n)
        if self.square:
            a = up(a + self.square / (n * n))
        if self.query.statistic == "std":
            a = sample_variance.root_figure(a)
        return min(self.cap, a)

    def describe(self) -> str:
        """The accuracy in words."""
        if self.accuracy is not None:
            return f"±{num(self.accuracy)}"
        if self.rank is not None and self.query.method == "exponential":
            return (
                f"rank ±{num(self.rank)} (for every n); in values ±({num(self.leaf_width or 0.0)}"
                f" + {num(self.per_count or 0.0)}/n) if n rows are evenly spread"
            )
        if self.rank is not None:
            return (
                f"rank ±{num(self.rank)}; in values ±({num(self.leaf_width or 0.0)} + "
                f"{num(self.per_count or 0.0)}/ñ) if evenly spread, ñ the noisy count of the cell"
            )
        c, s = num(self.per_count or 0.0), num(self.square)
        if self.largest is not None:  # var_samp, std_samp
            core = f"({c} + {s}/ñ)/(ñ − 1)"
            if self.query.statistic in ROOT_STATISTICS:
                return f"±√({core}), ñ the noisy count of the cell"
            return f"±{core}, ñ the noisy count of the cell"
        core = f"{c}/ñ + {s}/ñ²" if self.square else f"{c}/ñ"
        if self.query.statistic == "std":
            return f"±√({core}), ñ the noisy count of the cell"
        return f"±{core}, ñ the noisy count of the cell"


#: The noisy arrays of a query's parts, by part name.
Noisy = dict[str, npt.NDArray[np.float64]]


class Kind(Struct, frozen=True):
    """One statistic family's share of the pipeline (:mod:`snapdp.data.statistics.kinds`).

    ``compile``: the parts of a checked query (query, schema, ε, groupings, cells, reach of the
    grouping); ``accuracy``: its statement (compiled, noises, confidence, α, notes, targets?);
    ``inputs``: the parts' exact aggregates per cell (compiled, aggregates, value index);
    ``rows``: the released rows of one cell (compiled, statement, noisy, cell index, keys);
    ``unit``: what one unit of a part's mechanism is worth in the data's units.
    """

    compile: Callable[[Query, Schema, Fraction, tuple[Column, ...], int, Reach], Compiled]
    accuracy: Callable[
        [Compiled, Sequence[Noise], float, float, tuple[str, ...], bool], AccuracyStatement
    ]
    inputs: Callable[[Compiled, Aggregates, int | None], dict[str, list[int | Fraction]]]
    rows: Callable[
        [Compiled, AccuracyStatement, Noisy, int, tuple[Key | str, ...]], list[ResultRow]
    ]
    unit: Callable[[Part, FixedPoint | None], str]


def numeric_column(query: Query, schema: Schema) -> Column:
    """The query's value column, refused unless it is numeric."""
    assert query.column is not None
    col = schema.column(query.column)
    if col.type not in ("integer", "decimal"):
        raise ParameterError(
            f"a {query.statistic} needs a numeric column; {col.name!r} is declared {col.type}",
            parameter="column",
        )
    return col


def check_magnitudes(col: Column, parts: Sequence[Part]) -> None:
    """Mechanism parameters must stay far inside the double range (the accuracy and the
    outputs are doubles)."""
    limit = 1 << 1000
    for p in parts:
        values: list[Fraction] = [Fraction(p.lower), Fraction(p.upper)]
        values += [Fraction(p.per_cell), Fraction(p.l1)]
        if max(abs(v) for v in values) >= limit:
            raise ParameterError(
                f"column {col.name!r}: bounds [{frac(col.lower)}, {frac(col.upper)}] are too "
                "large for the row bound (every bound times the row bound must stay below 1e300)",
                parameter="upper",
            )


def part_accuracies(compiled: Compiled, noises: Sequence[Noise], alpha: float) -> dict[str, float]:
    each = alpha / len(noises)
    return {n.part.name: noise_accuracy(n, each) for n in noises}


@functools.lru_cache(maxsize=4096)
def noise_accuracy(noise: Noise, alpha: float) -> float:
    """``accuracy_bound`` of the part's mechanism at ``alpha``, cached per noise (a pure function
    of public parameters: a two-phase search asks again for its fixed phase-1 counts)."""
    return accuracy_bound(noise.parameters(), alpha)


def up(x: float) -> float:
    """x rounded up generously (a few ulps) for stated bounds computed in doubles."""
    return math.nextafter(x * (1 + 2**-50), math.inf)


def num(x: float) -> str:
    return f"{x:,.6g}"


def frac(x: Fraction | None) -> str:
    if x is None:
        return "?"
    return shown_rational(x)  # as typed, exactly (capped in length)


def key_label(key: Key | str) -> str:
    """A typed key as text (for tables)."""
    return str(key)
