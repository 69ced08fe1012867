"""A DuckDB release plans its query without the data's statistics (docs/data.md, "Run time").

DuckDB's optimizers read each column's min/max, null count and distinct count (of a Parquet file,
or of a table the engine holds) and used them to fold a ``where`` that no row could pass into an
empty result, drop one that every row passed together with its column's read, fold ``IS NULL``
away and order the joins with the keys tables: one person's row changed the plan, so the work
and the run time. Each pair of tables below differs in one row; the generated query must get the
same operator tree on both (estimated row counts aside), on a Parquet source and on a CSV held
as a table, on the shared database and on one of the engine's own. (Before the fix the Parquet
pairs of four cases got different trees; the CSV's casts from text already hid most statistics,
and its distinct counts are estimated from a sample of the rows, so there the cases are guards.)

The last tests: a database invalidated by a fatal error is replaced at the next connection."""

from __future__ import annotations

import json
import os
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from snapdp.data.engines.base import AggregatePlan, ValueColumn
from snapdp.data.engines.duckdb import connection as shared
from snapdp.data.engines.duckdb.engine import DuckDBEngine
from snapdp.data.model.predicate import between
from snapdp.data.model.schema import Column, ContributionBounds

duckdb = pytest.importorskip("duckdb")

ROWS = 3000
X = Column("x", "integer", lower=Fraction(0), upper=Fraction(100))
SUM = ValueColumn(X, 0, 0, 100, squares=True)
BINS = Column("h", "integer", bins=tuple(Fraction(e) for e in range(0, 1001, 100)))
KEYS = Column("h", "integer", keys=tuple(range(0, 1000, 7)))
A_KEYS = Column("a", "integer", keys=tuple(range(50)))
B_KEYS = Column("b", "integer", keys=tuple(range(50)))
UNIT = Column("u", "integer")
WHERE = {"where": between("h", 0, 999), "where_columns": (Column("h", "integer"),)}
BOUNDS = ContributionBounds(max_rows_per_unit=5, max_groups_per_unit=3, max_rows_per_group=2)
HASH_KEY = "0123456789abcdef0123456789abcdef"
PLANS = {
    "sum": AggregatePlan(values=(SUM,)),
    "bins": AggregatePlan(groupings=(BINS,), values=(SUM,)),
    "keys": AggregatePlan(groupings=(KEYS,), values=(SUM,)),
    "where": AggregatePlan(values=(SUM,), **WHERE),  # type: ignore[arg-type]
    "two keys": AggregatePlan(groupings=(A_KEYS, B_KEYS), values=(SUM,)),
    "unit": AggregatePlan(
        groupings=(BINS,), values=(SUM,), unit=UNIT, bounds=BOUNDS, hash_key=HASH_KEY
    ),
    "unit keys": AggregatePlan(
        groupings=(A_KEYS, B_KEYS), values=(SUM,), unit=UNIT, bounds=BOUNDS, hash_key=HASH_KEY
    ),
}

#: The columns as SQL over ``i`` in range(ROWS); each case changes one column's first row.
BASE = {
    "h": "i % 1000",
    "x": "i % 101",
    "u": "i % 50",
    "a": "i % 20",
    "b": "(i * 7) % 20",
}
FAR = dict(BASE, h="2000 + i % 1000")  # no row in a bin, a key or the `where`
CASES = {
    # a `where` (and the bins) that no row passed became an empty result
    "one row in range": (FAR, dict(FAR, h="CASE WHEN i = 0 THEN 7 ELSE 2000 + i % 1000 END")),
    # a `where` every row passed was dropped, with its column's read; IS NULL folded to false
    "one null h": (BASE, dict(BASE, h="CASE WHEN i = 0 THEN NULL ELSE i % 1000 END")),
    "one null x": (BASE, dict(BASE, x="CASE WHEN i = 0 THEN NULL ELSE i % 101 END")),
    "one null unit": (BASE, dict(BASE, u="CASE WHEN i = 0 THEN NULL ELSE i % 50 END")),
    "one x above the bounds": (BASE, dict(BASE, x="CASE WHEN i = 0 THEN 1000 ELSE i % 101 END")),
    # a 21st distinct b (20 a's) swapped the joins with the two keys tables
    "one more distinct b": (BASE, dict(BASE, b="CASE WHEN i = 0 THEN 20 ELSE (i * 7) % 20 END")),
}


