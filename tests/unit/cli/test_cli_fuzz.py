"""No generated bad argument to `budget`, `verify`, `compare` or `release --value` ends in a
traceback: every run exits through click (status 0, 1, 2) with at most one error line."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from snapdp.cli import main
from snapdp.data import Ledger

_JUNK = ["", " ", "abc", "nan", "-nan", "inf", "-inf", "1e999", "-1", "0", "-0", "1/3", "0x10",
         "1e-999", "١", "0.1.2", "--json", "1_000", "True", "1e4001", "\x00", "💥"]  # fmt: skip
_NUMBERS = ["0.5", "1", "2", "10", "-10", "3", "1e-3", "100"]

# Each command: its fixed valid arguments, then the options a test may replace with junk.
_COMMANDS: dict[str, tuple[list[str], dict[str, list[str]]]] = {
    "release": (
        ["--value", "3", "--epsilon", "1", "--lower", "0", "--upper", "10"],
        {
            "--value": _NUMBERS,
            "--epsilon": _NUMBERS,
            "--lower": _NUMBERS,
            "--upper": _NUMBERS,
            "--sensitivity": _NUMBERS,
            "--alpha": ["0.05", "0.5", "1", "0"],
            "--total-epsilon": _NUMBERS,
            "--dataset": ["a", "value", " "],
        },
    ),
    "verify": (
        ["--epsilon", "1", "--lower", "0", "--upper", "4", "--value", "0", "--neighbour", "1"],
        {
            "--epsilon": ["1", "2", "0.5"],
            "--lower": ["0", "-4"],
            "--upper": ["4", "2"],
            "--value": ["0", "1", "4"],
            "--neighbour": ["1", "0", "3"],
            "--sensitivity": ["1", "2"],
            "--samples": ["100", "99"],
        },
    ),
    "compare": (
        ["--epsilon", "1", "--lower", "0", "--upper", "1"],
        {
            "--epsilon": _NUMBERS,
            "--lower": _NUMBERS,
            "--upper": _NUMBERS,
            "--value": _NUMBERS,
            "--sensitivity": _NUMBERS,
        },
    ),
    "budget": ([], {"--dataset": ["a", "b", ""], "--lock-timeout": ["1", "0", "-1"]}),
}


def _ledgers(folder: Path) -> list[str]:
    """Ledger paths of every kind: good, missing, a folder, junk, foreign, tampered."""
    good = folder / "good.sqlite"
    if not good.exists():
        Ledger(good, 1, dataset="a").spend("0.5", 0.0, "x", "t", {})
        (folder / "junk.sqlite").write_bytes(b"junk" * 100)
        with sqlite3.connect(folder / "foreign.sqlite") as con:
            con.execute("CREATE TABLE t (x)")
        con.close()
        tampered = folder / "tampered.sqlite"
        Ledger(tampered, 1).spend("0.5", 0.0, "x", "t", {})
        with sqlite3.connect(tampered) as con:
            con.execute("UPDATE spends SET epsilon = '-1/2'")
        con.close()
    names = ["good", "missing", "junk", "foreign", "tampered"]
    return [str(folder / f"{n}.sqlite") for n in names] + [str(folder), ""]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@st.composite
def _arguments(draw: st.DrawFn, folder: Path) -> list[str]:
    command = draw(st.sampled_from(sorted(_COMMANDS)))
    fixed, options = _COMMANDS[command]
    chosen = dict(zip(fixed[::2], fixed[1::2], strict=True))
    for flag in draw(st.lists(st.sampled_from(sorted(options)), max_size=4, unique=True)):
        pool = options[flag] + _JUNK
        chosen[flag] = draw(st.sampled_from(pool) | st.text(max_size=8))
    if command in ("release", "budget") and (command == "budget" or draw(st.booleans())):
        chosen["--ledger"] = draw(st.sampled_from(_ledgers(folder)))
    if command == "budget" and draw(st.booleans()):
        chosen["--export"] = str(folder / draw(st.sampled_from(["h.csv", "h.json", "h.txt"])))
    if command == "compare":  # a valid compare writes a full report (seconds): always break one
        chosen["--output"] = str(folder / "report")
        chosen[draw(st.sampled_from(sorted(options)))] = draw(st.sampled_from(_JUNK))
    args = [command]
    for flag, value in chosen.items():
        if flag not in ("--output", "--export") and draw(st.integers(0, 9)) == 0:
            continue  # sometimes leave a required option out (never where files are written)
        args += [flag, value]
    for flag in draw(st.lists(st.sampled_from(["--json", "--dry-run", "--textbook"]), max_size=2)):
        if command in ("release", "verify") or flag == "--json":
            args.append(flag)
    return args


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_no_bad_argument_ends_in_a_traceback(folder: Path, data: st.DataObject) -> None:
    args = data.draw(_arguments(folder))
    if args[0] == "compare" and "--json" in args:
        args.remove("--json")  # compare has no --json
    result = CliRunner().invoke(main, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        args,
        result.output,
        result.exc_info,
    )
    assert result.exit_code in (0, 1, 2), (args, result.output)
    assert "Traceback" not in result.output
    assert sum("Error" in line for line in result.output.splitlines()) <= 1, (args, result.output)
