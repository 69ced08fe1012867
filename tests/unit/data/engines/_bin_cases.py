"""Bin declarations and values for the run-time tests of the bin search (issue 30 item 3): the
edges of a quantile tree and an exponential grid, rational edges, edges past int64 and past the
doubles, edges whose integer ceiling or nearest double coincide (an empty bin), and per column
values on, next to and between every edge, ±0 and the extremes of the type.

Also a walker that counts, for every root-to-leaf path of a nested CASE, the comparisons made
along it (the conditions of the branches tried before and at the one taken)."""

from __future__ import annotations

import math
import random
import sys
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import TypeVar

from snapdp.data.engines.base import bin_edges
from snapdp.data.model.schema import Column

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
F = Fraction


def _int(name: str, edges: Sequence[Fraction | int]) -> Column:
    return Column(name, "integer", bins=tuple(F(e) for e in edges))


def _dec(name: str, edges: Sequence[Fraction | int]) -> Column:
    return Column(name, "decimal", bins=tuple(F(e) for e in edges))


INT_COLUMNS = [
    _int("tree", [-(1 << 63), *range(0, 1001, 1), 1 << 63]),  # a quantile tree's leaves
    _int("wide", [-(1 << 63), 0, 1 << 62, 1 << 63]),
    _int("halves", [F(1, 2), F(5, 2), F(9, 2)]),
    _int("same_ceiling", [F(1, 5), F(1, 2), F(1), F(3), F(7, 2)]),  # ⌈e⌉: 1, 1, 1, 3, 4
    _int("past_int64", [-(1 << 70), -(1 << 64), INT64_MIN, -7, 0, INT64_MAX, 1 << 64, 1 << 70]),
    _int("irregular", [-1000, -3, -2, 0, 5, 17, 18, 1 << 40, INT64_MAX]),
    _int("two", [0, 10]),
]
DEC_COLUMNS = [
    _dec("grid", [-(1 << 1024), *(F(i, 3) for i in range(0, 301)), 1 << 1024]),  # width 1/3
    _dec("past_doubles", [-(1 << 1025), -(1 << 1024), 0, 1 << 1024, 1 << 1025]),
    _dec("same_double", [0, F(1, 10), F(1, 10) + F(1, 10**30), F(1, 5), 1]),
    _dec("tiny", [-1, F(1, 10**320), F(2, 10**320), 1]),  # subnormal edges
    _dec("irregular", [-F(7, 2), -1, 0, F(1, 3), 2, 1000, F(10**300)]),
]


_W73 = INT64_MAX // 73  # 73·w = 2^63 − 1 exactly
# Even integer grids whose arithmetic reaches the end of int64 (issue 32): a quantile's 1,024
# leaves over [0, 2^63 − 1] (⌈i·(2^63 − 1)/1024⌉ = i·2^53, the long differential's
# `--quantiles`), and runs of 73 edges w apart with 73·w = 2^63 − 1, the largest numerator the
# arithmetic may compute (at the bottom and at the top of int64).
SPAN_COLUMNS = [
    _int("quantile_to_int64_max", [INT64_MIN, *(F(i * INT64_MAX, 1024) for i in range(1, 1024)),
                                   1 << 63]),
    _int("full_span_low", [INT64_MIN + 1 + k * _W73 for k in range(73)]),
    _int("full_span_high", [k * _W73 for k in range(1, 74)]),
]  # fmt: skip

_P = (
    INT64_MAX // 21 - 1
)  # a step P/3 (P not a multiple of 3) whose arithmetic just fits: 21·P < 2^63
# Integer edges on a rational grid x₀ + k·W (⌈x⌉ uneven): quantile leaves over [0, 10^6] and
# [0, 12345] (1,024 leaves), over [0, 365] (512 leaves, W < 1: ceilings repeat), a step of 2/7,
# and steps P/3 with (m + 1)·P just below 2^63 at the bottom and at the top of int64.
RATIONAL_COLUMNS = [
    _int("income_leaves", [INT64_MIN, *(F(k * 15625, 16) for k in range(1, 1024)), 1 << 63]),
    _int("leaves_12345", [INT64_MIN, *(F(k * 12345, 1024) for k in range(1, 1024)), 1 << 63]),
    _int("days_leaves", [INT64_MIN, *(F(k * 365, 512) for k in range(1, 512)), 1 << 63]),
    _int("thin", [F(-7, 3) + k * F(2, 7) for k in range(40)]),
    _int("thirds_low", [F(3 * INT64_MIN + 1, 3) + k * F(_P, 3) for k in range(20)]),
    _int("thirds_high", [F(3 * INT64_MAX - 19 * _P, 3) + k * F(_P, 3) for k in range(20)]),
]


def int_values(column: Column, rng: random.Random) -> list[int]:
    """Every edge within int64 and its neighbours, the ends of int64, 0 and random values."""
    out = {INT64_MIN, INT64_MIN + 1, INT64_MAX, INT64_MAX - 1, 0, -1, 1}
    for e in bin_edges(column):
        assert isinstance(e, int)
        out.update(x for x in (e - 1, e, e + 1) if INT64_MIN <= x <= INT64_MAX)
    out.update(rng.randint(INT64_MIN, INT64_MAX) for _ in range(50))
    out.update(rng.randint(-2000, 2000) for _ in range(200))
    return sorted(out)


def dec_values(column: Column, rng: random.Random) -> list[float]:
    """Every finite edge and the doubles next to it, ±0, ±the largest and smallest doubles, and
    random values (no NaN or ±inf: the cast makes them null)."""
    big, tiny = sys.float_info.max, 5e-324
    out = [0.0, -0.0, big, -big, tiny, -tiny, 1.0, -1.0]
    for e in bin_edges(column):
        if math.isfinite(e):
            out += [e, math.nextafter(e, math.inf), math.nextafter(e, -math.inf)]
            out += [-e]
    out += [rng.uniform(-10, 1100) for _ in range(200)]
    out += [rng.choice((-1, 1)) * 10.0 ** rng.uniform(-320, 308) for _ in range(100)]
    return [x for x in out if math.isfinite(x)]


N = TypeVar("N")


def path_costs(
    node: N,
    case: Callable[[N], tuple[list[tuple[N, N]], N | None] | None],
    comparisons: Callable[[N], int],
) -> list[int]:
    """Per root-to-leaf path of nested CASEs: the comparisons made along it. ``case`` returns a
    CASE node's (condition, result) branches and ELSE (None: no ELSE, a NULL leaf), or None for
    a leaf; ``comparisons`` counts the comparisons in a condition."""
    parts = case(node)
    if parts is None:
        return [0]
    branches, default = parts
    out: list[int] = []
    spent = 0
    for condition, result in branches:
        spent += comparisons(condition)
        out += [spent + c for c in path_costs(result, case, comparisons)]
    out += [spent + c for c in path_costs(default, case, comparisons)] if default else [spent]
    return out
