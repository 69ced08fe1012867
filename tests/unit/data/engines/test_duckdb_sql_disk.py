"""A CSV source's unit-less queries kept on disk (docs/performance.md, "Latency"): the kept text,
completed with the relation, is byte for byte the text rendered afresh; a later process reads it
without importing sqlglot; plans with a unit or with keys read from the data are never kept; an
entry that does not check out is ignored; ``SNAPDP_CACHE_DIR=off`` keeps nothing."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from snapdp.data.engines.base import AggregatePlan, ValueColumn
from snapdp.data.engines.duckdb import query, sql_cache
from snapdp.data.model.predicate import And, Compare, InList, IsNull, Not
from snapdp.data.model.schema import Column, ContributionBounds

SRC = str(Path(__file__).resolve().parents[4] / "src")
G = Column("g", "integer", keys=(0, 1, 2))
B = Column("b", "integer", bins=tuple(Fraction(e) for e in range(0, 101, 5)))
T = Column("t", "text", keys=("a", "b'c", ""))
D = Column("d", "date", keys=(dt.date(2020, 1, 1), dt.date(2021, 6, 30)))
X = ValueColumn(Column("x", "decimal", lower=Fraction(0), upper=Fraction(10)), 2, 0, 1000)
Y = ValueColumn(Column("y", "integer", lower=Fraction(-5), upper=Fraction(5)), 1, -5, 5)
CSV_TYPES = dict.fromkeys(["g", "b", "t", "d", "x", "y", "u"], "VARCHAR")  # a CSV source's
RELATION = '(SELECT "_snapdp_f"[1] AS "g", "_snapdp_f"[2] AS "x" FROM "_snapdp_lines")'
WHERE = And((Compare("y", ">=", -1), Not(IsNull("t")), InList("g", (0, 2))))
PLANS = [
    AggregatePlan(),
    AggregatePlan(groupings=(G, B), values=(X,)),
    AggregatePlan(groupings=(T, D), values=(X, Y)),
    AggregatePlan(groupings=(G,), values=(Y,), where=WHERE, where_columns=(Y.column, T, G)),
]


def _fresh(plan: AggregatePlan, relation: str = RELATION) -> tuple[str, list[str]]:
    families = tuple(
        (name, query._family(CSV_TYPES.get(name, "VARCHAR"))) for name in plan.used_columns()
    )
    return query._render(plan, relation, families)


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SNAPDP_CACHE_DIR", str(tmp_path))
    query._cached_render.cache_clear()
    return tmp_path / "sql"


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.json")) if folder.exists() else []


@pytest.mark.parametrize("plan", PLANS)
def test_a_kept_query_is_the_text_rendered_afresh(folder: Path, plan: AggregatePlan) -> None:
    fresh = _fresh(plan)
    assert query.plan_sql(plan, RELATION, CSV_TYPES, keep=True) == fresh  # rendered and kept
    assert len(_entries(folder)) == 1
    query._cached_render.cache_clear()
    assert query.plan_sql(plan, RELATION, CSV_TYPES, keep=True) == fresh  # read from the disk
    query._cached_render.cache_clear()
    other = '"_snapdp_held"'  # another relation (the held table) shares the entry
    assert query.plan_sql(plan, other, CSV_TYPES, keep=True) == _fresh(plan, other)
    assert len(_entries(folder)) == 1


def test_plans_with_a_unit_or_keys_from_the_data_are_never_kept(folder: Path) -> None:
    unit = Column("u", "integer")
    observed = Column("city", "text", keys=("Lyon", "Oslo"))
    plans = [
        AggregatePlan(groupings=(G,), values=(X,), unit=unit, bounds=ContributionBounds(2)),
        AggregatePlan(groupings=(observed,), values=(X,), by_value=("city",)),
        AggregatePlan(groupings=(observed, G), joint=(("Lyon", 0), ("Oslo", 2))),
    ]
    for plan in plans:
        assert query.plan_sql(plan, RELATION, CSV_TYPES, keep=True) == _fresh(plan)
    assert _entries(folder) == []
    query.plan_sql(PLANS[1], RELATION, CSV_TYPES)  # not a CSV source: not kept either
    assert _entries(folder) == []


def _rewrite(path: Path, **change: object) -> None:
    stored = json.loads(path.read_text(encoding="utf-8"))
    stored["body"].update(change)
    stored["checksum"] = sql_cache._checksum(stored["body"])
    path.write_text(json.dumps(stored), encoding="utf-8")


@pytest.mark.parametrize(
    "forge",
    [
        {"sql": "SELECT 1"},  # the placeholder is missing
        {"key": "another plan"},
        {"version": "0" * 64},
        {"layout": [1, 2]},
        {"placeholder": "x"},
    ],
)
def test_an_entry_that_does_not_check_out_is_rewritten(
    folder: Path, forge: dict[str, object]
) -> None:
    plan = PLANS[1]
    fresh = _fresh(plan)
    query.plan_sql(plan, RELATION, CSV_TYPES, keep=True)
    (path,) = _entries(folder)
    _rewrite(path, **forge)
    query._cached_render.cache_clear()
    assert query.plan_sql(plan, RELATION, CSV_TYPES, keep=True) == fresh
    assert json.loads(path.read_text(encoding="utf-8"))["body"]["key"] != "another plan"


def test_a_garbled_or_shared_entry_is_ignored(folder: Path) -> None:
    plan = PLANS[2]
    fresh = _fresh(plan)
    query.plan_sql(plan, RELATION, CSV_TYPES, keep=True)
    (path,) = _entries(folder)
    stored = json.loads(path.read_text(encoding="utf-8"))
    stored["body"]["sql"] += " -- changed"  # the checksum no longer matches
    path.write_text(json.dumps(stored), encoding="utf-8")
    query._cached_render.cache_clear()
    assert query.plan_sql(plan, RELATION, CSV_TYPES, keep=True) == fresh
    if hasattr(os, "getuid"):  # a file others may write is not read
        _rewrite(path, sql=fresh[0].replace("SELECT", "SELECT 1 AS z,", 1))
        path.chmod(0o666)
        query._cached_render.cache_clear()
        assert query.plan_sql(plan, RELATION, CSV_TYPES, keep=True) == fresh


def test_the_cache_off_keeps_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SNAPDP_CACHE_DIR", "off")
    monkeypatch.chdir(tmp_path)
    query._cached_render.cache_clear()
    assert sql_cache.sql_dir() is None
    assert query.plan_sql(PLANS[1], RELATION, CSV_TYPES, keep=True) == _fresh(PLANS[1])
    assert list(tmp_path.rglob("*.json")) == []


_PROBE = """
import json, sys
from fractions import Fraction
from snapdp.data.engines.base import AggregatePlan, ValueColumn
from snapdp.data.engines.duckdb import query
from snapdp.data.model.schema import Column
g = Column("g", "integer", keys=(0, 1, 2))
x = ValueColumn(Column("x", "decimal", lower=Fraction(0), upper=Fraction(10)), 2, 0, 1000)
sql = query.plan_sql(AggregatePlan(groupings=(g,), values=(x,)), "r", {}, keep=True)
print(json.dumps([sql, "sqlglot" in sys.modules]))
"""


def test_a_later_process_reads_the_query_without_sqlglot(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=SRC, SNAPDP_CACHE_DIR=str(tmp_path))
    runs = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", _PROBE], check=True, capture_output=True, text=True, env=env
            ).stdout.splitlines()[-1]
        )
        for _ in range(2)
    ]
    assert runs[0][1] is True and runs[1][1] is False
    assert runs[0][0] == runs[1][0]
