"""Only the data owner sets a dataset's lifetime budget (docs/plans.md, "Who sets the budget"):
`snapdp run` spends from the ledger's entry or from `--total-epsilon` given on its command line,
never from the plan file's `total_epsilon`; `snapdp budget --total-epsilon` sets a new budget
without releasing anything and never changes one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.unit.data._engines import oracle_engine

from snapdp.cli import main
from snapdp.data import Plan
from snapdp.data.budget.ledger import Ledger
from snapdp.data.release import run as run_module
from snapdp.errors import ParameterError

ROWS = "pid,age,sex\n" + "".join(f"{i},{20 + i % 50},{i % 2}\n" for i in range(60))
PLAN = """[data]
source = "d.csv"
total_epsilon = 3

[columns]
sex = { type = "integer", keys = [0, 1] }

[[query]]
statistic = "count"
by = ["sex"]
epsilon = 0.5
"""


@pytest.fixture
def plan_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "d.csv").write_text(ROWS, encoding="utf-8")
    (tmp_path / "plan.toml").write_text(PLAN, encoding="utf-8")
    monkeypatch.setattr(run_module, "_default_engine", lambda source, schema: oracle_engine(source))
    return tmp_path


def _run(plan_dir: Path, *extra: str) -> object:
    args = ["run", str(plan_dir / "plan.toml"), "--ledger", str(plan_dir / "b.sqlite")]
    return CliRunner().invoke(main, [*args, "--output", str(plan_dir / "o"), "--json", *extra])


def test_run_refuses_to_create_a_budget_from_the_plan_file(
    plan_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: a first `snapdp run` made the plan's total_epsilon (or the plan's total) the
    dataset's lifetime budget. Now it is refused before the source is opened, in one line that
    names the flag, and nothing is written."""

    def no_data(source: object, schema: object) -> object:
        raise AssertionError("the source was opened")

    monkeypatch.setattr(run_module, "_default_engine", no_data)
    r = _run(plan_dir)
    assert r.exit_code == 2, r.output  # type: ignore[attr-defined]
    text = r.output.strip()  # type: ignore[attr-defined]
    assert "\n" not in text and "`--total-epsilon`" in text and "snapdp budget" in text
    assert "has no privacy budget" in text and "Fraction(" not in text
    assert not (plan_dir / "b.sqlite").exists() and not (plan_dir / "o").exists()


def test_the_library_refuses_too(plan_dir: Path) -> None:
    plan = Plan.load(plan_dir / "plan.toml")
    with pytest.raises(ParameterError) as info:
        plan.run(ledger=plan_dir / "b.sqlite")
    assert info.value.parameter == "total_epsilon"
    assert not (plan_dir / "b.sqlite").exists()


def test_run_spends_from_the_owners_flag(plan_dir: Path) -> None:
    r = _run(plan_dir, "--total-epsilon", "2")
    assert r.exit_code == 0, r.output  # type: ignore[attr-defined]
    name = str((plan_dir / "d.csv").resolve())
    assert Ledger(plan_dir / "b.sqlite", dataset=name).total_epsilon == 2  # not the plan's 3


def test_budget_sets_a_new_budget_and_run_spends_from_it(plan_dir: Path) -> None:
    name = str((plan_dir / "d.csv").resolve())
    ledger = str(plan_dir / "b.sqlite")
    args = ["budget", "--ledger", ledger, "--dataset", name]
    r = CliRunner().invoke(main, [*args, "--total-epsilon", "5"])
    assert r.exit_code == 0 and "total ε set 5" in r.output and "nothing spent" in r.output
    book = Ledger(ledger, dataset=name)
    assert book.total_epsilon == 5 and book.spent() == 0 and not book.entries()
    ran = _run(plan_dir)
    assert ran.exit_code == 0, ran.output  # type: ignore[attr-defined]
    assert json.loads(ran.output)["epsilon_spent"] == "0.5"  # type: ignore[attr-defined]
    assert Ledger(ledger, dataset=name).remaining() == 5 - 0.5


def test_budget_never_changes_a_budget(plan_dir: Path) -> None:
    ledger = str(plan_dir / "b.sqlite")
    args = ["budget", "--ledger", ledger, "--dataset", "survey"]
    assert CliRunner().invoke(main, [*args, "--total-epsilon", "1.5"]).exit_code == 0
    same = CliRunner().invoke(main, [*args, "--total-epsilon", "1.5"])
    assert same.exit_code == 0 and "was already 1.5" in same.output
    r = CliRunner().invoke(main, [*args, "--total-epsilon", "4"])
    text = r.output.strip()
    assert r.exit_code == 2 and "\n" not in text, text
    assert "`--total-epsilon`" in text and "already has total ε = 1.5" in text
    assert "never changed" in text and "'" not in text
    assert Ledger(ledger, dataset="survey").total_epsilon == 1.5


def test_budget_needs_a_dataset(plan_dir: Path) -> None:
    r = CliRunner().invoke(
        main, ["budget", "--ledger", str(plan_dir / "b.sqlite"), "--total-epsilon", "1"]
    )
    assert r.exit_code == 2 and "`--dataset`" in r.output
    assert not (plan_dir / "b.sqlite").exists()
