"""``snapdp release`` over tables and ``snapdp budget``: results, and every bad input refused
cleanly with nothing written to the ledger."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from snapdp.cli import main
from snapdp.data import Ledger


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def test_demo_release_without_data_json() -> None:
    code, out = _run("release", "--epsilon", "1", "--count", "--mean", "age:0:100",
                     "--by", "region", "--json")  # fmt: skip
    assert code == 0, out
    doc = json.loads(out)
    count, mean = doc["results"]
    assert count["keys"] == ["north", "south", "east", "west", "central"]
    assert sum(count["values"]) == pytest.approx(100_000, abs=200)
    assert all(0 <= v <= 100 for v in mean["values"])
    assert count["epsilon"] + mean["epsilon"] == 1


def test_demo_release_table_output() -> None:
    code, out = _run("release", "--epsilon", "1", "--sum", "income:0:500000")
    assert code == 0, out
    assert "sum(income)" in out and "± accuracy (95%)" in out and "remaining" in out


def test_single_value_mode_still_works() -> None:
    code, out = _run("release", "--value", "42", "--epsilon", "1", "--lower", "0", "--upper", "100")
    assert code == 0 and "release" in out and "accuracy" in out


def test_pums_release_with_ledger_and_budget_command(pums: Path, tmp_path: Path) -> None:
    ledger = str(tmp_path / "b.sqlite")
    args = ["release", str(pums / "PUMS_dup.csv"), "--epsilon", "0.5", "--count",
            "--mean", "income:0:500000", "--keys", "sex=0,1", "--privacy-unit", "pid",
            "--max-rows-per-unit", "2", "--max-rows", "2000", "--ledger", ledger,
            "--total-epsilon", "1", "--json"]  # fmt: skip
    code, out = _run(*args)
    assert code == 0, out
    assert json.loads(out)["budget_remaining"] == 0.5
    code, out = _run("budget", "--ledger", ledger, "--json")
    doc = json.loads(out)
    assert doc["spent"] == 0.5 and doc["releases"][0]["what"] == "count, mean(income) by sex"
    code, out = _run("budget", "--ledger", ledger)
    assert code == 0 and "remaining 0.5" in out
    _run(*args)
    code, out = _run(*args)  # the budget is exhausted now
    assert code == 1 and "privacy budget exceeded" in out
    assert len(Ledger(ledger).entries()) == 2


def _bad_inputs(pums: Path, tmp: Path) -> list[tuple[list[str], str]]:
    bad_csv = tmp / "bad.csv"
    pd.DataFrame({"x": ["1", "2", "abc", "4"], "g": [1, 1, 2, 2]}).to_csv(bad_csv, index=False)
    csv = str(pums / "PUMS.csv")
    base = ["--epsilon", "0.5", "--max-rows", "2000"]
    return [
        ([str(tmp / "missing.csv"), *base], "file not found"),
        ([csv, *base, "--sum", "wealth:0:10"], "column 'wealth' is not in the data"),
        ([csv, *base, "--privacy-unit", "pid"], "column 'pid' is not in the data"),
        ([csv, *base, "--keys", "region=a,b"], "column 'region' is not in the data"),
        ([str(bad_csv), *base, "--sum", "x:0:10"], "non-numeric value(s), e.g. 'abc'"),
        ([str(pums / "PUMS_null.csv"), *base, "--mean", "age:0:100"], "null/NaN"),
        ([csv, *base, "--sum", "income:0"], "COLUMN:LOWER:UPPER"),
        ([csv, *base, "--sum", "income:zero:10"], "bounds must be numbers"),
        ([csv, *base, "--mean", "income:10:0"], "LOWER < UPPER"),
        ([csv, *base, "--keys", "sex"], "COLUMN=key1,key2"),
        ([csv, *base, "--by", "sex"], "keys declared in advance"),
        ([csv, "--epsilon", "0.5", "--count"], "--max-rows"),
        ([csv, *base, "--max-rows-per-unit", "3"], "needs a `--privacy-unit`"),
        ([csv, "--epsilon", "-1", "--max-rows", "10"], "epsilon"),
        ([csv, *base, "--epsilon", "5"], "privacy budget exceeded"),
    ]


def test_every_bad_input_is_a_clean_error_and_writes_nothing(pums: Path, tmp_path: Path) -> None:
    ledger = str(tmp_path / "b.sqlite")
    Ledger(ledger, 1.0).spend(0.25, 0.0, "earlier", "t", {})
    for args, message in _bad_inputs(pums, tmp_path):
        code, out = _run("release", *args, "--ledger", ledger)
        assert code in (1, 2), (args, out)
        assert message in out.replace("\n", " ").replace("  ", " "), (args, out)
        assert "Traceback" not in out
        assert [e.what for e in Ledger(ledger).entries()] == ["earlier"], args


def test_budget_command_on_a_missing_ledger(tmp_path: Path) -> None:
    code, out = _run("budget", "--ledger", str(tmp_path / "nope.sqlite"))
    assert code == 2 and "not found" in out
