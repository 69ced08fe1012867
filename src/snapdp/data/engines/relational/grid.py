"""Bins on an evenly spaced grid by exact arithmetic (issue 32; docs/data.md, "Run time").

A quantile's leaves and grid, and bins such as ``0, 10, 20, …``, are mostly a run of edges
e_k = e_0 + k·w. For those, p = #{j : e_j ≤ v} (the comparison tree's count, whose bin is p − 1
when 1 ≤ p ≤ n − 1) is computed with a constant number of operations, whatever the number of
edges, and the rendered query stays a few hundred characters long (DuckDB plans a comparison
tree in time growing with its size and copies the cast value into each of its comparisons):

* an integer column: ⌊(clamp(v, e_0 − 1, e_last) − e_0 + w) / w⌋ in BIGINT arithmetic; when
  the ceilings are uneven but the declared edges are a rational run x_k = x_0 + k·W (an integer
  quantile's leaves over a span that is no multiple of their number), the same count from
  ⌈x⌉ ≤ v ⟺ x ≤ v, scaled by W's denominator (:func:`_rational_count`), when no step of it can
  leave a long (else the tree: the whole of int64 in 1,024 leaves);
* a decimal column whose run is dyadic, e_k = (A + k·W)·2^q with q ≤ 0 and |A + k·W| < 2^53 (so
  each edge is a double, exactly the double the tree compares with): the clamped value scaled by
  2^−q (exact: a power of two, no overflow after the clamp), floored (exact: an integral
  double below 2^53), then the integer formula: e_k ≤ v ⟺ A + k·W ≤ ⌊v·2^−q⌋.

Every other edge (at most :data:`GRID_OTHERS`) adds one comparison, as the tree makes it. The
numerators are never negative, so truncating and floor division agree in both engines.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

from sqlglot import exp

from snapdp.data.engines.base import INT64_MAX, INT64_MIN, bin_edges
from snapdp.data.engines.relational.topn import node_type
from snapdp.data.model.schema import Column

__all__ = ["GRID_MIN", "GRID_OTHERS", "grid_index"]

#: the fewest edges worth the arithmetic, and the most edges it leaves to single comparisons
GRID_MIN, GRID_OTHERS = 8, 4
_EXACT = 1 << 53  # integers below this are doubles
_MAX_SHIFT = 1000  # 2^-q stays a finite double


def _long(x: int) -> exp.Expression:
    text = str(x)
    lit = exp.Literal.number(text.lstrip("-"))
    return exp.Cast(this=exp.Neg(this=lit) if x < 0 else lit, to=node_type("BIGINT"))


def _double(x: float) -> exp.Expression:
    text = "Infinity" if x == math.inf else "-Infinity" if x == -math.inf else repr(x)
    return exp.Cast(this=exp.Literal.string(text), to=node_type("DOUBLE"))


def _one_if(condition: exp.Expression) -> exp.Expression:
    one, zero = exp.Literal.number("1"), exp.Literal.number("0")
    return exp.Case().when(condition, one, copy=False).else_(zero, copy=False)


def _run(scaled: list[int | None], limit: int) -> tuple[int, int, int] | None:
    """(i, m, w): the longest run of ``m`` values ``s_i, s_i + w, …`` (w ≥ 1, none None) with
    every value strictly within (−limit, limit) and m·w below 2^63, if it holds all edges but at
    most :data:`GRID_OTHERS` and at least :data:`GRID_MIN`; else None. m·w is the largest
    numerator of :func:`_count` (every step of it then fits in a long: no overflow, so neither
    engine raises for any value); a quantile's leaves over [0, 2^63 − 1] reach 1,023·2^53."""
    best: tuple[int, int, int] | None = None
    i = 0
    while i < len(scaled) - 1:
        k = i
        first, second = scaled[i], scaled[i + 1]
        if first is not None and second is not None:
            w, k, last = second - first, i + 1, second
            while k + 1 < len(scaled) and (nxt := scaled[k + 1]) is not None and nxt - last == w:
                k, last = k + 1, nxt
            lo, hi = i, k
            while lo <= hi and _value(scaled, lo) <= -limit:
                lo += 1
            while hi >= lo and _value(scaled, hi) >= limit:
                hi -= 1
            longer = best is None or hi - lo + 1 > best[1]
            if w >= 1 and hi > lo and (hi - lo + 1) * w < 1 << 63 and longer:
                best = (lo, hi - lo + 1, w)
        i = max(k, i + 1)
    if best is None or best[1] < GRID_MIN or len(scaled) - best[1] > GRID_OTHERS:
        return None
    return best


