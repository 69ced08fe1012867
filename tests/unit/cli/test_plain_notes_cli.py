"""`snapdp run` and `snapdp sql` print a result's notes in plain words, each with its docs page,
as the page does; `--details` prints the release's exact statements; `--json` is unchanged (the
exact statements, no plain words). Was: the command line printed only the technical notes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from tests.unit.data._engines import oracle_engine

from snapdp.cli import main
from snapdp.data.release import run as run_module

ROWS = "pid,age,sex\n" + "".join(f"{i},{20 + i % 50},{i % 2}\n" for i in range(60))
DECLARATION = """[data]
source = "d.csv"
total_epsilon = 3

[columns]
age = { type = "integer", lower = 0, upper = 100 }
sex = { type = "integer", keys = [0, 1] }
"""
PLAN = (
    DECLARATION
    + """
[[query]]
statistic = "count"
by = ["sex"]
epsilon = 0.5
"""
)
TECHNICAL = "neighbours: add or remove one row"
PLAIN = "Privacy protects each row"


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "d.csv").write_text(ROWS, encoding="utf-8")
    (tmp_path / "plan.toml").write_text(PLAN, encoding="utf-8")
    (tmp_path / "decl.toml").write_text(DECLARATION, encoding="utf-8")
    monkeypatch.setattr(run_module, "_default_engine", lambda source, schema: oracle_engine(source))
    return tmp_path


def _run(folder: Path, *flags: str) -> Result:
    ledger = ["--ledger", str(folder / "b.sqlite"), "--total-epsilon", "100"]
    args = ["run", str(folder / "plan.toml"), *ledger, "--output", str(folder / "o")]
    return CliRunner().invoke(main, [*args, *flags])


def _sql(folder: Path, *flags: str) -> Result:
    query = "SELECT sex, COUNT(*) FROM d GROUP BY sex"
    args = ["sql", query, "--declaration", str(folder / "decl.toml"), "--epsilon", "0.5"]
    return CliRunner().invoke(main, [*args, *flags])


@pytest.mark.parametrize("command", [_run, _sql])
def test_notes_in_plain_words_and_the_statements_behind_details(
    folder: Path, command: object
) -> None:
    assert callable(command)
    plain = command(folder)
    assert plain.exit_code == 0, plain.output
    assert PLAIN in plain.output and "(docs/data.md, “Contribution bounding”)" in plain.output
    assert TECHNICAL not in plain.output and "clamped" not in plain.output
    assert "--details prints the exact statement of each note" in plain.output
    exact = command(folder, "--details")
    assert exact.exit_code == 0, exact.output
    assert TECHNICAL in exact.output and PLAIN not in exact.output


@pytest.mark.parametrize("command", [_run, _sql])
def test_json_keeps_the_exact_statements(folder: Path, command: object) -> None:
    assert callable(command)
    outputs = [command(folder, "--json", *extra) for extra in ((), ("--details",))]
    docs = [json.loads(r.output) for r in outputs]
    for doc in docs:
        (result,) = doc["results"]
        assert any(n.startswith(TECHNICAL) for n in result["notes"])
        assert "plain_notes" not in result and PLAIN not in json.dumps(doc)
    assert [r["notes"] for r in docs[0]["results"]] == [r["notes"] for r in docs[1]["results"]]
