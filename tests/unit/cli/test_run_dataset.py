"""`snapdp run --dataset NAME`: the name of the dataset's budget in the ledger, as `snapdp sql
--dataset` and `snapdp budget --dataset` (docs/cli.md; docs/plans.md). Default: the plan's
`[data] dataset`, else the source file's resolved path. Was: no such flag, and the plan's
`dataset` was ignored by `snapdp run`."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from tests.unit.data._engines import oracle_engine

from snapdp.cli import main
from snapdp.data.budget.ledger import Ledger
from snapdp.data.release import run as run_module

ROWS = "pid,age,sex\n" + "".join(f"{i},{20 + i % 50},{i % 2}\n" for i in range(60))
PLAN = """[data]
source = "d.csv"
total_epsilon = 3
{extra}
[columns]
sex = {{ type = "integer", keys = [0, 1] }}

[[query]]
statistic = "count"
by = ["sex"]
epsilon = 0.5
"""


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "d.csv").write_text(ROWS, encoding="utf-8")
    monkeypatch.setattr(run_module, "_default_engine", lambda source, schema: oracle_engine(source))
    return tmp_path


def _run(folder: Path, plan_extra: str, *flags: str) -> Result:
    (folder / "plan.toml").write_text(PLAN.format(extra=plan_extra), encoding="utf-8")
    args = ["run", str(folder / "plan.toml"), "--ledger", str(folder / "b.sqlite"), "--json"]
    return CliRunner().invoke(main, [*args, "--output", str(folder / "o"), *flags])


def _datasets(folder: Path) -> dict[str, int]:
    return {d.dataset: d.releases for d in Ledger.datasets(folder / "b.sqlite")}


def test_run_spends_under_the_named_dataset(folder: Path) -> None:
    first = _run(folder, "", "--dataset", "census", "--total-epsilon", "1")
    assert first.exit_code == 0, first.output
    assert _datasets(folder) == {"census": 1}
    second = _run(folder, "", "--dataset", "census")  # the owner's budget, set by the first
    assert second.exit_code == 0, second.output
    assert _datasets(folder) == {"census": 2}
    assert Ledger(folder / "b.sqlite", dataset="census").remaining() == 0
    third = _run(folder, "", "--dataset", "census")
    assert third.exit_code != 0 and "budget" in third.output
    assert _datasets(folder) == {"census": 2}


def test_the_plans_dataset_is_the_default_and_the_flag_wins(folder: Path) -> None:
    r = _run(folder, 'dataset = "survey"', "--total-epsilon", "2")
    assert r.exit_code == 0, r.output
    assert _datasets(folder) == {"survey": 1}
    r = _run(folder, 'dataset = "survey"', "--dataset", "census", "--total-epsilon", "2")
    assert r.exit_code == 0, r.output
    assert _datasets(folder) == {"survey": 1, "census": 1}


def test_without_either_the_dataset_is_the_sources_path(folder: Path) -> None:
    r = _run(folder, "", "--total-epsilon", "2")
    assert r.exit_code == 0, r.output
    assert _datasets(folder) == {str((folder / "d.csv").resolve()): 1}


def test_help_names_the_flag() -> None:
    text = CliRunner().invoke(main, ["run", "--help"]).output
    assert "--dataset NAME" in text