def _value(scaled: list[int | None], j: int) -> int:
    x = scaled[j]
    assert x is not None
    return x


def _shift(bins: tuple[Fraction, ...]) -> int:
    """q ≤ 0: minus the largest binary exponent of a dyadic edge's denominator (0 if none)."""
    dens = [e.denominator for e in bins if e.denominator & (e.denominator - 1) == 0]
    return -max([d.bit_length() - 1 for d in dens] + [0])


def grid_index(col: Column, value: exp.Expression, typed: bool = True) -> exp.Expression | None:
    """The bin index of ``value`` by grid arithmetic (module doc), or None when the edges are no
    such grid (the caller then builds the comparison tree). Same bin as the tree for every
    value; null for a null value or outside every bin. ``typed``: ``value`` is already a BIGINT
    (an integer column) or a DOUBLE (a decimal one), else it is cast to it."""
    assert col.bins is not None
    edges = bin_edges(col)
    n = len(edges)
    if col.type == "integer":
        ints = [int(e) for e in edges]
        run = _run(list(ints), INT64_MAX + 1)
        v = _as(value, "BIGINT", typed)
        if run is not None:  # its values lie within (INT64_MIN, INT64_MAX] (_run's limit)
            count = _count(_clamp(v, run, ints[run[0]], _long), run, ints[run[0]])
        else:
            rational = _rational_run(col.bins)
            if rational is None:
                return None
            run, count = rational[0], _rational_count(v, col.bins, rational)
        others = [_at_int(v, e) for j, e in enumerate(ints) if not _in(j, run)]
        return _finish(value, count, others, n)
    else:
        q = _shift(col.bins)
        if -q > _MAX_SHIFT:
            return None
        scaled: list[int | None] = []
        for e in col.bins:
            s = e * Fraction(2) ** -q
            scaled.append(int(s) if s.denominator == 1 else None)
        run = _run(scaled, _EXACT - 1)
        if run is None:
            return None
        a = scaled[run[0]]
        assert a is not None
        v = _as(value, "DOUBLE", typed)
        clamp = _clamp(v, run, a, lambda k: _double(math.ldexp(float(k), q)))
        up = exp.Mul(this=exp.Paren(this=clamp), expression=_double(math.ldexp(1.0, -q)))
        floor = exp.Cast(this=exp.Floor(this=up), to=node_type("BIGINT"))
        others = [
            _one_if(exp.GTE(this=v.copy(), expression=_double(float(e))))
            for j, e in enumerate(edges)
            if not _in(j, run)
        ]
        return _finish(value, _count(floor, run, a), others, n)


def _rational_run(bins: tuple[Fraction, ...]) -> tuple[tuple[int, int, int], Fraction] | None:
    """((i, m, 0), W): the longest run of ``m`` edges x_i, x_i + W, … of an integer column (W > 0
    rational, every ⌈x⌉ within (INT64_MIN, INT64_MAX]), if it holds all edges but at most
    :data:`GRID_OTHERS` and at least :data:`GRID_MIN` and its arithmetic (:func:`_rational_count`)
    fits a long; else None. A quantile's leaves over [0, 10^6] are x_k = k·15625/16, over
    [0, 365] k·365/512 (a step below 1: ceilings repeat, empty leaves)."""
    n = len(bins)
    inside = [INT64_MIN < e <= INT64_MAX for e in bins]
    best: tuple[int, int, Fraction] | None = None
    i = 0
    while i < n - 1:
        if not (inside[i] and inside[i + 1]):
            i += 1
            continue
        w, k = bins[i + 1] - bins[i], i + 1
        while k + 1 < n and inside[k + 1] and bins[k + 1] - bins[k] == w:
            k += 1
        if w > 0 and (best is None or k - i + 1 > best[1]):
            best = (i, k - i + 1, w)
        i = k
    if best is None or best[1] < GRID_MIN or n - best[1] > GRID_OTHERS:
        return None
    i, m, w = best
    q = math.lcm(bins[i].denominator, w.denominator)
    if (m + 1) * w * q + 3 * q >= 1 << 63:
        return None
    return (i, m, 0), w


