"""The command line around budgets: exact ε, `release --value` with a ledger, dry runs, JSON
errors, `budget` listing and export, Ctrl-C, the error boundary, plain numbers."""

from __future__ import annotations

import csv
import importlib
import json
import os
import sqlite3
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from snapdp.cli import main
from snapdp.cli._common import FLAGS, _flags_in, plain_number
from snapdp.data import Ledger
from snapdp.data.budget.ledger import read_ledger
from snapdp.data.model.names import flag_for
from snapdp.mechanism import SnappingMechanism

VALUE = ["release", "--value", "3", "--lower", "0", "--upper", "10"]


def _run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def _clean(result: Result) -> None:
    """No traceback: click exits (SystemExit) or returns; an error is a single line."""
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert "Traceback" not in result.output
    assert sum("Error" in line for line in result.output.splitlines()) <= 1


@pytest.fixture
def no_noise(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("noise was drawn")

    monkeypatch.setattr(SnappingMechanism, "release", refuse)
    monkeypatch.setattr(SnappingMechanism, "release_many", refuse)


# -- exact ε end to end ----------------------------------------------------------------------
def test_ten_releases_of_a_tenth_fit_a_total_of_one_and_the_eleventh_is_refused(
    tmp_path: Path,
) -> None:
    ledger = str(tmp_path / "b.sqlite")
    args = [*VALUE, "--epsilon", "0.1", "--ledger", ledger, "--total-epsilon", "1"]
    for _ in range(10):
        result = _run(*args, "--json")
        assert result.exit_code == 0, result.output
        doc = json.loads(result.output)
        assert doc["epsilon_exact"] == "1/10" and doc["dataset"] == "value"
    assert doc["budget_remaining"] == "0"
    result = _run(*args)
    assert result.exit_code == 1 and "privacy budget exceeded" in result.output
    assert "needs ε = 0.1 but only 0 of the total 1 remains" in result.output
    _clean(result)
    shown = _run("budget", "--ledger", ledger)
    assert shown.exit_code == 0 and "value: total ε = 1, spent 1, remaining 0 " in shown.output
    doc = json.loads(_run("budget", "--ledger", ledger, "--json").output)
    assert doc["remaining_exact"] == "0/1" and doc["spent_exact"] == "1/1"
    assert len(doc["releases"]) == 10 and doc["releases"][0]["epsilon_exact"] == "1/10"


def test_epsilon_is_parsed_as_the_typed_decimal(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[object] = []
    original = SnappingMechanism.__init__

    def spy(self: SnappingMechanism, epsilon: object, *args: object, **kw: object) -> None:
        seen.append(epsilon)
        original(self, epsilon, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(SnappingMechanism, "__init__", spy)
    result = _run(*VALUE, "--epsilon", "0.3", "--json")
    assert result.exit_code == 0, result.output
    assert seen == [Fraction(3, 10)]
    assert json.loads(result.output)["epsilon_exact"] == "3/10"


# -- --value honours --ledger, --dry-run, --json ---------------------------------------------
def test_value_mode_spends_on_the_named_dataset(tmp_path: Path) -> None:
    ledger = str(tmp_path / "b.sqlite")
    base = [*VALUE, "--epsilon", "0.25", "--ledger", ledger]
    result = _run(*base, "--total-epsilon", "0.5", "--dataset", "survey")
    assert result.exit_code == 0, result.output
    assert "spent ε = 0.25 on 'survey'" in result.output and "remaining ε = 0.25" in result.output
    assert _run(*base, "--dataset", "survey").exit_code == 0
    refused = _run(*base, "--dataset", "survey")
    assert refused.exit_code == 1 and "dataset 'survey'" in refused.output
    (budget,) = read_ledger(ledger).datasets
    assert (budget.dataset, budget.spent, budget.releases) == ("survey", Fraction(1, 2), 2)
    missing = _run(*base, "--dataset", "other")
    assert missing.exit_code == 2 and "`--total-epsilon` is needed" in missing.output


def test_dry_run_draws_no_noise_and_writes_nothing(tmp_path: Path, no_noise: None) -> None:
    ledger = tmp_path / "b.sqlite"
    result = _run(*VALUE, "--epsilon", "0.5", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "no noise drawn" in result.output and "accuracy  ±" in result.output
    args = [*VALUE, "--epsilon", "0.5", "--dry-run", "--ledger", str(ledger)]
    result = _run(*args, "--total-epsilon", "2", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["dry_run"] is True and "release" not in doc and doc["budget_remaining"] == "2"
    assert doc["would_be_refused"] is False
    assert not ledger.exists()
    Ledger(ledger, "0.25", dataset="value").spend("0.25", 0.0, "x", "t", {})
    result = _run(*args)
    assert result.exit_code == 0, result.output
    assert "remaining ε = 0 on 'value' (this release would be refused)" in result.output
    assert Ledger(ledger, dataset="value").spent() == Fraction(1, 4)


def test_json_errors_are_json_on_stdout(tmp_path: Path) -> None:
    for args, code, text in [
        ([*VALUE, "--epsilon", "abc"], 2, "--epsilon"),  # click's own parse error
        ([*VALUE, "--epsilon", "1", "--alpha", "2"], 2, "`--alpha` must be in (0, 1)"),
        (["budget", "--ledger", str(tmp_path / "none.sqlite")], 2, "does not exist"),
        ([*VALUE, "--epsilon", "1", "--total-epsilon", "1"], 2, "need `--ledger`"),
    ]:
        result = CliRunner().invoke(main, [*args, "--json"])
        assert result.exit_code == code, result.output
        assert text in json.loads(result.stdout)["error"]


def test_a_foreign_ledger_is_refused_before_noise_and_left_untouched(
    tmp_path: Path, no_noise: None
) -> None:
    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE people (name TEXT)")
    con.close()
    before = path.read_bytes()
    args = [*VALUE, "--epsilon", "1", "--ledger", str(path), "--total-epsilon", "1"]
    result = _run(*args)
    assert result.exit_code == 1 and "not a snapdp ledger" in result.output
    assert str(path) in result.output
    _clean(result)
    assert path.read_bytes() == before
    shown = _run("budget", "--ledger", str(path))
    assert shown.exit_code == 1 and "not a snapdp ledger" in shown.output


def test_an_unwritable_ledger_is_refused_before_noise(tmp_path: Path, no_noise: None) -> None:
    path = tmp_path / "b.sqlite"
    Ledger(path, 1, dataset="value").spend("0.5", 0.0, "x", "t", {})
    Path(f"{path}-journal").mkdir()  # SQLite cannot create its journal: unwritable, even for root
    result = _run(*VALUE, "--epsilon", "0.1", "--ledger", str(path))
    assert result.exit_code == 1 and "cannot be written" in result.output
    _clean(result)


# -- budget: listing, datasets, export, damaged and old files ----------------------------------
def _two_datasets(tmp_path: Path) -> str:
    ledger = str(tmp_path / "b.sqlite")
    Ledger(ledger, "1", dataset="a").spend("0.1", 0.0, "count", "A", {"k": 1})
    Ledger(ledger, "2", dataset="b").spend(Fraction(1, 3), 1e-9, "sum(x)", "B", {})
    return ledger


def test_budget_lists_datasets_and_filters_one(tmp_path: Path) -> None:
    ledger = _two_datasets(tmp_path)
    result = _run("budget", "--ledger", ledger)
    assert result.exit_code == 0, result.output
    assert "a: total ε = 1, spent 0.1, remaining 0.9" in result.output
    assert "b: total ε = 2, spent 1/3, remaining 5/3" in result.output
    doc = json.loads(_run("budget", "--ledger", ledger, "--dataset", "b", "--json").output)
    assert [d["dataset"] for d in doc["datasets"]] == ["b"] and doc["remaining_exact"] == "5/3"
    assert [r["what"] for r in doc["releases"]] == ["sum(x)"]
    bad = _run("budget", "--ledger", ledger, "--dataset", "c")
    assert bad.exit_code == 2 and "its datasets: 'a', 'b'" in bad.output


def test_budget_exports_the_whole_history(tmp_path: Path) -> None:
    ledger = _two_datasets(tmp_path)
    out_csv, out_json = tmp_path / "h.csv", tmp_path / "h.json"
    assert (
        _run("budget", "--ledger", ledger, "--dataset", "a", "--export", str(out_csv)).exit_code
        == 0
    )
    rows = list(csv.DictReader(out_csv.open(encoding="utf-8")))
    assert [(r["dataset"], r["epsilon"], r["epsilon_exact"]) for r in rows] == [
        ("a", "0.1", "1/10"),
        ("b", "1/3", "1/3"),
    ]
    assert json.loads(rows[0]["query"]) == {"k": 1}
    assert _run("budget", "--ledger", ledger, "--export", str(out_json)).exit_code == 0
    doc = json.loads(out_json.read_text(encoding="utf-8"))
    assert len(doc["releases"]) == 2 and len(doc["datasets"]) == 2
    bad = _run("budget", "--ledger", ledger, "--export", str(tmp_path / "h.txt"))
    assert bad.exit_code == 2 and "`--export` must end in .csv or .json" in bad.output
    missing = _run("budget", "--ledger", ledger, "--export", str(tmp_path / "no" / "h.csv"))
    assert missing.exit_code == 2 and "does not exist" in missing.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.sqlite", "h.csv", "h.json"]


def test_budget_on_a_missing_or_tampered_ledger(tmp_path: Path) -> None:
    missing = _run("budget", "--ledger", str(tmp_path / "none.sqlite"))
    assert missing.exit_code == 2 and "does not exist" in missing.output
    assert not (tmp_path / "none.sqlite").exists()
    ledger = _two_datasets(tmp_path)
    with sqlite3.connect(ledger) as con:
        con.execute("UPDATE spends SET epsilon = '1/100' WHERE id = 1")
    con.close()
    result = _run("budget", "--ledger", ledger)
    assert result.exit_code == 1 and "damaged or was edited" in result.output
    _clean(result)


def test_budget_reads_an_old_ledger_without_changing_it(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    con = sqlite3.connect(path)
    con.executescript(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "CREATE TABLE spends (id INTEGER PRIMARY KEY AUTOINCREMENT, time TEXT NOT NULL, "
        "epsilon REAL NOT NULL, delta REAL NOT NULL, what TEXT NOT NULL, dataset TEXT NOT NULL, "
        "query TEXT NOT NULL);"
        "INSERT INTO meta VALUES ('total_epsilon', '1.0'), ('created', 'then');"
        "INSERT INTO spends (time, epsilon, delta, what, dataset, query) "
        "VALUES ('then', 0.5, 0.0, 'count', 'PUMS.csv', '{}');"
    )
    con.commit()
    con.close()
    before = path.read_bytes()
    result = _run("budget", "--ledger", str(path))
    assert result.exit_code == 0, result.output
    assert "PUMS.csv: total ε = 1, spent 0.5, remaining 0.5" in result.output
    assert "caps all datasets together at ε = 1" in result.output
    assert path.read_bytes() == before


# -- Ctrl-C, unexpected errors, flags ----------------------------------------------------------
def test_ctrl_c_before_the_spend_says_nothing_spent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupt(*args: object) -> float:
        raise KeyboardInterrupt

    monkeypatch.setattr(SnappingMechanism, "release", interrupt)
    ledger = tmp_path / "b.sqlite"
    result = _run(*VALUE, "--epsilon", "1", "--ledger", str(ledger), "--total-epsilon", "1")
    assert result.exit_code == 130 and "interrupted, nothing spent" in result.output
    assert not ledger.exists()
    _clean(result)


def test_ctrl_c_after_the_spend_says_where_it_was_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupt(*args: object, **kwargs: object) -> str:
        raise KeyboardInterrupt

    module = importlib.import_module("snapdp.cli.release")  # (the attribute is the command)
    monkeypatch.setattr(module, "plain_number", interrupt)
    ledger = tmp_path / "b.sqlite"
    result = _run(*VALUE, "--epsilon", "1", "--ledger", str(ledger), "--total-epsilon", "1")
    assert result.exit_code == 130
    assert "interrupted after the spend was committed (ledger" in result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("With ε = 1")  # the plain summary comes first
    assert any(line.startswith("release   ") for line in lines)  # the paid-for result is shown
    assert Ledger(ledger, dataset="value").spent() == 1


def test_an_unexpected_error_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object) -> float:
        raise sqlite3.OperationalError("disk image is malformed\nsecond line")

    monkeypatch.setattr(SnappingMechanism, "release", broken)
    result = _run(*VALUE, "--epsilon", "1")
    assert result.exit_code == 1
    assert "Error: sqlite3 error: disk image is malformed second line" in result.output
    _clean(result)
    as_json = _run(*VALUE, "--epsilon", "1", "--json")
    assert as_json.exit_code == 1 and "sqlite3 error" in json.loads(as_json.stdout)["error"]
    monkeypatch.setenv("SNAPDP_TRACEBACK", "1")
    assert isinstance(_run(*VALUE, "--epsilon", "1").exception, sqlite3.OperationalError)


@pytest.mark.parametrize("error", [ValueError, KeyError, RuntimeError])
def test_an_unexpected_errors_text_is_not_shown(
    monkeypatch: pytest.MonkeyPatch, error: type[Exception]
) -> None:
    """A dependency's or an unexpected error's text may quote a cell of the data: only its
    class is shown (the ledger's sqlite3 errors and file errors keep theirs, above)."""

    def broken(*args: object) -> float:
        raise error("SENTINEL-cell-value 4711")

    monkeypatch.setattr(SnappingMechanism, "release", broken)
    for extra in ((), ("--json",)):
        result = _run(*VALUE, "--epsilon", "1", *extra)
        assert result.exit_code == 1
        assert "SENTINEL" not in result.output and "4711" not in result.output
        assert f"unexpected error ({error.__name__})" in result.output


def test_parameter_names_become_flags() -> None:
    own = {"lower": "--lower", "upper": "--upper"}  # the command's own options win
    assert _flags_in("`max_rows` must be > 0 and `lower` < `upper`", own) == (
        "`--max-rows` must be > 0 and `--lower` < `--upper`"
    )
    # else the one table of names (docs/sql.md, "One workload"): a value column's flags
    assert _flags_in("`lower`", {}) == f"`{flag_for('lower')}`"
    assert _flags_in("`timeout` and `unknown_name`", {}) == "`--lock-timeout` and `unknown_name`"
    assert _flags_in("`bins`", {"bins": "--bins"}) == "`--bins`"
    assert FLAGS["max_rows_per_unit"] == "--max-rows-per-unit"
    result = _run(*VALUE, "--epsilon", "1", "--sensitivity", "-1")
    assert result.exit_code == 2 and "`--sensitivity` must be > 0" in result.output


def test_dataset_flag_names_a_table_budget(tmp_path: Path) -> None:
    """The owner names the dataset; changing bounds or keys spends from the same budget."""
    ledger = str(tmp_path / "b.sqlite")
    base = ["release", "--epsilon", "0.5", "--ledger", ledger, "--total-epsilon", "1"]
    first = _run(*base, "--count", "--dataset", "census")
    assert first.exit_code == 0, first.output
    second = _run(*base, "--mean", "age:0:90", "--dataset", "census")
    assert second.exit_code == 0, second.output
    assert Ledger(ledger, dataset="census").remaining() == 0
    third = _run(*base, "--count", "--dataset", "census")
    assert third.exit_code != 0 and "budget" in third.output


def test_help_texts_cite_docs_pages_only() -> None:
    for command in ("release", "budget", "verify", "compare"):
        text = _run(command, "--help").output
        assert "DESIGN" not in text and "seed 0" not in text, command
    assert "[required]" in _run("budget", "--help").output


# -- plain numbers -----------------------------------------------------------------------------
def test_plain_numbers() -> None:
    assert plain_number(1.5e20) == "150,000,000,000,000,000,000"
    assert plain_number(1e-7) == "0.0000001"
    assert plain_number(-1234567.5) == "-1,234,567.5"
    assert plain_number(12345.6789, digits=3) == "12,300"
    assert plain_number(0.0) == "0" and plain_number(3) == "3"
    assert plain_number(Fraction(1, 10)) == "0.1"
    assert plain_number(float("inf")) == "inf"


def test_big_values_print_without_scientific_notation() -> None:
    args = ["release", "--value", "1e20", "--lower", "0", "--upper", "1e21", "--epsilon", "1"]
    result = _run(*args)
    assert result.exit_code == 0, result.output
    (line,) = [x for x in result.output.splitlines() if x.startswith("release ")]
    released = line.split()[1]
    assert "e" not in released and "," in released
    assert float(released.replace(",", "")) % 1 == 0


_HOLD_LOCK = """
import sqlite3, sys
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.readline()
"""


def test_a_held_lock_is_one_line_after_the_timeout(tmp_path: Path, no_noise: None) -> None:
    ledger = str(tmp_path / "b.sqlite")
    Ledger(ledger, 1, dataset="value").spend("0.5", 0.0, "x", "t", {})
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK, ledger],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        result = _run("budget", "--ledger", ledger, "--lock-timeout", "0.2")
        assert result.exit_code == 1 and "locked by another process" in result.output
        _clean(result)
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(30)
    assert _run("budget", "--ledger", ledger).exit_code == 0


def test_real_processes_print_one_line_and_no_traceback(tmp_path: Path) -> None:
    """The installed entry point, in a real process: errors from the ledger and from click."""
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"junk" * 100)
    src = str(Path(__file__).resolve().parents[3] / "src")
    env = {**os.environ, "PYTHONPATH": src}
    for args, code, text in [
        (["budget", "--ledger", str(junk)], 1, "is not an SQLite database"),
        (["budget", "--ledger", str(junk), "--json"], 1, '{"error": "ledger'),
        ([*VALUE, "--epsilon", "0"], 2, "`--epsilon` must be > 0"),
    ]:
        done = subprocess.run(
            [sys.executable, "-m", "snapdp.cli", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert done.returncode == code, (args, done.stdout, done.stderr)
        output = done.stdout + done.stderr
        assert text in output and "Traceback" not in output
        assert sum("Error" in line for line in output.splitlines()) <= 1
