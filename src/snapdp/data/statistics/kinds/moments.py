"""Count, sum, mean (ratio and substitute), variance and std with their sample forms: the kinds
whose parts are exact sums per cell (docs/data.md, "Statistics").

* count: the rows; one cell moves by r; bounds [0, N].
* sum: Σq; moves by r·max(|L_q|, |U_q|); bounds [N·min(L_q, 0), N·max(U_q, 0)].
* mean (ratio): Σw (ε/2) and the number of values (ε/2), w = 2q − L_q − U_q (twice the
  deviation from the centre (L_q + U_q)/2, added back exactly: mean = centre + Σw/(2ñ)); Σw
  moves by r·W, half of what Σq would for bounds [0, U].
* mean (substitute): Σq/n with the declared public n (all of ε); moves by (U_q − L_q)/n;
  bounds [L_q, U_q].
* variance, std: Σw² (ε·0.24), Σw (ε·0.34) and the number of values (ε·0.42), with
  w = 2q − L_q − U_q and W = U_q − L_q; moves by r·W², r·W, r; bounds [0, N·W²], [−N·W, N·W],
  [0, N]. The sample forms (var_samp, std_samp) release the same parts and divide by ñ − 1
  (post-processing, :mod:`snapdp.data.statistics.math.sample_variance`).

The variance split is the one that minimises its stated error: that error is
(a_Σw² + 2W·a_Σw + 3W²·a_n)/(4ñ), and each a is proportional to 1/ε of its part, so
εᵢ ∝ √(1, 2, 3), taken as the rationals 1000:1414:1732.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction

from snapdp.data.engines.base import Aggregates, ValueColumn
from snapdp.data.model.keys import Key
from snapdp.data.model.query import ROOT_STATISTICS, SPREAD_STATISTICS, Query
from snapdp.data.model.schema import Column, Schema
from snapdp.data.output.results import ResultRow
from snapdp.data.statistics.bounding import Reach
from snapdp.data.statistics.math import ratio_bound, sample_variance
from snapdp.data.statistics.math.sum_bound import NoiseKind, noise_kind
from snapdp.data.statistics.sensitivity import FixedPoint, fixed_point
from snapdp.data.statistics.types import (
    AccuracyStatement,
    Compiled,
    Kind,
    Noise,
    Noisy,
    Part,
    check_magnitudes,
    numeric_column,
    part_accuracies,
    up,
)
from snapdp.errors import ParameterError

__all__ = ["COUNT", "MEAN", "SPREAD", "SUBSTITUTE_MEAN", "SUM"]

_VARIANCE_SPLIT = (Fraction(1000, 4146), Fraction(1414, 4146), Fraction(1732, 4146))
_Parts = Callable[[Query, Schema, FixedPoint, Reach, int], tuple[Part, ...]]


# -- compiling --------------------------------------------------------------------------------
def _compile_count(
    query: Query, schema: Schema, epsilon: Fraction, groupings: tuple[Column, ...],
    n_cells: int, r: Reach,
) -> Compiled:  # fmt: skip
    part = Part("count", "rows", Fraction(1), r.per_cell, r.l1, 0, schema.max_rows)
    return Compiled(query, epsilon, groupings, None, None, (part,), r, schema)


def _compiler(
    parts_of: _Parts,
) -> Callable[[Query, Schema, Fraction, tuple[Column, ...], int, Reach], Compiled]:
    """The compile step of a kind over a numeric value column, its parts from ``parts_of``."""

    def compile_(
        query: Query, schema: Schema, epsilon: Fraction, groupings: tuple[Column, ...],
        n_cells: int, r: Reach,
    ) -> Compiled:  # fmt: skip
        col = numeric_column(query, schema)
        squares = query.statistic in SPREAD_STATISTICS
        fp = fixed_point(col, schema.max_rows, squares=squares)
        impute = None
        if col.nulls.action == "impute":
            assert col.nulls.value is not None
            q = round(Fraction(col.nulls.value) * 10**fp.decimals)  # type: ignore[arg-type]
            impute = min(max(q, fp.lower_q), fp.upper_q)
        value = ValueColumn(col, fp.decimals, fp.lower_q, fp.upper_q, impute, squares)
        parts = parts_of(query, schema, fp, r, n_cells)
        check_magnitudes(col, parts)
        return Compiled(query, epsilon, groupings, value, fp, parts, r, schema)

    return compile_


def _sum_parts(
    query: Query, schema: Schema, fp: FixedPoint, r: Reach, cells: int
) -> tuple[Part, ...]:
    lo, hi = fp.sum_bounds(schema.max_rows)
    return (Part("sum", "sum", Fraction(1), r.per_cell * fp.magnitude,
                 r.l1 * fp.magnitude, lo, hi),)  # fmt: skip


def _mean_parts(
    query: Query, schema: Schema, fp: FixedPoint, r: Reach, cells: int
) -> tuple[Part, ...]:
    n, w = schema.max_rows, fp.width
    half = Fraction(1, 2)
    return (
        Part("csum", "csum", half, r.per_cell * w, r.l1 * w, -n * w, n * w),
        Part("count", "count", half, r.per_cell, r.l1, 0, n),
    )


def _spread_parts(
    query: Query, schema: Schema, fp: FixedPoint, r: Reach, cells: int
) -> tuple[Part, ...]:
    n, w = schema.max_rows, fp.width
    sq, cs, ct = _VARIANCE_SPLIT
    return (
        Part("squares", "squares", sq, r.per_cell * w * w, r.l1 * w * w, 0, n * w * w),
        Part("csum", "csum", cs, r.per_cell * w, r.l1 * w, -n * w, n * w),
        Part("count", "count", ct, r.per_cell, r.l1, 0, n),
    )


def _substitute_parts(
    query: Query, schema: Schema, fp: FixedPoint, r: Reach, cells: int
) -> tuple[Part, ...]:
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
    return (Part("mean", "mean", Fraction(1), sens, sens, fp.lower_q, fp.upper_q),)


# -- accuracy ---------------------------------------------------------------------------------
def _statement(
    compiled: Compiled, confidence: float, notes: tuple[str, ...], accuracy: float
) -> AccuracyStatement:
    return AccuracyStatement(compiled.query, compiled.epsilon, confidence, accuracy, notes=notes)


def _count_accuracy(
    compiled: Compiled, noises: Sequence[Noise], confidence: float, alpha: float,
    notes: tuple[str, ...], targets: bool,
) -> AccuracyStatement:  # fmt: skip
    a = part_accuracies(compiled, noises, alpha)["count"]
    if not compiled.query.grid_counts:  # the integer nearest: docs/utility.md, "Integer counts"
        a = float(math.floor(a + 0.5))
    return _statement(compiled, confidence, notes, a)


def _sum_accuracy(
    compiled: Compiled, noises: Sequence[Noise], confidence: float, alpha: float,
    notes: tuple[str, ...], targets: bool,
) -> AccuracyStatement:  # fmt: skip
    a, fp = part_accuracies(compiled, noises, alpha), compiled.fixed
    assert fp is not None
    return _statement(compiled, confidence, notes, up(a["sum"] * float(fp.quantum)))


def _substitute_accuracy(
    compiled: Compiled, noises: Sequence[Noise], confidence: float, alpha: float,
    notes: tuple[str, ...], targets: bool,
) -> AccuracyStatement:  # fmt: skip
    a, fp = part_accuracies(compiled, noises, alpha), compiled.fixed
    assert fp is not None
    acc = min(up(a["mean"] * float(fp.quantum)), float(fp.width * fp.quantum))
    return _statement(compiled, confidence, notes, acc)


def _mean_accuracy(
    compiled: Compiled, noises: Sequence[Noise], confidence: float, alpha: float,
    notes: tuple[str, ...], targets: bool,
) -> AccuracyStatement:  # fmt: skip
    a, fp = part_accuracies(compiled, noises, alpha), compiled.fixed
    assert fp is not None
    q, kinds = float(fp.quantum), _kinds(noises)
    # planning: the combination at |m| <= W, the most a row states (docs/utility.md, "Means")
    num = up(ratio_bound.mean_plan(kinds, alpha, float(fp.width)) / 2 * q)
    cap = float(fp.width * fp.quantum)
    return AccuracyStatement(
        compiled.query, compiled.epsilon, confidence, None, num, cap, notes,
        count_accuracy=a["count"], sum_accuracy=up(a["csum"] / 2 * q),
        kinds=kinds, alpha=alpha,
    )  # fmt: skip


def _kinds(noises: Sequence[Noise]) -> tuple[NoiseKind, ...]:
    """The parts' never-clamped errors, in the parts' order (for the rows' combined ±)."""
    return tuple(noise_kind(n.parameters()) for n in noises)


def _spread_accuracy(
    compiled: Compiled, noises: Sequence[Noise], confidence: float, alpha: float,
    notes: tuple[str, ...], targets: bool,
) -> AccuracyStatement:  # fmt: skip
    fp, stat, kinds = compiled.fixed, compiled.query.statistic, _kinds(noises)
    assert fp is not None
    q, w = float(fp.quantum), fp.width
    if stat in ("var_samp", "std_samp"):  # docs/sql.md, "Sample variance"
        return _sample_statement(compiled, confidence, notes, kinds, alpha)
    cap = float(Fraction(w * w, 4) * fp.quantum**2)  # V: the largest population variance
    if stat == "std":
        cap = float(Fraction(w, 2) * fp.quantum)
    # planning: the combination at the public weights, the most a row states (its first step;
    # docs/utility.md, "Variance and std")
    t_z, t_1 = ratio_bound.variance_plan(kinds, alpha, float(w))
    return AccuracyStatement(
        compiled.query, compiled.epsilon, confidence, None, up(t_z / 4 * q * q), cap, notes,
        kinds=kinds, alpha=alpha, square=up(t_1 * t_1 / 4 * q * q),
    )  # fmt: skip


# -- exact inputs -----------------------------------------------------------------------------
def _read_sum(c: Compiled, agg: Aggregates, j: int) -> list[int | Fraction]:
    return list(agg.sums[j])


def _read_count(c: Compiled, agg: Aggregates, j: int) -> list[int | Fraction]:
    return list(agg.counts[j])


def _read_squares(c: Compiled, agg: Aggregates, j: int) -> list[int | Fraction]:
    squares = agg.squares[j]
    assert squares is not None
    return list(squares)


def _read_csum(c: Compiled, agg: Aggregates, j: int) -> list[int | Fraction]:
    assert c.fixed is not None
    mid2 = c.fixed.lower_q + c.fixed.upper_q
    return [2 * s - n * mid2 for s, n in zip(agg.sums[j], agg.counts[j], strict=True)]


def _read_mean(c: Compiled, agg: Aggregates, j: int) -> list[int | Fraction]:
    rows = c.schema.rows  # Σq / n with the declared public n
    assert rows is not None
    return [Fraction(s, rows) for s in agg.sums[j]]


#: A part's source: how its exact values per cell are read, and its unit given the quantum.
_SOURCES: dict[
    str, tuple[Callable[[Compiled, Aggregates, int], list[int | Fraction]], Callable[[str], str]]
] = {
    "sum": (_read_sum, lambda q: q),
    "count": (_read_count, lambda q: "1 row"),
    "squares": (_read_squares, lambda q: f"({q})² (centred, doubled)"),
    "csum": (_read_csum, lambda q: f"{q} (centred, doubled)"),
    "mean": (_read_mean, lambda q: q),
}


def _count_inputs(
    compiled: Compiled, aggregates: Aggregates, value_index: int | None
) -> dict[str, list[int | Fraction]]:
    return {part.name: list(aggregates.rows) for part in compiled.parts}


def _value_inputs(
    compiled: Compiled, aggregates: Aggregates, value_index: int | None
) -> dict[str, list[int | Fraction]]:
    assert value_index is not None and compiled.fixed is not None
    return {
        p.name: _SOURCES[p.source][0](compiled, aggregates, value_index) for p in compiled.parts
    }


def _count_unit(part: Part, fp: FixedPoint | None) -> str:
    return "1 row"


def _value_unit(part: Part, fp: FixedPoint | None) -> str:
    assert fp is not None
    return _SOURCES[part.source][1](str(fp.quantum))


# -- results ----------------------------------------------------------------------------------
def _scale(compiled: Compiled) -> tuple[FixedPoint, float, float, float]:
    fp = compiled.fixed
    assert fp is not None
    scale = float(10**fp.decimals)
    return fp, scale, float(fp.lower_q) / scale, float(fp.upper_q) / scale


def _count_rows(
    compiled: Compiled, statement: AccuracyStatement, noisy: Noisy, i: int,
    keys: tuple[Key | str, ...],
) -> list[ResultRow]:  # fmt: skip
    assert statement.accuracy is not None
    return [ResultRow(keys, float(noisy["count"][i]), statement.accuracy)]


def _rows_of(key: str) -> Callable[..., list[ResultRow]]:
    """The rows of a kind whose ± depends on public parameters only (sum, substitute mean)."""

    def rows(
        compiled: Compiled, statement: AccuracyStatement, noisy: Noisy, i: int,
        keys: tuple[Key | str, ...],
    ) -> list[ResultRow]:  # fmt: skip
        _fp, scale, _lo, _hi = _scale(compiled)
        assert statement.accuracy is not None
        return [ResultRow(keys, float(noisy[key][i]) / scale, statement.accuracy)]

    return rows


def _mean_rows(
    compiled: Compiled, statement: AccuracyStatement, noisy: Noisy, i: int,
    keys: tuple[Key | str, ...],
) -> list[ResultRow]:  # fmt: skip
    fp, scale, lo, hi = _scale(compiled)
    assert statement.cap is not None
    n = float(noisy["count"][i])
    centre = (lo + hi) / 2
    if not n > 0:
        return [ResultRow(keys, centre, statement.cap)]
    half = (hi - lo) / 2
    total = float(noisy["csum"][i])
    deviation = min(max(total / 2 / scale / n, -half), half)
    value = min(max(centre + deviation, lo), hi)
    acc = statement.cap
    if _inside(compiled, noisy, i) and statement.alpha is not None:
        err = ratio_bound.mean_error(statement.kinds, statement.alpha, n, total, float(fp.width))
        acc = min(acc, up(err / 2 / scale))
    return [ResultRow(keys, value, acc)]


def _inside(compiled: Compiled, noisy: Noisy, i: int, at_floor: str | None = None) -> bool:
    """Whether no mechanism's clamp moved a part of cell i, as the combined ± needs: every part
    strictly inside its bounds, except that the part named ``at_floor`` may also sit at its
    lower bound (docs/utility.md, "Means", "Variance and std")."""
    for p in compiled.parts:
        value, lower, upper = float(noisy[p.name][i]), float(p.lower), float(p.upper)
        if p.name == at_floor and value == lower:
            continue
        if not ratio_bound.unclamped(value, lower, upper):
            return False
    return True


def _spread_rows(
    compiled: Compiled, statement: AccuracyStatement, noisy: Noisy, i: int,
    keys: tuple[Key | str, ...],
) -> list[ResultRow]:  # fmt: skip
    fp, scale, _lo, _hi = _scale(compiled)
    stat = compiled.query.statistic
    assert statement.cap is not None
    n = float(noisy["count"][i])
    w = float(fp.width)
    spread = _released_spread(noisy, i, n)  # Â/ñ − (Ŝ/ñ)², unclamped (w units squared)
    var_q = w * w / 8 if spread is None else min(max(spread, 0.0), w * w) / 4
    var = var_q / (scale * scale)
    if statement.largest is not None:  # a sample form (docs/sql.md, "Sample variance")
        raw = None if spread is None else spread / 4 / (scale * scale)
        return _sample_rows(compiled, statement, noisy, i, keys, raw)
    if not n > 0:
        return [ResultRow(keys, (math.sqrt(var) if stat == "std" else var), statement.cap)]
    # the variance's ± from the parts' combined error (docs/utility.md, "Variance and std")
    a_var = statement.cap if stat != "std" else statement.cap**2
    if spread is not None and _spread_inside(compiled, noisy, i) and statement.alpha is not None:
        err = ratio_bound.variance_error(
            statement.kinds, statement.alpha, n, float(noisy["squares"][i]),
            float(noisy["csum"][i]), w,
        )  # fmt: skip
        a_var = min(a_var, up(err / 4 / (scale * scale)))
    if stat != "std":
        return [ResultRow(keys, var, a_var)]
    return [ResultRow(keys, math.sqrt(var), std_accuracy(var, a_var, statement.cap))]


def _sample_statement(
    compiled: Compiled, confidence: float, notes: tuple[str, ...], kinds: tuple[NoiseKind, ...],
    alpha: float,
) -> AccuracyStatement:  # fmt: skip
    """A sample form's statement: the combination at the public weights, (T_Z + T₁²/ñ)/(ñ − 1)
    capped at 2V, the first step of what every row iterates, so at least what a row with that ñ
    states (docs/utility.md, "Variance and std"); above per_count/ñ for every ñ > 1 (the
    planner's floor search starts there)."""
    fp = compiled.fixed
    assert fp is not None
    q, w = float(fp.quantum), fp.width
    largest = Fraction(w * w, 4) * fp.quantum**2  # V: the largest population variance
    cap = float(2 * largest)
    if compiled.query.statistic == "std_samp":
        cap = up(math.sqrt(cap))
    t_z, t_1 = ratio_bound.sample_plan(kinds, alpha, float(w))
    return AccuracyStatement(
        compiled.query, compiled.epsilon, confidence, None, up(t_z / 4 * q * q), cap,
        (*notes, sample_variance.FALLBACK_NOTE), largest=up(float(largest)), kinds=kinds,
        alpha=alpha, square=up(t_1 * t_1 / 4 * q * q),
    )  # fmt: skip


def _sample_rows(
    compiled: Compiled, statement: AccuracyStatement, noisy: Noisy, i: int,
    keys: tuple[Key | str, ...], spread: float | None,
) -> list[ResultRow]:  # fmt: skip
    """A sample form's row from the released population spread ``spread`` (Â/ñ − (Ŝ/ñ)² in
    values squared, not clamped; None when it is not a finite number): ñ <= 1 the fallback; a
    row whose parts are inside their bounds states the combination iterated from what is
    released, any other (and one without a finite spread: the middle V) the whole range
    (docs/utility.md, "Variance and std"; docs/sql.md, "Sample variance")."""
    fp, scale, _lo, _hi = _scale(compiled)
    root = compiled.query.statistic in ROOT_STATISTICS
    n, w = float(noisy["count"][i]), float(fp.width)
    largest = w * w / 4 / (scale * scale)
    var_s = (
        largest if spread is None else sample_variance.sample_value(spread, n, largest, root=False)
    )
    value = math.sqrt(var_s) if root else var_s  # as sample_value(root=True)
    if not n > 1:
        return [ResultRow(keys, value, statement.at(n))]
    assert statement.cap is not None
    whole = up(2 * largest)
    a_var = whole
    if spread is not None and _spread_inside(compiled, noisy, i) and statement.alpha is not None:
        err = ratio_bound.sample_error(
            statement.kinds, statement.alpha, n, float(noisy["squares"][i]),
            float(noisy["csum"][i]), w,
        )  # fmt: skip
        a_var = min(whole, up(err / 4 / (scale * scale)))
    if not root:
        return [ResultRow(keys, value, min(statement.cap, a_var))]
    return [ResultRow(keys, value, std_accuracy(var_s, a_var, statement.cap))]


def _released_spread(noisy: Noisy, i: int, n: float) -> float | None:
    """Â/ñ − (Ŝ/ñ)² of cell i (w units squared), the spread the released parts give before any
    clamp; None when ñ <= 0 or it is not a finite number (parts at their far bounds over a
    tiny ñ): such a cell gets the middle of the range and the whole range as its ±."""
    if not n > 0:
        return None
    m1, m2 = float(noisy["csum"][i]) / n, float(noisy["squares"][i]) / n
    spread = m2 - m1 * m1
    return spread if math.isfinite(spread) else None


def _spread_inside(compiled: Compiled, noisy: Noisy, i: int) -> bool:
    """:func:`_inside`, Σ̂w² allowed at 0: raising it to 0 only brings v̂ closer. The spread
    itself is clamped into its range only at the end, which holds the truth, so that clamp never
    adds error (docs/utility.md, "Variance and std")."""
    return _inside(compiled, noisy, i, at_floor="squares")


def std_accuracy(var: float, a_var: float, cap: float) -> float:
    """The ± of √v̂ when |v̂ − v| <= a_var: √v lies in [√max(v̂ − a_var, 0), √(v̂ + a_var)], so
    |√v̂ − √v| is at most the larger distance from √v̂ to those ends; never above the cap."""
    root = math.sqrt(var)
    above = a_var / (math.sqrt(var + a_var) + root) if var + a_var > 0 else 0.0
    below = root - math.sqrt(max(var - a_var, 0.0))
    if var > a_var:
        below = a_var / (root + math.sqrt(var - a_var))
    return min(cap, up(up(max(above, below)) * (1 + 2**-40)))


COUNT = Kind(_compile_count, _count_accuracy, _count_inputs, _count_rows, _count_unit)
SUM = Kind(_compiler(_sum_parts), _sum_accuracy, _value_inputs, _rows_of("sum"), _value_unit)
MEAN = Kind(_compiler(_mean_parts), _mean_accuracy, _value_inputs, _mean_rows, _value_unit)
SUBSTITUTE_MEAN = Kind(
    _compiler(_substitute_parts), _substitute_accuracy, _value_inputs, _rows_of("mean"),
    _value_unit,
)  # fmt: skip
SPREAD = Kind(_compiler(_spread_parts), _spread_accuracy, _value_inputs, _spread_rows, _value_unit)
