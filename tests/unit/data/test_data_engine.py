"""The DuckDB engine against independent oracles: pandas and exact Python arithmetic."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from snapdp.data.duckdb_engine import DuckDBEngine
from snapdp.data.engine import AggregatePlan, ColumnPlan
from snapdp.data.sensitivity import fixed_point


def _oracle_quanta(values: pd.Series, lower: float, upper: float, max_rows: int, nulls: str):
    """Clamped quanta per row (None for a dropped null): the double product v·10**s rounded half
    to even, exactly, with Python's Fraction rounding."""
    fp = fixed_point("c", lower, upper, max_rows)
    out = []
    for v in values:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            out.append({"drop": None, "lower": fp.lower_q, "upper": fp.upper_q}[nulls])
            continue
        scale = 10**fp.decimals
        lo_d, hi_d = float(fp.lower_q // scale - 1), float(-(-fp.upper_q // scale) + 1)
        y = min(max(float(v), lo_d), hi_d) * float(scale)  # the double product, as in SQL
        q = round(Fraction(y))  # exact half-to-even rounding of that double
        out.append(min(max(q, fp.lower_q), fp.upper_q))
    return fp, out


@pytest.mark.parametrize("nulls", ["drop", "lower", "upper"])
def test_grouped_sums_counts_match_exact_oracle(pums: Path, nulls: str) -> None:
    df = pd.read_csv(pums / "PUMS_null.csv")
    lower, upper, n_max = 1000.5, 250000.25, 5000
    fp, q = _oracle_quanta(df["income"], lower, upper, n_max, nulls)
    df["q"] = q
    keys = ("0", "1", "9")  # 9 is declared but absent; rows with a null sex are undeclared
    plan = AggregatePlan(
        columns=(ColumnPlan("income", fp.decimals, fp.lower_q, fp.upper_q, nulls),),  # type: ignore[arg-type]
        by="sex",
        keys=keys,
    )
    agg = DuckDBEngine(pums / "PUMS_null.csv").aggregate(plan)
    for g, key in enumerate(keys):
        rows = df[df["sex"].astype("Int64").astype(str) == key]
        assert agg.rows[g] == len(rows)
        present = [x for x in rows["q"] if x is not None and not pd.isna(x)]
        assert agg.columns[0].sums[g] == sum(int(x) for x in present)
        assert agg.columns[0].counts[g] == len(present)
    assert agg.rows[2] == 0 and agg.columns[0].sums[2] == 0
    assert agg.columns[0].nulls == int(df[df["sex"].notna()]["income"].isna().sum())


def test_contribution_bounding_keeps_at_most_k_rows_per_unit(pums: Path) -> None:
    df = pd.read_csv(pums / "PUMS_dup.csv")
    per_unit = df.groupby("pid").size()
    assert per_unit.max() > 2, "the test needs units with more than k rows"
    keys = tuple(str(p) for p in per_unit.index)
    engine = DuckDBEngine(pums / "PUMS_dup.csv")
    for k in (1, 2):
        agg = engine.aggregate(
            AggregatePlan(privacy_unit="pid", max_rows_per_unit=k, by="pid", keys=keys)
        )
        expected = np.minimum(per_unit.to_numpy(), k)
        assert np.array_equal(agg.rows, expected)


def test_pandas_and_arrow_sources_agree_with_the_file(pums: Path) -> None:
    import pyarrow as pa

    df = pd.read_csv(pums / "PUMS.csv")
    plan = AggregatePlan(columns=(ColumnPlan("age", 0, 0, 100, "error"),), by="race",
                         keys=tuple(str(r) for r in range(1, 7)))  # fmt: skip
    results = [
        DuckDBEngine(src).aggregate(plan)
        for src in (pums / "PUMS.csv", df, pa.Table.from_pandas(df))
    ]
    for other in results[1:]:
        assert np.array_equal(other.rows, results[0].rows)
        assert np.array_equal(other.columns[0].sums, results[0].columns[0].sums)
    assert results[0].rows.sum() == 1000
    assert results[0].columns[0].sums.sum() == df["age"].clip(0, 100).sum()


def test_parquet_source(tmp_path: Path) -> None:
    df = pd.DataFrame({"x": [1.25, -3.0, 7.5, float("nan")], "g": ["a", "b", "a", "a"]})
    path = tmp_path / "t.parquet"
    df.to_parquet(path)
    plan = AggregatePlan(columns=(ColumnPlan("x", 2, -100, 500, "drop"),), by="g", keys=("a", "b"))
    agg = DuckDBEngine(path).aggregate(plan)
    assert list(agg.rows) == [3, 1]
    # 1.25 → 125 quanta, 7.5 → 500 (clamped to 5.00), -3.0 → -100 (clamped to -1.00)
    assert list(agg.columns[0].sums) == [625, -100]
    assert agg.columns[0].nulls == 1


def test_integer_keys_match_the_text_form_only() -> None:
    df = pd.DataFrame({"g": np.array([1, -5, 0, 1], dtype=np.int32)})
    keys = ("1", "01", "-5", "-0", "0", "1.0", "99999999999999999999", " 1")
    agg = DuckDBEngine(df).aggregate(AggregatePlan(by="g", keys=keys))
    assert list(agg.rows) == [2, 0, 1, 0, 1, 0, 0, 0]
    as_text = DuckDBEngine(df.astype({"g": str})).aggregate(AggregatePlan(by="g", keys=keys))
    assert list(as_text.rows) == list(agg.rows)


def test_quanta_round_half_to_even_like_the_oracle() -> None:
    rng = np.random.default_rng(3)
    ties = [0.125, -0.125, 0.375, -0.375, 0.0025, 2.5, -2.5, 15.5, -15.5, 0.145, 1e300, -1e300]
    x = np.concatenate([ties, rng.uniform(-40, 40, 300), np.round(rng.uniform(-40, 40, 300), 3)])
    df = pd.DataFrame({"x": x, "g": np.arange(x.size) % 2})
    for lower, upper, n_max in ((-30.0, 35.5, 10**15), (-1.0, 1.0, 5000)):
        fp, q = _oracle_quanta(df["x"], lower, upper, n_max, "drop")
        if n_max == 10**15:
            assert fp.decimals == 2  # 0.125 → the tie 12.5 quanta
        plan = AggregatePlan(
            columns=(ColumnPlan("x", fp.decimals, fp.lower_q, fp.upper_q, "drop"),),
            by="g",
            keys=("0", "1"),
        )
        agg = DuckDBEngine(df).aggregate(plan)
        q = np.array(q, dtype=object)
        for g in (0, 1):
            assert agg.columns[0].sums[g] == sum(int(v) for v in q[df["g"].to_numpy() == g])
