"""The flags' ``--dry-run`` states the planner's ± for a consistent release: the numbers of
``snapdp plan`` and the page come from one place (issue 31). Before, the flags front end called
``consistent_statements`` itself; a change in the planner's statement did not reach it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from msgspec.structs import replace

from snapdp.cli import main
from snapdp.data.planner import consistent_accuracy

ARGS = ["--epsilon", "3", "--count", "--by", "sex,educ", "--bins", "sex=-1e309,1,1e309",
        "--bins", "educ=-1e309,2,3,1e309", "--nulls", "sex=0", "--nulls", "educ=1",
        "--consistent", "--dry-run", "--json"]  # fmt: skip


def test_the_dry_run_takes_the_consistent_pm_from_the_planner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "t.csv"
    data.write_text("sex,educ\n" + "0,1\n1,2\n" * 20)
    real = consistent_accuracy.consistent_statements
    calls: list[int] = []

    def marked(*args: Any, **kwargs: Any) -> Any:  # the planner's statement, recognisably moved
        calls.append(1)
        return [
            s if consistent_accuracy.NOTE not in s.notes else replace(s, accuracy=7)
            for s in real(*args, **kwargs)
        ]

    monkeypatch.setattr(consistent_accuracy, "consistent_statements", marked)
    out = CliRunner().invoke(main, ["release", str(data), *ARGS])
    assert out.exit_code == 0, out.output
    queries = json.loads(out.output)["queries"]
    assert calls, "the dry run did not ask the planner"
    fitted = [q["accuracy"] for q in queries if consistent_accuracy.NOTE in q["notes"]]
    assert fitted and all(a == 7 for a in fitted), queries
