"""Groups from the data on DuckDB and Spark (docs/sql.md, "Groups from the data"): the same
observed keys, and the same shown keys for one seed."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import numpy as np

from snapdp.data.engines.duckdb.engine import DuckDBEngine
from snapdp.data.engines.observed import observed_keys
from snapdp.data.model.predicate import Compare
from snapdp.data.model.query import Query
from snapdp.data.model.schema import Column, CsvOptions, Schema
from snapdp.data.release.table import PrivateTable

SCHEMA = Schema((Column("city", "text"), Column("n", "integer", 0, 100), Column("day", "date")))
ROWS = (
    [("paris", "3", "2024-01-01")] * 60
    + [("rome", "x", "2024-01-02")] * 40  # n not an integer: null, so no key
    + [("oslo", "7", "2024-01-03")] * 45
    + [("tiny", "7", "2024-01-03")]
)


def _csv(tmp_path: Path) -> Path:
    p = tmp_path / "people.csv"
    p.write_text("city,n,day\n" + "".join(f"{a},{b},{c}\n" for a, b, c in ROWS))
    return p


def _spark(path: Path, spark: Any) -> Any:
    from snapdp.data.engines.spark.engine import SparkEngine

    return SparkEngine(str(path), spark=spark, csv=CsvOptions())


def test_duckdb_and_spark_observe_the_same_keys(tmp_path: Path, spark_session: Any) -> None:
    path = _csv(tmp_path)
    cols = list(SCHEMA.columns)
    where = Compare("n", ">", 0)
    expected = {("paris", 3), ("oslo", 7), ("tiny", 7)}
    for engine in (DuckDBEngine(str(path), csv=CsvOptions()), _spark(path, spark_session)):
        got = observed_keys(engine, cols[:2], where, [cols[1]])
        assert set(got) == expected and len(got) == len(expected)


def test_duckdb_and_spark_show_the_same_keys_for_one_seed(
    tmp_path: Path, spark_session: Any
) -> None:
    path = _csv(tmp_path)
    q = [Query("count", by=("city",))]
    engines = (DuckDBEngine(str(path), csv=CsvOptions()), _spark(path, spark_session))
    for seed in range(3):  # one engine each for all seeds (an engine keeps nothing between runs)
        shown = []
        for engine in engines:
            table = PrivateTable(
                schema=SCHEMA, engine=engine, total_epsilon=10, rng=np.random.default_rng(seed)
            )
            (r,) = table.release(q, 1, delta="1e-6")
            shown.append([(row.keys, row.value) for row in r.rows])
        assert shown[0] == shown[1]
        assert {k for k, _ in shown[0]} <= {("paris",), ("rome",), ("oslo",), ("tiny",)}


def test_two_columns_from_the_data_agree_on_duckdb_spark_and_the_reference(
    tmp_path: Path, spark_session: Any
) -> None:
    """GROUP BY two data-keyed columns, and a declared column with two data-keyed ones: the
    same shown tuples and values on DuckDB, Spark and the reference engine for one seed; only
    observed tuples (never the product of each column's keys)."""
    from tests.data_oracle import OracleEngine

    schema = Schema(
        (
            Column("sex", "integer", keys=(1, 2)),
            Column("city", "text"),
            Column("n", "integer", 0, 100),
            Column("day", "date"),
        )
    )
    path = tmp_path / "t.csv"
    lines = [f"{1 + i % 2},{'ab'[i % 2]},{i % 3},2024-01-0{1 + i % 2}" for i in range(300)]
    path.write_text("sex,city,n,day\n" + "\n".join(lines) + "\n")
    q = [Query("count", by=("city", "n")), Query("mean", "n", by=("sex", "city", "day"))]
    engines = (
        DuckDBEngine(str(path), csv=CsvOptions()),
        _spark(path, spark_session),
        OracleEngine(str(path)),
    )
    for seed in range(2):
        shown = []
        for engine in engines:
            table = PrivateTable(
                schema=schema, engine=engine, total_epsilon=10, rng=np.random.default_rng(seed)
            )
            results = table.release(q, 1, delta="1e-6")
            shown.append([[(row.keys, row.value) for row in r.rows] for r in results])
        assert shown[0] == shown[1] == shown[2]
        assert {k for k, _ in shown[0][0]} <= {(c, n) for c in "ab" for n in range(3)}
        assert {k for k, _ in shown[0][1]} <= {
            (1, "a", dt.date(2024, 1, 1)),
            (2, "b", dt.date(2024, 1, 2)),
        }
        assert shown[0][0]  # the big cells are shown
