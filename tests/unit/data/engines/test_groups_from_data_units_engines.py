"""Groups from the data with a privacy unit on DuckDB, Spark and the reference engine (docs/data.md,
"Privacy units"): the ranks that read key values are bit for bit those of
:func:`~snapdp.data.engines.base.row_rank` / ``group_rank`` in SQL, and one seed releases the
same keys and values on every engine."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sqlglot import exp
from tests.unit.data.test_groups_from_data_units import SCHEMA, Reference

from snapdp.data.engines.base import (
    GROUP_TAG,
    ROW_TAG,
    AggregatePlan,
    ValueColumn,
    group_rank,
    row_rank,
)
from snapdp.data.engines.duckdb.engine import DuckDBEngine
from snapdp.data.engines.relational.dialects import duckdb_sql, spark_sql
from snapdp.data.engines.relational.plan import q_type, ranked
from snapdp.data.model.query import Query
from snapdp.data.model.schema import Column, ContributionBounds
from snapdp.data.release.table import PrivateTable

KEY = "5f0e1d2c3b4a69788796a5b4c3d2e1f0"
CITY = Column("city", "text", keys=("a", "b", "é😀", "x'y", ""))
G = Column("g", "integer", keys=(0, 1, 2))
DAY = Column("d", "date", keys=(dt.date(2024, 1, 1), dt.date(1, 1, 1), dt.date(9999, 12, 31)))
V = ValueColumn(Column("v", "integer", lower=-5, upper=1000), 0, -5, 1000)
PLANS = [
    AggregatePlan((CITY,), (V,), Column("u", "text"), hash_key=KEY, by_value=("city",)),
    AggregatePlan(
        (G, CITY, DAY), (V,), Column("u", "integer"), hash_key=KEY, by_value=("city", "d")
    ),
    AggregatePlan((CITY, G), (), Column("u", "integer"), hash_key="f" * 32, by_value=("city",)),
    AggregatePlan(  # two columns from the data: the cells are observed tuples, then G's keys
        (CITY, DAY, G),
        (V,),
        Column("u", "text"),
        hash_key=KEY,
        by_value=("city", "d"),
        joint=(("b", DAY.keys[2]), ("", DAY.keys[0]), ("é😀", DAY.keys[0])),
    ),
]
NAMES = ["_snapdp_u", "_snapdp_i", "_snapdp_cell", "_snapdp_q0"]


def _rows(plan: AggregatePlan, seed: int) -> list[tuple[Any, int, list[int | None]]]:
    rng = random.Random(seed)
    out: list[tuple[Any, int, list[int | None]]] = []
    for _ in range(150):
        unit: Any = (
            rng.choice(["p", "q", "é"])
            if plan.unit and plan.unit.type == "text"
            else (rng.choice([-(1 << 63), -1, 0, 7, (1 << 63) - 1]))
        )
        q = [rng.choice([None, -5, 7, 1000])] if plan.values else [None]
        out.append((unit, rng.randrange(plan.n_cells), q))
    return out


def _check(plan: AggregatePlan, rows: list[tuple[Any, int, list[int | None]]], got: Any) -> None:
    assert [r[1] for r in got] == [row_rank(plan, u, c, q[: len(plan.values)]) for u, c, q in rows]
    assert [r[2] for r in got] == [group_rank(plan, u, c) for u, c, _ in rows]


@pytest.mark.parametrize("index", range(len(PLANS)))
def test_duckdb_ranks_by_value_equal_row_rank_and_group_rank(index: int) -> None:
    import duckdb

    plan = PLANS[index]
    rows = _rows(plan, index)
    assert plan.unit is not None
    u_type = "BIGINT" if plan.unit.type == "integer" else "VARCHAR"
    con = duckdb.connect()
    con.execute(
        f"CREATE TABLE t (_snapdp_u {u_type}, _snapdp_i BIGINT, _snapdp_cell BIGINT, "
        f"_snapdp_q0 {q_type(V)})"
    )
    con.executemany(
        "INSERT INTO t VALUES (?, ?, ?, ?)", [[u, i, c, *q] for i, (u, c, q) in enumerate(rows)]
    )
    names = NAMES if plan.values else NAMES[:3]
    r1 = ranked(exp.to_table("t"), names, plan, ROW_TAG, True, "_rr")
    both = ranked(r1.subquery("r"), [*names, "_rr"], plan, GROUP_TAG, False, "_gr")
    _check(
        plan,
        rows,
        con.execute(f"SELECT _snapdp_i, _rr, _gr FROM ({duckdb_sql(both)}) ORDER BY 1").fetchall(),
    )


@pytest.mark.parametrize("index", range(len(PLANS)))
def test_spark_ranks_by_value_equal_row_rank_and_group_rank(spark_session: Any, index: int) -> None:
    plan = PLANS[index]
    rows = _rows(plan, index)
    assert plan.unit is not None
    u_type = "bigint" if plan.unit.type == "integer" else "string"
    schema = f"_snapdp_u {u_type}, _snapdp_i bigint, _snapdp_cell bigint, _snapdp_q0 bigint"
    df = spark_session.createDataFrame([(u, i, c, *q) for i, (u, c, q) in enumerate(rows)], schema)
    df.createOrReplaceTempView("by_value_rows")
    names = NAMES if plan.values else NAMES[:3]
    r1 = ranked(exp.to_table("by_value_rows"), names, plan, ROW_TAG, True, "_rr", False)
    both = ranked(r1.subquery("r"), [*names, "_rr"], plan, GROUP_TAG, False, "_gr", False)
    got = spark_session.sql(spark_sql(both)).select("_snapdp_i", "_rr", "_gr").collect()
    _check(plan, rows, sorted(tuple(r) for r in got))


def _people() -> pd.DataFrame:
    rows = []
    for pid in range(150):
        for j in range(3):
            city = ["rome", "oslo", "lima", "kyiv"][(pid + j) % 4]
            rows += [
                {"pid": pid, "city": city, "income": (pid * 7 + j * 13 + r) % 90} for r in (0, 1)
            ]
    rows += [{"pid": 9_999, "city": "solo", "income": 3}] * 2
    return pd.DataFrame(rows)


def test_one_seed_releases_the_same_keys_and_values_on_every_engine(spark_session: Any) -> None:
    """DuckDB, Spark and the reference engine: the same shown keys and the same values for one
    seed, with the unit `pid` and k/L0/L∞ bounds."""
    from snapdp.data.engines.spark.engine import SparkEngine

    frame = _people()
    bounds = ContributionBounds(max_rows_per_unit=3, max_groups_per_unit=2, max_rows_per_group=2)
    schema = type(SCHEMA)(SCHEMA.columns, privacy_unit="pid", bounds=bounds)
    queries = [Query("count", by=("city",)), Query("sum", "income", by=("city",))]
    for seed in (0, 1):
        out = []
        for engine in (
            DuckDBEngine(frame),
            SparkEngine(frame, spark=spark_session),
            Reference(frame.to_dict("records")),
        ):
            table = PrivateTable(
                schema=schema, engine=engine, total_epsilon=10, rng=np.random.default_rng(seed)
            )
            results = table.release(queries, 2, delta="1e-6")
            out.append([[(r.keys, r.value) for r in res.rows] for res in results])
        assert out[0] == out[1] == out[2]
        assert {k for k, _ in out[0][0]} <= {("rome",), ("oslo",), ("lima",), ("kyiv",)}
