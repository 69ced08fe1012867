"""Sensitivities checked by brute force over neighbouring tables (DESIGN §8).

Small random tables, each unit with at most k rows, values partly outside the bounds and partly
null; for every unit, the table without it is a neighbour. Every per-group aggregate must change
by at most its declared sensitivity, at most m = min(k, #groups) groups may change, and the
aggregates must lie inside the mechanism bounds derived from the declared maximum row count.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from snapdp.data.duckdb_engine import DuckDBEngine
from snapdp.data.engine import AggregatePlan, ColumnPlan
from snapdp.data.sensitivity import (
    count_spec,
    fixed_point,
    groups_touched,
    substitute_mean_spec,
    sum_spec,
)


def _table(rng: np.random.Generator, units: int, k: int) -> pd.DataFrame:
    rows = []
    for u in range(units):
        for _ in range(int(rng.integers(1, k + 1))):
            v = float(rng.choice([rng.uniform(-80, 160), np.nan, 1e300, -np.inf]))
            rows.append({"pid": u, "g": int(rng.integers(0, 4)), "x": v})
    return pd.DataFrame(rows)


@pytest.mark.parametrize(("seed", "k", "lower", "upper"), [(1, 1, -10.5, 100.25), (2, 3, 5.0, 50.0),
                                                           (3, 2, -60.0, -1.5)])  # fmt: skip
@pytest.mark.parametrize("nulls", ["drop", "upper"])
def test_removing_one_unit_changes_each_aggregate_by_at_most_delta(
    seed: int, k: int, lower: float, upper: float, nulls: str
) -> None:
    rng = np.random.default_rng(seed)
    df = _table(rng, units=12, k=k)
    n_max = 60
    fp = fixed_point("x", lower, upper, n_max)
    keys = ("0", "1", "2", "7")
    plan = AggregatePlan(
        columns=(ColumnPlan("x", fp.decimals, fp.lower_q, fp.upper_q, nulls),),  # type: ignore[arg-type]
        privacy_unit="pid",
        max_rows_per_unit=k,
        by="g",
        keys=keys,
    )
    eps = Fraction(1)
    c_spec = count_spec(eps, k, n_max)
    s_spec = sum_spec(eps, k, fp, n_max)
    m = groups_touched(k, len(keys))
    full = DuckDBEngine(df).aggregate(plan)
    for agg in (full,):
        assert np.all((agg.rows >= c_spec.lower) & (agg.rows <= c_spec.upper))
        sums = agg.columns[0].sums
        assert np.all((sums >= s_spec.lower) & (sums <= s_spec.upper))
    for u in df["pid"].unique():
        nb = DuckDBEngine(df[df["pid"] != u].reset_index(drop=True)).aggregate(plan)
        d_rows = np.abs(full.rows - nb.rows)
        d_sums = np.abs(full.columns[0].sums - nb.columns[0].sums)
        d_counts = np.abs(full.columns[0].counts - nb.columns[0].counts)
        assert d_rows.max() <= c_spec.sensitivity
        assert d_counts.max() <= c_spec.sensitivity
        assert d_sums.max() <= s_spec.sensitivity
        changed = (d_rows > 0) | (d_sums > 0) | (d_counts > 0)
        assert changed.sum() <= m


def test_the_sum_bound_is_attained_so_it_is_not_loose() -> None:
    fp = fixed_point("x", -3.0, 2.0, 10)
    df = pd.DataFrame({"pid": [1, 1, 2], "x": [-1e9, -1e9, 1.0]})
    plan = AggregatePlan(columns=(ColumnPlan("x", fp.decimals, fp.lower_q, fp.upper_q, "error"),),
                         privacy_unit="pid", max_rows_per_unit=2)  # fmt: skip
    full = DuckDBEngine(df).aggregate(plan).columns[0].sums[0]
    nb = DuckDBEngine(df[df.pid != 1]).aggregate(plan).columns[0].sums[0]
    assert abs(full - nb) == sum_spec(Fraction(1), 2, fp, 10).sensitivity


def test_substitute_mean_sensitivity_by_brute_force() -> None:
    rng = np.random.default_rng(5)
    n, lower, upper = 7, -2.5, 4.0
    fp = fixed_point("x", lower, upper, n)
    spec = substitute_mean_spec(Fraction(1), fp, n)
    plan = AggregatePlan(columns=(ColumnPlan("x", fp.decimals, fp.lower_q, fp.upper_q, "error"),))
    base = pd.DataFrame({"x": rng.uniform(-5, 6, n)})
    mean0 = Fraction(int(DuckDBEngine(base).aggregate(plan).columns[0].sums[0]), n)
    assert spec.lower <= mean0 <= spec.upper
    for i in range(n):
        for new in (-1e6, lower, 0.3, upper, 1e6):
            other = base.copy()
            other.loc[i, "x"] = new
            mean1 = Fraction(int(DuckDBEngine(other).aggregate(plan).columns[0].sums[0]), n)
            assert abs(mean1 - mean0) <= spec.sensitivity


def test_fixed_point_is_exact_and_refuses_impossible_bounds() -> None:
    fp = fixed_point("x", 0.1, 0.7, 1000)
    assert Fraction(fp.lower_q, 10**fp.decimals) >= Fraction(0.1)
    assert Fraction(fp.upper_q, 10**fp.decimals) <= Fraction(0.7)
    assert 1000 * fp.magnitude < 2**62
    with pytest.raises(ValueError, match="cannot be summed exactly"):
        fixed_point("x", 0.0, 1e300, 10)