def _rational_count(
    v: exp.Expression, bins: tuple[Fraction, ...], rational: tuple[tuple[int, int, int], Fraction]
) -> exp.Expression:
    """#{k < m : ⌈x_i + k·W⌉ ≤ v} = #{k < m : x_i + k·W ≤ v} for the long ``v``. With Q the
    common denominator of x_i and W, X = x_i·Q, P = W·Q, c = ⌈x_i⌉ − 1, d = ⌈x_last⌉ and
    K = 0 when P ≥ Q, else ⌈Q/P⌉: t = ⌊((clamp(v, c, d) − c)·Q + c·Q − X + (K + 1)·P) / P⌋ − K,
    which is the count when P ≥ Q, and the count clamped to [0, m] otherwise (LEAST, GREATEST).
    The numerator is at least c·Q − X + (K + 1)·P ≥ −Q + (K + 1)·P ≥ 0 and below
    (m + 1)·P + 3·Q < 2^63 (checked by :func:`_rational_run`): no step leaves a long."""
    (i, m, _), w = rational
    q = math.lcm(bins[i].denominator, w.denominator)
    x, p = int(bins[i] * q), int(w * q)
    k = 0 if p >= q else -(-q // p)
    c, d = math.ceil(bins[i]) - 1, math.ceil(bins[i + m - 1])  # exact for a Fraction
    clamp = _between(v.copy(), _long(c), _long(d))
    u = exp.Paren(this=exp.Sub(this=clamp, expression=_long(c)))
    shift = c * q - x + (k + 1) * p
    scaled = exp.Add(this=exp.Mul(this=u, expression=_long(q)), expression=_long(shift))
    count: exp.Expression = exp.IntDiv(this=exp.Paren(this=scaled), expression=_long(p))
    if k:
        count = _between(exp.Sub(this=count, expression=_long(k)), _long(0), _long(m))
    return count


def _in(j: int, run: tuple[int, int, int]) -> bool:
    return run[0] <= j < run[0] + run[1]


def _clamp(
    v: exp.Expression, run: tuple[int, int, int], a: int, lit: Callable[[int], exp.Expression]
) -> exp.Expression:
    """``v`` clamped to [s_i − 1, s_last] (in the run's units, as literals made by ``lit``)."""
    _, m, w = run
    return _between(v, lit(a - 1), lit(a + (m - 1) * w))


def _between(v: exp.Expression, low: exp.Expression, high: exp.Expression) -> exp.Expression:
    """``v`` clamped to [low, high] (null stays null)."""
    at_least = exp.Greatest(ignore_nulls=True, this=v, expressions=[low])
    return exp.Least(ignore_nulls=True, this=at_least, expressions=[high])


def _count(floor: exp.Expression, run: tuple[int, int, int], a: int) -> exp.Expression:
    """#{k < m : s_i + k·w ≤ f} for f in [s_i − 1, s_last]: ⌊(f − s_i + w)/w⌋ (≥ 0 numerator)."""
    _, _, w = run
    diff = exp.Sub(this=floor, expression=_long(a))  # in [-1, (m - 1)·w]
    if w == 1:
        return exp.Add(this=diff, expression=_long(1))
    return exp.IntDiv(this=exp.Paren(this=exp.Add(this=diff, expression=_long(w))),
                      expression=_long(w))  # fmt: skip


def _as(value: exp.Expression, type_: str, typed: bool) -> exp.Expression:
    """A copy of ``value``, cast to ``type_`` unless it is ``typed`` already."""
    return value.copy() if typed else exp.Cast(this=value.copy(), to=node_type(type_))


def _at_int(v: exp.Expression, e: int) -> exp.Expression | int:
    """[e ≤ v] for the long ``v``: a constant past int64, else one comparison."""
    if e <= INT64_MIN:
        return 1
    if e > INT64_MAX:
        return 0
    return _one_if(exp.GTE(this=v.copy(), expression=_long(e)))


def _finish(
    value: exp.Expression, count: exp.Expression, others: list[exp.Expression | int], n: int
) -> exp.Expression:
    """CASE WHEN v IS NOT NULL THEN (p − 1 when 0 ≤ p − 1 ≤ n − 2) END, p = count + others."""
    fixed = -1 + sum(o for o in others if isinstance(o, int))
    total = count
    for o in others:
        if not isinstance(o, int):
            total = exp.Add(this=total, expression=o)
    p = exp.Paren(this=exp.Add(this=total, expression=_long(fixed)) if fixed else total)
    inside = exp.Between(this=p, low=exp.Literal.number("0"), high=exp.Literal.number(str(n - 2)))
    guard = exp.Not(this=exp.Is(this=value.copy(), expression=exp.Null()))
    checked = exp.Case().when(inside, p.copy(), copy=False)
    return exp.Case().when(guard, checked, copy=False)
