"""A Spark release reads every Parquet row group (docs/data.md, "Run time"): while the engine's
actions run, Parquet filters are not pushed into the scan, so no row group is skipped by its
min/max (which would show in the run time whether one person's row lies in a bin); the
session's own setting is restored afterwards. The file has 8 row groups of 1,000 rows, all but
the first far outside the bins: a scan that skipped row groups would return fewer than 8,000
rows."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from snapdp.data.engines.base import AggregatePlan
from snapdp.data.engines.spark import engine as spark_engine
from snapdp.data.engines.spark.reading import session_settings
from snapdp.data.model.schema import Column

pytestmark = [pytest.mark.spark]

BINS = Column("h", "integer", bins=tuple(Fraction(e) for e in range(0, 1001, 100)))
PUSHDOWN = "spark.sql.parquet.filterPushdown"
ADAPTIVE = "spark.sql.adaptive.enabled"  # off here, so that the executed plan holds the scan


def _rows_scanned(df: Any) -> list[int]:
    leaves = df._jdf.queryExecution().executedPlan().collectLeaves()
    nodes = [leaves.apply(i) for i in range(leaves.size())]
    return [
        int(n.metrics().apply("numOutputRows").value())
        for n in nodes
        if n.nodeName().startswith("Scan parquet")
    ]


def test_every_row_group_is_read_on_spark(
    spark_session: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    duckdb = pytest.importorskip("duckdb")
    path = tmp_path / "t.parquet"
    duckdb.connect().execute(
        "COPY (SELECT (CASE WHEN i < 1000 THEN i % 1000 ELSE 1000000 + i END)::BIGINT AS h "
        f"FROM range(8000) t(i)) TO '{path}' (ROW_GROUP_SIZE 1000)"
    )
    engine = spark_engine.SparkEngine(str(path), spark=spark_session)
    plan = AggregatePlan(groupings=(BINS,))
    made: list[Any] = []
    original = spark_engine.SparkEngine._aggregate_df

    def recorded(self: Any, p: AggregatePlan) -> Any:
        out = original(self, p)
        made.append(out[0])
        return out

    monkeypatch.setattr(spark_engine.SparkEngine, "_aggregate_df", recorded)
    adaptive = spark_session.conf.get(ADAPTIVE)
    pushdown = spark_session.conf.get(PUSHDOWN, None)
    spark_session.conf.set(ADAPTIVE, "false")
    try:
        assert engine.aggregate(plan).rows[:10] == [100] * 10
        assert _rows_scanned(made[-1]) == [8000]
        # the same query collected outside the engine skips row groups (the test can fail)
        df, _ = original(engine, plan)
        df.collect()
        assert _rows_scanned(df) != [8000]
    finally:
        spark_session.conf.set(ADAPTIVE, adaptive)
    assert spark_session.conf.get(PUSHDOWN, None) == pushdown


BLIND = (
    ADAPTIVE,
    "spark.sql.optimizer.runtime.bloomFilter.enabled",
    "spark.sql.optimizer.dynamicPartitionPruning.enabled",
    PUSHDOWN,
)
SHUFFLE = "spark.sql.shuffle.partitions"


def test_no_setting_reads_the_data_while_the_engine_runs(
    spark_session: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Adaptive execution re-plans from the sizes of finished stages (an empty stage becomes an
    empty relation, partitions merge, joins change), and runtime Bloom filters and dynamic
    partition pruning are chosen by sizes: all off while the engine's action runs, with the
    cluster's default parallelism as the shuffle's partitions in place of Spark's 200; every
    setting the session had is back afterwards."""
    pd = pytest.importorskip("pandas")
    engine = spark_engine.SparkEngine(pd.DataFrame({"h": [1, 150, 990]}), spark=spark_session)
    seen: dict[str, str | None] = {}
    original = spark_engine.SparkEngine._aggregate_df

    def recorded(self: Any, p: AggregatePlan) -> Any:
        agg, limbs = original(self, p)
        collect = agg.collect

        def collect_and_look() -> Any:
            seen.update({k: spark_session.conf.get(k, None) for k in (*BLIND, SHUFFLE)})
            return collect()

        agg.collect = collect_and_look
        return agg, limbs

    monkeypatch.setattr(spark_engine.SparkEngine, "_aggregate_df", recorded)
    with session_settings(spark_session, {ADAPTIVE: "true", SHUFFLE: "200"}):
        assert engine.aggregate(AggregatePlan(groupings=(BINS,))).rows[:10] == [
            1, 1, 0, 0, 0, 0, 0, 0, 0, 1,
        ]  # fmt: skip
        assert all(seen[k] == "false" for k in BLIND), seen
        cores = spark_session.sparkContext.defaultParallelism
        assert seen[SHUFFLE] == str(cores)
        assert spark_session.conf.get(ADAPTIVE) == "true"
        assert spark_session.conf.get(SHUFFLE) == "200"
