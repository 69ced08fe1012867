"""The Spark engine (local[2]): identical exact aggregates to DuckDB on PUMS, the same release
distribution, and noise drawn in the executors for >= 10^5 declared keys."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from snapdp.data import Count, Mean, PrivateTable, Sum
from snapdp.data.duckdb_engine import DuckDBEngine
from snapdp.data.engine import AggregatePlan, ColumnPlan
from snapdp.data.sensitivity import fixed_point

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (the spark extra)")
    if shutil.which("java") is None:
        pytest.skip("no Java runtime on PATH: the Spark tests need Java 17")
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("snapdp-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.default.parallelism", "2")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    assert pyspark.__version__
    yield session  # not stopped: tests/unit/data/engines/conftest.py shares the session


def _plan(pums: Path, name: str, **kw: Any) -> AggregatePlan:
    cols = []
    for col, lo, hi, nulls in (("income", 0.5, 250_000.0, "drop"), ("age", 18, 90, "lower")):
        fp = fixed_point(col, lo, hi, 5000)
        cols.append(ColumnPlan(col, fp.decimals, fp.lower_q, fp.upper_q, nulls))  # type: ignore[arg-type]
    return AggregatePlan(columns=tuple(cols), **kw)


@pytest.mark.parametrize(
    ("name", "kw"),
    [
        ("PUMS.csv", {"by": "race", "keys": ("1", "2", "3", "4", "5", "6", "99")}),
        ("PUMS_null.csv", {"by": "educ", "keys": tuple(str(e) for e in range(0, 18))}),
        ("PUMS_pid.csv", {"privacy_unit": "pid", "by": "sex", "keys": ("0", "1")}),
        ("PUMS_dup.csv", {"privacy_unit": "pid", "max_rows_per_unit": 50}),
    ],
)
def test_spark_and_duckdb_compute_identical_exact_aggregates(
    spark: Any, pums: Path, name: str, kw: dict[str, Any]
) -> None:
    from snapdp.data.spark_engine import SparkEngine

    plan = _plan(pums, name, **kw)
    a = DuckDBEngine(pums / name).aggregate(plan)
    b = SparkEngine(str(pums / name), spark=spark).aggregate(plan)
    assert np.array_equal(a.rows, b.rows)
    for x, y in zip(a.columns, b.columns, strict=True):
        assert np.array_equal(x.sums, y.sums) and np.array_equal(x.counts, y.counts)
        assert (x.nulls, x.non_numeric) == (y.nulls, y.non_numeric)


def test_contribution_bounding_agrees_per_unit(spark: Any, pums: Path) -> None:
    from snapdp.data.spark_engine import SparkEngine

    df = pd.read_csv(pums / "PUMS_dup.csv")
    keys = tuple(str(p) for p in sorted(df.pid.unique()))
    plan = AggregatePlan(privacy_unit="pid", max_rows_per_unit=1, by="pid", keys=keys)
    a = DuckDBEngine(pums / "PUMS_dup.csv").aggregate(plan)
    b = SparkEngine(str(pums / "PUMS_dup.csv"), spark=spark).aggregate(plan)
    assert np.array_equal(a.rows, b.rows) and a.rows.max() == 1


def test_bad_input_is_refused_before_any_noise(spark: Any, pums: Path) -> None:
    df = spark.read.csv(str(pums / "PUMS_null.csv"), header=True, inferSchema=True)
    table = PrivateTable(df, max_rows=2000, total_epsilon=1.0)  # a Spark DataFrame: Spark engine
    assert type(table.engine).__name__ == "SparkEngine"
    with pytest.raises(ValueError, match="null"):
        table.release([Mean("income", 0, 500_000)], 0.5)
    with pytest.raises(ValueError, match="not in the data"):
        table.release([Sum("wealth", 0, 1)], 0.5)
    assert table.spent == 0


def test_many_keys_get_executor_noise_with_the_driver_distribution(spark: Any) -> None:
    from scipy.stats import chi2_contingency

    from snapdp.data.spark_engine import SparkEngine

    n_keys = 100_000
    # every declared key has exactly 3 rows; keys >= n_keys are undeclared and must drop out
    pdf = pd.DataFrame({"k": np.repeat(np.arange(n_keys + 500), 3)})
    keys = [str(k) for k in range(n_keys)]
    engine = SparkEngine(spark.createDataFrame(pdf).repartition(2), noise_partitions=2)
    table = PrivateTable(engine=engine, max_rows=4 * n_keys, total_epsilon=10.0)
    spark_result = table.release([Count()], 2.0, by="k", keys=keys)[0]
    assert engine.last_noise_location == "executors"
    local = PrivateTable(pdf, max_rows=4 * n_keys, total_epsilon=10.0)
    duck_result = local.release([Count()], 2.0, by="k", keys=keys)[0]
    s, d = np.array(spark_result.values), np.array(duck_result.values)
    assert len(s) == len(d) == n_keys
    # inside the bounds and on the grid (spacing 1 around the midpoint 2·10^5 for ε = 2)
    assert np.all((s >= 0) & (s <= 4 * n_keys)) and np.all(s == np.round(s))
    # the same distribution: a χ² homogeneity test on the output values, at 1e-6
    values = np.union1d(s, d)
    table_counts = np.array([[np.sum(x == v) for v in values] for x in (s, d)])
    keep = table_counts.sum(axis=0) >= 20
    pooled = table_counts[:, keep]
    rare = table_counts[:, ~keep].sum(axis=1)
    if rare.sum() > 0:  # a column of zeros would make the test raise instead of test
        pooled = np.column_stack([pooled, rare])
    assert chi2_contingency(pooled).pvalue > 1e-6
    # within the reported accuracy in >= 1 − α of the keys (binomial margin at 1e-6)
    from scipy.stats import binom

    misses = int(np.sum(np.abs(s - 3) > spark_result.accuracy[0]))
    assert misses <= binom.ppf(1 - 1e-6, n_keys, 0.05)


def test_fractional_values_and_ties_round_identically(spark: Any) -> None:
    from snapdp.data.spark_engine import SparkEngine

    rng = np.random.default_rng(11)
    x = np.concatenate([rng.uniform(-30, 30, 400), [0.125, -0.125, 2.5e-3, -7.005, 1e300, -np.inf]])
    pdf = pd.DataFrame({"x": x, "g": rng.integers(0, 3, x.size)})
    fp = fixed_point("x", -20.25, 25.5, 10**15)
    assert fp.decimals == 2  # so that 0.125 → 12.5 quanta: a tie, rounded to even in both
    plan = AggregatePlan(columns=(ColumnPlan("x", fp.decimals, fp.lower_q, fp.upper_q, "error"),),
                         by="g", keys=("0", "1", "2"))  # fmt: skip
    a = DuckDBEngine(pdf).aggregate(plan)
    b = SparkEngine(spark.createDataFrame(pdf)).aggregate(plan)
    assert np.array_equal(a.columns[0].sums, b.columns[0].sums)
    assert np.array_equal(a.rows, b.rows)


def test_cli_release_on_spark(spark: Any, pums: Path, tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from snapdp.cli import main

    ledger = str(tmp_path / "b.sqlite")
    args = ["release", str(pums / "PUMS.csv"), "--engine", "spark", "--epsilon", "1", "--count",
            "--sum", "income:0:500000", "--keys", "race=1,2,3", "--max-rows", "1000",
            "--ledger", ledger, "--total-epsilon", "2", "--json"]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)  # stderr may carry pyspark's warnings
    assert [r["keys"] for r in doc["results"]] == [["1", "2", "3"]] * 2
    assert doc["budget_remaining"] == 1.0
