"""Counts are released as integers by default, their ± covering the rounding; ``grid_counts``
keeps the grid value (docs/utility.md, "Integer counts")."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from tests.unit.data._engines import oracle_engine
from tests.unit.data.test_release_api import SCHEMA, _rows

from snapdp.data import PrivateTable, Query
from snapdp.data.output.postprocess import nearest_integer
from snapdp.errors import ParameterError

EPSILON = 40  # Λ < 1 here: the grid holds non-integers (e.g. 2000.125)


def _release(query: Query, seed: int) -> list[tuple[float | int, float]]:
    table = PrivateTable(
        schema=SCHEMA, engine=oracle_engine(_rows()), total_epsilon=100,
        rng=np.random.default_rng(seed),
    )  # fmt: skip
    (result,) = table.release([query], EPSILON)
    return [(row.value, row.accuracy) for row in result.rows]


def test_a_count_is_an_integer_whose_plus_minus_covers_the_rounding() -> None:
    grid = Query("count", by=("sex", "region"), grid_counts=True)
    whole = Query("count", by=("sex", "region"))
    saw_fraction = False
    for seed in range(20):
        on_grid, integral = _release(grid, seed), _release(whole, seed)
        for (g, a_grid), (v, a) in zip(on_grid, integral, strict=True):
            saw_fraction |= g != int(g)
            assert type(v) is int and v == nearest_integer(g)
            assert a == math.floor(a_grid + 0.5) and a.is_integer()
    assert saw_fraction  # the option keeps the grid value


def test_the_stated_integer_plus_minus_holds_for_every_integer_truth() -> None:
    # |ŷ − n| <= a and n an integer give |round(ŷ) − n| <= ⌊a + 1/2⌋, at every tie
    for a in (Fraction(0), Fraction(1, 4), Fraction(1, 2), Fraction(5, 2), Fraction(37, 10)):
        for k in range(-80, 81):
            err = Fraction(k, 16)
            if abs(err) <= a:
                assert abs(nearest_integer(err)) <= math.floor(a + Fraction(1, 2))


def test_grid_counts_is_for_counts_only() -> None:
    with pytest.raises(ParameterError, match="grid_counts"):
        Query("sum", "age", grid_counts=True)
