"""Running plans: one ledger entry per plan, none on a failure part-way; the four outputs; the
CLI end to end (docs/plans.md)."""

from __future__ import annotations

import csv
import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from tests.unit.data._engines import oracle_engine

from snapdp.cli import main
from snapdp.data import Plan, statistics
from snapdp.data.budget.ledger import Ledger
from snapdp.data.release import run as run_module

ROWS = "pid,age,sex\n" + "".join(f"{i},{20 + i % 50},{i % 2}\n" for i in range(60))

PLAN = """[data]
source = "d.csv"
privacy_unit = "pid"
max_rows_per_unit = 1
total_epsilon = 3

[columns]
age = { type = "integer", lower = 0, upper = 100 }
sex = { type = "integer", keys = [0, 1] }

[[query]]
statistic = "count"
by = ["sex"]
epsilon = 0.5

[[query]]
statistic = "count"
accuracy = 20

[[query]]
statistic = "sum"
column = "age"
weight = 1
"""


def _spends(path: Path) -> int:
    """The number of spends recorded in a ledger file, over every dataset."""
    import sqlite3

    con = sqlite3.connect(path)
    try:
        return int(con.execute("SELECT COUNT(*) FROM spends").fetchone()[0])
    finally:
        con.close()


@pytest.fixture
def plan_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "d.csv").write_text(ROWS, encoding="utf-8")
    (tmp_path / "plan.toml").write_text(PLAN, encoding="utf-8")
    # the oracle engine stands for the data (the DuckDB engine is tested on its own)
    monkeypatch.setattr(run_module, "_default_engine", lambda source, schema: oracle_engine(source))
    return tmp_path


