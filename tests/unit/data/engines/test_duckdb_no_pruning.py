"""A DuckDB release reads every row group of its source (docs/data.md, "Run time"): with filters
pushed into the scan, DuckDB skipped a Parquet row group whose min/max showed that no row could
fall in a bin, match a key or pass a ``where``, so the run time showed whether one person's row
lay there. The file below has 40 row groups, all but the first far outside the declared bins and
keys; every plan must scan all 40, on an engine of the shared database and on one of its own."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from snapdp.data.engines.base import AggregatePlan
from snapdp.data.engines.duckdb.engine import DuckDBEngine
from snapdp.data.model.predicate import between
from snapdp.data.model.schema import Column

duckdb = pytest.importorskip("duckdb")

BINS = Column("h", "integer", bins=tuple(Fraction(e) for e in range(0, 1001, 100)))
KEYS = Column("h", "integer", keys=tuple(range(0, 1000, 7)))
PLANS = {
    "bins": AggregatePlan(groupings=(BINS,)),
    "keys": AggregatePlan(groupings=(KEYS,)),
    "where": AggregatePlan(where=between("h", 0, 999), where_columns=(Column("h", "integer"),)),
}


@pytest.fixture(scope="module")
def parquet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pruning") / "t.parquet"
    duckdb.connect().execute(
        "COPY (SELECT (CASE WHEN i < 10000 THEN i % 1000 ELSE 1000000 + i END)::BIGINT AS h "
        f"FROM range(400000) t(i)) TO '{path}' (ROW_GROUP_SIZE 10000)"
    )
    return path


@pytest.mark.parametrize("own_database", [False, True])
@pytest.mark.parametrize("kind", sorted(PLANS))
def test_every_row_group_is_read(parquet: Path, kind: str, own_database: bool) -> None:
    engine = DuckDBEngine(parquet, threads=1) if own_database else DuckDBEngine(parquet)
    sql, _ = engine.sql(PLANS[kind])
    profile = engine._con.execute("EXPLAIN ANALYZE " + sql).fetchall()[0][1]
    scanned = [line.strip(" │") for line in profile.splitlines() if "Row Groups" in line]
    assert scanned and all(s == "Row Groups Scanned: 40 / 40" for s in scanned), scanned
    assert engine.aggregate(PLANS[kind]).rows[0] > 0
