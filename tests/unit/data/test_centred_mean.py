"""A ratio mean sums deviations from the centre of the bounds, adding the centre back exactly,
and states the ± solved with the released deviation (docs/utility.md, "Means")."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from tests.unit.data._engines import oracle_engine
from tests.unit.data.test_release_api import SCHEMA, _rows

from snapdp.data import Column, PrivateTable, Query, Schema
from snapdp.data.statistics import accuracy_of, calibrate, compile_query


def test_the_sum_part_moves_by_half_the_width_not_the_largest_bound() -> None:
    schema = Schema((Column("v", "integer", 0, 100),))
    c = compile_query(Query("mean", "v"), schema, Fraction(1))
    parts = {p.name: p for p in c.parts}
    # Σ(2v − L − U) moves by W = 100, i.e. Σ(v − 50) by 50; Σv would move by 100
    assert parts["csum"].per_cell == 100 and parts["count"].per_cell == 1
    assert sum(p.weight for p in c.parts) == 1


def test_the_statement_halves_for_bounds_from_zero() -> None:
    schema = Schema((Column("v", "integer", 0, 100),))
    c = compile_query(Query("mean", "v"), schema, Fraction(1))
    s = accuracy_of(c, calibrate(c), 0.95, 0.05)
    assert s.sum_accuracy is not None and s.count_accuracy is not None and s.per_count is not None
    # at most the union bound (a_s + (W/2)·a_n), a_s the ± of a sum of sensitivity W/2 = 50: the
    # planning figure is the parts' combination at |m| <= W/2 (issue 33), well below it
    union = s.sum_accuracy + 50 * s.count_accuracy
    assert s.per_count <= union * (1 + 1e-9) and s.per_count < 0.9 * union
    # the rows' ± comes from the parts' combined error (tests/unit/data/test_spread_accuracy.py)
    assert s.alpha == 0.05 and len(s.kinds) == 2


def test_a_released_mean_is_the_centre_plus_the_mean_deviation() -> None:
    rows = [{**r, "pid": str(i)} for i, r in enumerate(_rows())]  # one row per unit: none dropped
    table = PrivateTable(
        schema=SCHEMA, engine=oracle_engine(rows), total_epsilon=100,
        rng=np.random.default_rng(3),
    )  # fmt: skip
    (result,) = table.release([Query("mean", "age", by=("sex",))], 50)
    truth = {0: np.mean([20 + i % 50 for i in range(0, 600, 2)]),
             1: np.mean([20 + i % 50 for i in range(1, 600, 2)])}  # fmt: skip
    for row in result.rows:
        assert abs(row.value - truth[row.keys[0]]) <= row.accuracy
