"""One path (issue 31; docs/architecture.md, "The walk"): one query written as CLI flags, as a
TOML plan, as SQL, as the page's JSON and with the Python API is one workload; with one seed every
front end releases the same values through the one release session; and each query of a run is
compiled once (counted)."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from snapdp.cli import main
from snapdp.data import Plan, PrivateTable, Query, statistics
from snapdp.data.frontends.flags import workload_from_flags
from snapdp.data.frontends.sql import parse_predicate, parse_sql
from snapdp.data.frontends.toml import load_workload
from snapdp.data.model.workload import PlannedQuery, Workload
from snapdp.data.release import session
from snapdp.ui import _workload_json as wj
from snapdp.ui._document_io import document_from_toml

pytest.importorskip("sqlglot")

WHERE = "age BETWEEN 18 AND 64"
PLAN = f"""[data]
source = "people.csv"
total_epsilon = 3

[columns]
age = "integer"
income = {{ type = "decimal", lower = 0, upper = 1000 }}
sex = {{ type = "integer", keys = [1, 2] }}

[[query]]
statistic = "mean"
column = "income"
by = "sex"
where = "{WHERE}"
epsilon = 1
"""
SQL = f"SELECT sex, AVG(income) FROM people WHERE {WHERE} GROUP BY sex"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    rng = np.random.default_rng(5)
    lines = ["sex,income,age"] + [
        f"{int(rng.integers(1, 3))},{rng.uniform(0, 1000):.2f},{int(rng.integers(0, 90))}"
        for _ in range(300)
    ]
    (tmp_path / "people.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "plan.toml").write_text(PLAN, encoding="utf-8")
    return tmp_path


def _workloads(folder: Path) -> dict[str, Workload]:
    source = str(folder / "people.csv")
    toml = load_workload(folder / "plan.toml")
    flags = workload_from_flags(
        source=source, epsilon=Fraction(1), by=["sex"], means=["income:0:1000"], where=WHERE,
        declaration={"keys": ["sex=1,2"], "columns": ["age:integer"]},
    )  # fmt: skip
    sql = parse_sql(SQL, toml.declaration, epsilon=1).workload
    page, _ = wj.workload_from_document(document_from_toml(PLAN, source), source, folder)
    query = Query("mean", "income", ("sex",), where=parse_predicate(WHERE, toml.declaration))
    api = Plan(toml.schema, [PlannedQuery(query, epsilon=Fraction(1))], source=source)
    return {"flags": flags, "toml": toml, "sql": sql, "page": page, "api": api.to_workload()}


def test_every_front_end_gives_one_workload(folder: Path) -> None:
    got = _workloads(folder)
    first = got["toml"]
    for name, workload in got.items():
        assert workload.queries == first.queries, name
        assert workload.schema == first.schema, name
        assert workload.confidence == first.confidence, name
    assert first.queries[0].query.where is not None and first.queries[0].epsilon == 1


def test_every_front_end_releases_the_same_values_through_one_session(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each workload released with seed 9 (a plan run: the planner's door), and the same query
    through ``PrivateTable.release`` and ``PrivateTable.sql``: one session run each, one set of
    values."""
    runs: list[int] = []
    real = session.run

    def counting(*args: Any, **kwargs: Any) -> Any:
        runs.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(session, "run", counting)
    released = {}
    for name, workload in _workloads(folder).items():
        plan = Plan.from_workload(workload)
        plan.total_epsilon = Fraction(3)
        results = plan.run(rng=np.random.default_rng(9)).results
        released[name] = [[row.value for row in r.rows] for r in results]
    toml = load_workload(folder / "plan.toml")
    source = str(folder / "people.csv")
    table = PrivateTable(source, toml.schema, total_epsilon=3, rng=np.random.default_rng(9))
    by_api = table.release([pq.query for pq in toml.queries], [Fraction(1)])
    released["PrivateTable.release"] = [[row.value for row in r.rows] for r in by_api]
    table = PrivateTable(source, toml.schema, total_epsilon=3, rng=np.random.default_rng(9))
    by_sql = table.sql(SQL, Fraction(1))
    released["PrivateTable.sql"] = [[row.value for row in r.rows] for r in by_sql]
    values = list(released.values())
    assert all(v == values[0] for v in values), released
    assert len(set(values[0][0])) == 2  # two cells, two different noisy means
    assert len(runs) == len(released)  # every door went through the one session


# -- compile_query: once per query per run ---------------------------------------------------
@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The labels of the queries compiled (the work behind ``statistics.compile_query``), with
    the per-process cache emptied first."""
    statistics._compiled.cache_clear()
    calls: list[str] = []
    real = statistics._compile

    def counting(query: Any, schema: Any, epsilon: Fraction) -> Any:
        calls.append(query.label)
        return real(query, schema, epsilon)

    monkeypatch.setattr(statistics, "_compile", counting)
    return calls


THREE = (
    PLAN
    + """
[[query]]
statistic = "count"
by = "sex"
epsilon = 0.5

[[query]]
statistic = "sum"
column = "income"
epsilon = 0.5
"""
)


def test_snapdp_run_of_three_queries_compiles_each_once(folder: Path, compiles: list[str]) -> None:
    (folder / "three.toml").write_text(THREE, encoding="utf-8")
    out = CliRunner().invoke(main, [
        "run", str(folder / "three.toml"), "--ledger", str(folder / "l.sqlite"),
        "--output", str(folder / "out"), "--json", "--total-epsilon", "3",
    ])  # fmt: skip
    assert out.exit_code == 0, out.output
    assert len(json.loads(out.output)["results"]) == 3
    shown = sorted(label.split(" where ")[0] for label in compiles)
    assert shown == ["count by sex", "mean(income) by sex", "sum(income)"]


def test_snapdp_sql_compiles_each_query_once(folder: Path, compiles: list[str]) -> None:
    out = CliRunner().invoke(main, [
        "sql", "SELECT sex, COUNT(*), AVG(income) FROM people GROUP BY sex",
        "--declaration", str(folder / "plan.toml"), "--epsilon", "1",
        "--ledger", str(folder / "l.sqlite"), "--total-epsilon", "3", "--json",
    ])  # fmt: skip
    assert out.exit_code == 0, out.output
    assert sorted(compiles) == ["count by sex", "mean(income) by sex"]


def test_private_table_release_compiles_each_query_once(folder: Path, compiles: list[str]) -> None:
    toml = load_workload(folder / "plan.toml")
    table = PrivateTable(str(folder / "people.csv"), toml.schema, total_epsilon=3,
                         rng=np.random.default_rng(1))  # fmt: skip
    queries = [
        Query("count", by=("sex",)),
        Query("mean", "income", ("sex",)),
        Query("sum", "income"),
    ]
    table.release(queries, [Fraction(1, 2)] * 3)
    assert sorted(compiles) == ["count by sex", "mean(income) by sex", "sum(income)"]
