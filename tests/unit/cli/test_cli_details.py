"""Command-line details of issue 34, item 7: each was wrong before (said in each test)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from snapdp.cli import main

DECL = """[data]
source = "{source}"
[columns]
age = {{ type = "integer", lower = 0, upper = 100 }}
sex = {{ type = "integer", keys = [0, 1] }}
"""


def _people(folder: Path) -> Path:
    path = folder / "people.csv"
    path.write_text("age,sex\n" + "".join(f"{20 + i % 50},{i % 2}\n" for i in range(40)))
    return path


def _plan(folder: Path, source: str, query: str) -> Path:
    path = folder / "plan.toml"
    text = DECL.format(source=source).replace("[data]\n", "[data]\ntotal_epsilon = 2\n", 1)
    path.write_text(text + "[[query]]\n" + query)
    return path


def _invoke(*args: str) -> tuple[int, str]:
    out = CliRunner().invoke(main, list(args))
    return out.exit_code, out.output


def test_sql_without_epsilon_names_only_its_own_flag(tmp_path: Path) -> None:
    """Was: "… exactly one of an ε (--epsilon, …), a target accuracy and a weight, not none"
    (`snapdp sql` has no target or weight flags)."""
    _people(tmp_path)
    decl = tmp_path / "decl.toml"
    decl.write_text(DECL.format(source="people.csv"))
    code, out = _invoke("sql", "SELECT COUNT(*) FROM people", "--declaration", str(decl))
    assert code != 0
    assert "--epsilon" in out and "OPTIONS(epsilon" in out
    assert "target" not in out and "weight" not in out


@pytest.mark.parametrize("command", ["run", "sql"])
def test_a_missing_source_names_the_key_and_the_resolved_path(tmp_path: Path, command: str) -> None:
    """Was: "`data` file not found: 'gone.csv'" (neither the `source` key nor where it was
    looked for)."""
    if command == "run":
        plan = _plan(tmp_path, "gone.csv", 'statistic = "count"\nepsilon = 1\n')
        args = ["run", str(plan), "--ledger", str(tmp_path / "l.sqlite")]
    else:
        decl = tmp_path / "decl.toml"
        decl.write_text(DECL.format(source="gone.csv"))
        args = ["sql", "SELECT COUNT(*) FROM gone", "--declaration", str(decl), "--epsilon", "1"]
    code, out = _invoke(*args)
    assert code != 0
    assert "`source`" in out and str((tmp_path / "gone.csv").resolve()) in out
    assert not (tmp_path / "l.sqlite").exists()


@pytest.mark.parametrize(
    ("query", "hint"),
    [
        ('statistic = "mean"\ncolumn = "agee"\nepsilon = 1\n', "did you mean 'age'?"),
        ('statistic = "meen"\ncolumn = "age"\nepsilon = 1\n', "did you mean 'mean'?"),
        ('statistic = "count"\nepsilonn = 1\n', "did you mean 'epsilon'?"),
    ],
)
def test_a_misspelt_column_statistic_or_key_gets_a_suggestion(
    tmp_path: Path, query: str, hint: str
) -> None:
    """Was: the refusal listed what is known, with no "did you mean"."""
    plan = _plan(tmp_path, "people.csv", query)
    code, out = _invoke("plan", str(plan))
    assert code != 0 and hint in out, out


@pytest.mark.parametrize("command", ["sql", "run"])
def test_help_says_required_once(command: str) -> None:
    """Was: "[required]  [required]" (once in the help text, once from click)."""
    code, out = _invoke(command, "--help")
    assert code == 0 and "[required]  [required]" not in " ".join(out.split("\n"))
    assert out.count("[required]") == 1


def test_budget_is_not_cut_at_80_columns(tmp_path: Path) -> None:
    """Was: the dataset (a full path) and the time were cut with "…" when piped (80 columns)."""
    folder = tmp_path / ("a-long-folder-name-" * 3)
    folder.mkdir()
    people = _people(folder)
    ledger = tmp_path / "ledger.sqlite"
    code, out = _invoke("release", str(people), "--epsilon", "0.5", "--count", "--ledger",
                        str(ledger), "--total-epsilon", "3")  # fmt: skip
    assert code == 0, out
    code, out = _invoke("budget", "--ledger", str(ledger))
    assert code == 0 and str(people) in out and "…" not in out, out


def test_a_failed_run_leaves_no_output_folder(tmp_path: Path) -> None:
    """Was: the output folder was created (to check it is writable) and left behind empty when
    the run then failed."""
    (tmp_path / "people.csv").write_text("age\n30\n")  # `sex` is declared but not in the file
    plan = _plan(tmp_path, "people.csv", 'statistic = "count"\nby = "sex"\nepsilon = 1\n')
    out_dir = tmp_path / "out" / "run"
    code, out = _invoke("run", str(plan), "--ledger", str(tmp_path / "l.sqlite"),
                        "--total-epsilon", "5", "--output", str(out_dir))  # fmt: skip
    assert "sex" in out, out  # refused for the missing column, not for the budget
    assert code != 0, out
    assert not (tmp_path / "out").exists()


def test_result_files_follow_the_umask(tmp_path: Path) -> None:
    """Was: results.csv, results.json, … were 0600 (a temporary file's mode)."""
    _people(tmp_path)
    plan = _plan(tmp_path, "people.csv", 'statistic = "count"\nepsilon = 1\n')
    mask = os.umask(0o022)
    os.umask(mask)
    code, out = _invoke("run", str(plan), "--ledger", str(tmp_path / "l.sqlite"),
                        "--total-epsilon", "5", "--output", str(tmp_path / "out"))  # fmt: skip
    assert code == 0, out
    files = sorted((tmp_path / "out").iterdir())
    want = 0o666 & ~mask
    assert want != 0o600  # the test would prove nothing under a umask of 077
    assert files and all(stat.S_IMODE(f.stat().st_mode) == want for f in files), [
        oct(f.stat().st_mode) for f in files
    ]