def _write(folder: Path, name: str, columns: dict[str, str], kind: str) -> Path:
    path = folder / f"{name}.{kind}"
    select = ", ".join(f"({sql})::BIGINT AS {col}" for col, sql in columns.items())
    options = "(FORMAT parquet, ROW_GROUP_SIZE 1000)" if kind == "parquet" else "(HEADER)"
    query = f"SELECT {select} FROM range({ROWS}) t(i)"
    duckdb.connect().execute(f"COPY ({query}) TO '{path}' {options}")
    return path


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], tuple[Path, Path]]:
    folder = tmp_path_factory.mktemp("neighbours")
    return {
        (case, kind): (
            _write(folder, f"{n}-0", before, kind),
            _write(folder, f"{n}-1", after, kind),
        )
        for n, (case, (before, after)) in enumerate(CASES.items())
        for kind in ("parquet", "csv")
    }


def _tree(node: Any, estimates: bool = False) -> Any:
    """The operator tree of DuckDB's JSON plan, without its estimated row counts unless
    ``estimates``."""
    if isinstance(node, list):
        return [_tree(child, estimates) for child in node]
    info = {
        k: v
        for k, v in node.get("extra_info", {}).items()
        if estimates or k != "Estimated Cardinality"
    }
    children = _tree(node.get("children", []), estimates)
    return (node["name"], json.dumps(info, sort_keys=True), children)


def _plan(path: Path, plan: AggregatePlan, own_database: bool, estimates: bool = False) -> Any:
    engine = DuckDBEngine(path, threads=1) if own_database else DuckDBEngine(path)
    sql, _ = engine.sql(plan)
    text = engine._con.execute("EXPLAIN (FORMAT JSON) " + sql).fetchall()[0][1]
    return _tree(json.loads(text), estimates)


