"""The one release session (docs/data.md, "The order of a release"): every front end releases
through :mod:`snapdp.data.release.session`, which compiles each query once, and with one seed they
all release the same values."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from snapdp.cli import main
from snapdp.data import Plan, PrivateTable, statistics
from snapdp.data.budget.ledger import Ledger
from snapdp.ui import _workload_json as wj
from snapdp.ui._document_io import document_from_toml

PLAN = """[data]
source = "people.csv"
total_epsilon = 3

[columns]
age = { type = "integer", lower = 0, upper = 100 }
sex = { type = "integer", keys = [0, 1] }
income = { type = "decimal", lower = 0, upper = 5000 }

[[query]]
statistic = "count"
by = "sex"
epsilon = 0.5

[[query]]
statistic = "mean"
column = "income"
by = "sex"
epsilon = 0.5

[[query]]
statistic = "var_samp"
column = "age"
epsilon = 0.5
"""


@pytest.fixture
def plan_dir(tmp_path: Path) -> Path:
    rows = ["pid,age,sex,income"] + [
        f"{i},{20 + i % 50},{i % 2},{1000 + 7 * i}" for i in range(200)
    ]
    (tmp_path / "people.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (tmp_path / "plan.toml").write_text(PLAN, encoding="utf-8")
    return tmp_path


def test_a_plan_run_compiles_each_query_once(
    plan_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`snapdp run` plans (statements, refusals) and releases: each query is compiled once."""
    statistics._compiled.cache_clear()
    calls: list[str] = []
    real = statistics._compile

    def counting(query: Any, schema: Any, epsilon: Fraction) -> Any:
        calls.append(query.label)
        return real(query, schema, epsilon)

    monkeypatch.setattr(statistics, "_compile", counting)
    out = CliRunner().invoke(
        main,
        ["run", str(plan_dir / "plan.toml"), "--ledger", str(plan_dir / "l.sqlite"),
         "--output", str(plan_dir / "out"), "--json", "--total-epsilon", "3"],
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    assert len(json.loads(out.output)["results"]) == 3
    assert sorted(calls) == sorted(["count by sex", "mean(income) by sex", "var_samp(age)"])


def test_every_front_end_releases_the_same_values_through_the_session(plan_dir: Path) -> None:
    plan = Plan.load(plan_dir / "plan.toml")
    source = str(plan_dir / "people.csv")

    def values(results: Any) -> list[Any]:
        return [[row.value for row in r.rows] for r in results]

    by_plan = values(plan.run(rng=np.random.default_rng(11)).results)
    table = PrivateTable(source, plan.schema, total_epsilon=3, rng=np.random.default_rng(11))
    by_api = values(table.release([pq.query for pq in plan.queries], [Fraction(1, 2)] * 3))
    doc = document_from_toml(PLAN, source)
    page_plan, preview, _ = wj.plan_and_preview(doc, source, plan_dir)
    by_page = values(page_plan.run(preview=preview, rng=np.random.default_rng(11)).results)
    sql_table = PrivateTable(source, plan.schema, total_epsilon=3, rng=np.random.default_rng(11))
    by_sql = values(sql_table.sql("SELECT sex, COUNT(*) FROM people GROUP BY sex", Fraction(1, 2)))
    assert by_plan == by_api == by_page
    assert by_sql == by_plan[:1]
    assert len({v for r in by_plan for v in r}) > 3  # different noisy values, not one constant


def test_a_failure_after_the_noise_spends_in_the_api_too(
    plan_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fixed-ε release whose noise was drawn spends its ε even when it fails afterwards (the
    failure is an output); one that fails before any noise records nothing."""

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("injected after the noise")

    plan = Plan.load(plan_dir / "plan.toml")
    book = Ledger(plan_dir / "b.sqlite", 10)
    table = PrivateTable(str(plan_dir / "people.csv"), plan.schema, ledger=book,
                         rng=np.random.default_rng(3))  # fmt: skip
    monkeypatch.setattr(statistics, "assemble", boom)
    with pytest.raises(RuntimeError, match="injected"):
        table.release([pq.query for pq in plan.queries], "1.5")
    [entry] = book.entries()
    assert (entry.epsilon, entry.reserved, book.spent()) == (Fraction(3, 2), None, Fraction(3, 2))


def test_prepare_refuses_before_any_ledger_file(plan_dir: Path) -> None:
    plan = Plan.load(plan_dir / "plan.toml")
    bad = (plan_dir / "people.csv").read_text().replace("income", "salary")
    (plan_dir / "other.csv").write_text(bad, encoding="utf-8")
    table = PrivateTable(str(plan_dir / "other.csv"), plan.schema,
                         ledger=plan_dir / "never.sqlite", total_epsilon=3)  # fmt: skip
    with pytest.raises(Exception, match="column 'income' is not in"):
        table.release([pq.query for pq in plan.queries], "1.5")
    assert not (plan_dir / "never.sqlite").exists()
