"""The ``snapdp`` command, started as its process's own command, ends the process without the
interpreter's teardown (snapdp.cli._exit; docs/performance.md, "Latency"), and nothing else
changes: exit handlers registered before the command and by it run, stdout is written whole,
the status is the one ``SystemExit`` gives, and the shared DuckDB database's spill folder is
removed. Called with its arguments (a test's ``CliRunner``) or by code that goes on after it, the
command still raises ``SystemExit``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.unit.cli._run_probe import _PLAN

from snapdp.cli._exit import exit_status

SRC = str(Path(__file__).resolve().parents[3] / "src")

#: Registered at the interpreter's start, before the command: its exit handler must still run,
#: and an executor left with an idle worker must not keep the process from ending.
_SITE = """
import atexit, concurrent.futures, os
atexit.register(lambda: open(os.environ["MARKER"], "a").write("ran\\n"))
_POOL = concurrent.futures.ThreadPoolExecutor(1)
_POOL.submit(int).result()
"""


def _command(folder: Path, *args: str, launched: bool = True) -> subprocess.CompletedProcess[str]:
    """``python -m snapdp.cli ARGS`` in ``folder`` with the exit handler above installed, its
    temporary folders under ``folder``/tmp; not ``launched``: the same command called from
    ``python -c`` code, which ends through the interpreter's usual exit."""
    site = folder / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(_SITE, encoding="utf-8")
    (folder / "tmp").mkdir(exist_ok=True)
    path = os.pathsep.join([str(site), SRC, os.environ.get("PYTHONPATH", "")])
    env = dict(
        os.environ, PYTHONPATH=path, MARKER=str(folder / "marker"), TMPDIR=str(folder / "tmp")
    )
    env["SNAPDP_CACHE_DIR"] = str(folder / "cache")
    how = ["-m", "snapdp.cli"] if launched else ["-c", _CALLED, "snapdp"]
    return subprocess.run(
        [sys.executable, *how, *args],
        capture_output=True, text=True, env=env, cwd=folder, timeout=120,
    )  # fmt: skip


_CALLED = "import sys; from snapdp.cli import main; sys.argv = sys.argv[1:]; main()"


def _marker(folder: Path) -> str:
    return (folder / "marker").read_text(encoding="utf-8")


def test_exit_status_is_the_interpreters(capsys: pytest.CaptureFixture[str]) -> None:
    assert exit_status(None) == 0
    assert exit_status(0) == 0 and exit_status(2) == 2 and exit_status(130) == 130
    assert capsys.readouterr().err == ""
    assert exit_status("stopped: see above") == 1
    assert capsys.readouterr().err == "stopped: see above\n"


def test_help_is_written_whole_and_earlier_exit_handlers_run(tmp_path: Path) -> None:
    done = _command(tmp_path, "run", "--help")
    assert done.returncode == 0, done.stderr
    assert _marker(tmp_path) == "ran\n"
    usual = _command(tmp_path, "run", "--help", launched=False)
    assert usual.returncode == 0 and len(done.stdout) > 1_000
    assert done.stdout == usual.stdout


def test_a_refusal_keeps_its_status_and_message(tmp_path: Path) -> None:
    done = _command(tmp_path, "run", "missing.toml", "--ledger", "l.db")
    assert done.returncode == 2
    assert done.stderr.startswith("Error: missing.toml") and "Traceback" not in done.stderr
    assert _marker(tmp_path) == "ran\n"


def test_a_run_writes_everything_and_removes_its_spill_folder(tmp_path: Path) -> None:
    data = tmp_path / "people.csv"
    rows = "".join(f"{20 + i % 50},{1000 + 37 * i},{i % 2}\n" for i in range(40))
    data.write_text("age,income,sex\n" + rows, encoding="utf-8")
    (tmp_path / "plan.toml").write_text(_PLAN.format(source=data.as_posix()), encoding="utf-8")
    args = ("run", "plan.toml", "--ledger", "l.db", "--output", "out", "--total-epsilon", "100")
    done = _command(tmp_path, *args)
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith("report.html")  # the last line printed arrived
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "report.html", "results.csv", "results.json", "results.parquet",
    ]  # fmt: skip
    assert _marker(tmp_path) == "ran\n"
    # the shared database's spill folder (removed by an exit handler the run registered)
    assert [p.name for p in (tmp_path / "tmp").iterdir() if p.name.startswith("snapdp-")] == []
    again = _command(tmp_path, *args)  # the ledger kept the first run's entry
    assert again.returncode == 0, again.stderr
    assert "remaining ε = " in again.stdout and "remaining ε = 100" not in again.stdout


def test_code_that_goes_on_after_the_command_still_gets_system_exit(tmp_path: Path) -> None:
    probe = (
        "import sys\n"
        "from snapdp.cli import main\n"
        "sys.argv = ['snapdp', '--version']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exc:\n"
        "    print('went on', exc.code)\n"
    )
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True
    )
    assert done.stdout.splitlines()[-1] == "went on 0"