@pytest.mark.parametrize("own_database", [False, True])
@pytest.mark.parametrize("kind", ["parquet", "csv"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_neighbouring_tables_get_the_same_plan(
    tables: dict[tuple[str, str], tuple[Path, Path]], case: str, kind: str, own_database: bool
) -> None:
    before, after = tables[case, kind]
    for name, plan in PLANS.items():
        assert _plan(before, plan, own_database) == _plan(after, plan, own_database), name


@pytest.mark.parametrize("kind", ["parquet", "csv"])
def test_the_estimates_depend_on_the_row_count_only(tmp_path: Path, kind: str) -> None:
    """DuckDB still estimates each operator's rows (its hash join reads some of them as it
    runs): from the number of rows only, never from the columns' ranges or distinct counts. Two
    tables of as many rows, one value per column against all distinct: the same estimates
    (join_order's estimator read the ranges and distinct counts)."""
    narrow = _write(tmp_path, "narrow", dict.fromkeys(BASE, "7"), kind)
    wide = _write(tmp_path, "wide", {c: f"i * 1000 + {n}" for n, c in enumerate(BASE)}, kind)
    for name, plan in PLANS.items():
        assert _plan(narrow, plan, False, True) == _plan(wide, plan, False, True), name


def test_the_plans_still_join_and_aggregate(
    tables: dict[tuple[str, str], tuple[Path, Path]],
) -> None:
    """Without join_order and filter_pullup the key joins stay hash joins in the query's order
    (never cross products), and the results are the exact aggregates."""
    before, _ = tables["one more distinct b", "parquet"]
    tree = json.dumps(_plan(before, PLANS["two keys"], False))
    assert tree.count('"HASH_JOIN"') == 2 and "CROSS_PRODUCT" not in tree
    assert "NESTED_LOOP" not in tree
    result = DuckDBEngine(before).aggregate(PLANS["two keys"])
    # a = i % 20 and b = 7i % 20 take each (a, b) with 7a = b (mod 20), 150 rows each
    expected = [150 if (7 * a - b) % 20 == 0 and a < 20 and b < 20 else 0 for a in range(50)
                for b in range(50)]  # fmt: skip
    assert result.rows == expected


@pytest.mark.parametrize("own_database", [False, True])
def test_the_statistics_optimizers_are_disabled(tmp_path: Path, own_database: bool) -> None:
    path = _write(tmp_path, "t", BASE, "parquet")
    engine = DuckDBEngine(path, threads=1) if own_database else DuckDBEngine(path)
    setting = engine._con.execute("SELECT current_setting('disabled_optimizers')").fetchall()[0][0]
    disabled = set(str(setting).split(","))
    rows = engine._con.execute("SELECT name FROM duckdb_optimizers()").fetchall()
    known = {str(row[0]) for row in rows}
    wanted = set(shared._BLIND_OPTIMIZERS) | (set(shared._BLIND_OPTIMIZERS_IF_PRESENT) & known)
    assert {"statistics_propagation", "join_order", "filter_pullup"} <= wanted
    assert wanted <= disabled


class _Invalidated:
    """A stand-in for a database a fatal error invalidated: every query on it raises DuckDB's
    FatalException, as DuckDB does for every query after one."""

    def __init__(self) -> None:
        self.queries = 0

    def cursor(self) -> _Invalidated:
        return self

    def execute(self, sql: str) -> None:
        self.queries += 1
        raise duckdb.FatalException("database has been invalidated")


def test_an_invalidated_shared_database_is_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = _Invalidated()
    monkeypatch.setattr(shared, "_shared", (os.getpid(), broken))
    path = _write(tmp_path, "t", BASE, "parquet")
    engine = DuckDBEngine(path)
    assert broken.queries == 1  # found out by the connection's first setting, not by a probe
    assert shared._shared is not None and shared._shared[1] is not broken
    assert engine.aggregate(PLANS["sum"]).rows == [ROWS]
    fresh = shared._shared[1]
    assert DuckDBEngine(path).aggregate(PLANS["bins"]).rows[0] == 300
    assert shared._shared[1] is fresh  # opened once, then shared again
    assert broken.queries == 1


def test_a_replaced_database_is_not_dropped_by_a_late_caller(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A connection that found an invalidated database another thread already replaced leaves
    the replacement in place."""
    replacement = duckdb.connect(":memory:")
    monkeypatch.setattr(shared, "_shared", (os.getpid(), replacement))
    shared._forget_shared(_Invalidated())  # type: ignore[arg-type]
    assert shared._shared is not None and shared._shared[1] is replacement


@pytest.mark.parametrize("own_database", [False, True])
def test_one_added_row_keeps_the_joins_build_side(tmp_path: Path, own_database: bool) -> None:
    """DuckDB's build_side_probe_side hashed the side with fewer estimated rows: grouped by 100
    declared keys, a Parquet source of 113 rows was built and one of 114 probed. Disabled, the
    keys are built at every size, so one added row does not change the plan."""
    keys = Column("h", "integer", keys=tuple(range(100)))
    plan = AggregatePlan(groupings=(keys,))
    trees = []
    for n in (113, 114):
        path = tmp_path / f"t{n}.parquet"
        duckdb.connect().execute(
            f"COPY (SELECT (i % 100)::BIGINT AS h FROM range({n}) t(i)) TO '{path}' "
            "(FORMAT parquet)"
        )
        trees.append(_plan(path, plan, own_database))
    assert trees[0] == trees[1]