def test_run_is_one_ledger_entry_and_writes_four_outputs(plan_dir: Path) -> None:
    plan = Plan.load(plan_dir / "plan.toml")
    book = Ledger(plan_dir / "b.sqlite", 10)
    done = plan.run(ledger=book, output=plan_dir / "out", rng=np.random.default_rng(7))
    entries = book.entries()
    assert len(entries) == 1
    assert Fraction(entries[0].epsilon) == done.preview.total == 3  # the whole total: weights
    assert [r.epsilon for r in done.results] == done.preview.epsilons
    names = sorted(p.name for p in (plan_dir / "out").iterdir())
    assert names == ["report.html", "results.csv", "results.json", "results.parquet"]
    with open(plan_dir / "out" / "results.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 + 1 + 1 and rows[0]["sex"] == "0" and rows[1]["sex"] == "1"
    table = pq.read_table(plan_dir / "out" / "results.parquet")
    assert table.num_rows == 4 and table.column("sex").to_pylist()[:2] == [0, 1]
    assert table.column("value").to_pylist() == [float(r["value"]) for r in rows]
    data = json.loads((plan_dir / "out" / "results.json").read_text(encoding="utf-8"))
    first = data["queries"][0]
    assert first["keys"] == {"sex": [0, 1]} and len(first["value"]) == len(first["accuracy"]) == 2
    assert data["epsilon"] == "3"
    html = (plan_dir / "out" / "report.html").read_text(encoding="utf-8")
    assert (
        html.count("<svg") == 3 and "count by sex" in html and "http" not in html.split("<svg")[0]
    )


def test_a_failure_after_the_noise_leaves_the_cap_spent(
    plan_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure after the noise is drawn, before the results are assembled: the whole ε is
    spent (never less: the noise exists), and nothing is written."""

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("injected failure after the noise")

    monkeypatch.setattr(statistics, "assemble", boom)
    plan = Plan.load(plan_dir / "plan.toml")
    book = Ledger(plan_dir / "b.sqlite", 10)
    with pytest.raises(RuntimeError, match="injected"):
        plan.run(ledger=book, output=plan_dir / "out", rng=np.random.default_rng(7))
    [entry] = book.entries()
    assert (entry.reserved, entry.epsilon, book.spent()) == (None, 3, 3)
    assert not (plan_dir / "out").exists()  # nothing written, and the folder it made removed


def test_a_failure_before_any_noise_returns_the_whole_reservation(
    plan_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The source fails while it is aggregated (no noise drawn, nothing released): a plan of
    fixed ε records nothing."""

    class Unreadable:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def column_names(self) -> list[str]:
            return list(self.inner.column_names())

        def describe(self) -> str:
            return "unreadable"

        def aggregate(self, plan: Any) -> Any:
            raise OSError("injected: the source cannot be read")

    monkeypatch.setattr(
        run_module, "_default_engine", lambda source, schema: Unreadable(oracle_engine(source))
    )
    plan = Plan.load(plan_dir / "plan.toml")
    book = Ledger(plan_dir / "b.sqlite", 10)
    with pytest.raises(OSError, match="injected"):
        plan.run(ledger=book, rng=np.random.default_rng(7))
    assert (book.entries(), book.spent()) == ([], 0)


def test_an_unwritable_output_spends_nothing(plan_dir: Path) -> None:
    (plan_dir / "taken").write_text("a file, not a folder", encoding="utf-8")
    plan = Plan.load(plan_dir / "plan.toml")
    book = Ledger(plan_dir / "b.sqlite", 10)
    with pytest.raises(ValueError, match="`output` folder"):
        plan.run(ledger=book, output=plan_dir / "taken" / "out")
    assert book.entries() == []


def test_a_plan_built_in_code_runs_the_same(plan_dir: Path) -> None:
    loaded = Plan.load(plan_dir / "plan.toml")
    built = Plan(loaded.schema, loaded.queries, source=str(plan_dir / "d.csv"), total_epsilon=3)
    a = loaded.run(rng=np.random.default_rng(3))
    b = built.run(rng=np.random.default_rng(3))
    assert [r.rows for r in a.results] == [r.rows for r in b.results]


def test_cli_plan_and_run(plan_dir: Path) -> None:
    runner = CliRunner()
    shown = runner.invoke(main, ["plan", str(plan_dir / "plan.toml"), "--json"])
    assert shown.exit_code == 0, shown.output
    preview = json.loads(shown.output)
    assert preview["queries"][0]["epsilon"] == "0.5"
    assert preview["total_epsilon_used"] == "3"
    assert all(isinstance(q["flags"], list) for q in preview["queries"])  # usefulness warnings
    target = preview["queries"][1]
    assert target["accuracy"] <= target["target"] == 20
    assert not (plan_dir / "b.sqlite").exists()  # plan spends nothing, creates no ledger
    text = runner.invoke(main, ["plan", str(plan_dir / "plan.toml")])
    assert text.exit_code == 0 and "target ±20" in text.output and "total ε: 3 of 3" in text.output
    ran = runner.invoke(
        main,
        ["run", str(plan_dir / "plan.toml"), "--ledger", str(plan_dir / "b.sqlite"),
         "--output", str(plan_dir / "o"), "--json", "--total-epsilon", "3"],
    )  # fmt: skip
    assert ran.exit_code == 0, ran.output
    out = json.loads(ran.output)
    assert out["epsilon_spent"] == "3" and len(out["files"]) == 4
    assert _spends(plan_dir / "b.sqlite") == 1
    args = ["run", str(plan_dir / "plan.toml"), "--ledger", str(plan_dir / "b.sqlite")]
    again = runner.invoke(main, [*args, "--output", str(plan_dir / "o2")])
    assert again.exit_code == 1 and "budget" in again.output.lower()
    shown_text = runner.invoke(
        main,
        [
            "run",
            str(plan_dir / "plan.toml"),
            "--ledger",
            str(plan_dir / "b2.sqlite"),
            "--total-epsilon",
            "3",
        ],
    )
    assert shown_text.exit_code == 0, shown_text.output
    assert "count by sex" in shown_text.output and "Wrote " in shown_text.output
    assert (plan_dir / "plan-results" / "report.html").is_file()  # the default output folder
    assert _spends(plan_dir / "b.sqlite") == 1


def test_cli_bad_plan_is_one_clean_line(plan_dir: Path) -> None:
    bad = PLAN.replace('by = ["sex"]', 'by = ["region"]')
    (plan_dir / "bad.toml").write_text(bad, encoding="utf-8")
    r = CliRunner().invoke(main, ["plan", str(plan_dir / "bad.toml")])
    assert r.exit_code == 2
    assert "bad.toml, line 13, key `query[1].by`: column 'region' is not declared" in r.output
    assert "Traceback" not in r.output


def test_statistics_assemble_is_the_patched_name() -> None:
    """The failure injection above patches the name the plan run calls (through the release
    core, :mod:`snapdp.data.release.core`)."""
    import inspect

    from snapdp.data.release import core, session

    assert "release_core(" in inspect.getsource(session.run)
    assert "statistics.assemble(" in inspect.getsource(core.release_core)
