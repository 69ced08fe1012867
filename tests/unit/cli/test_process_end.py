"""The ``snapdp`` command, started as its process's own command, ends the process without the
interpreter's teardown (snapdp.cli._exit; docs/performance.md, "Latency"), and nothing else
changes: exit handlers registered before the command and by it run, stdout is written whole,
the status is the one ``SystemExit`` gives, and the shared DuckDB database's spill folder is
removed. Called with its arguments (a test's ``CliRunner``) or by code that goes on after it, the
command still raises ``SystemExit``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.unit.cli._run_probe import _PLAN

from snapdp.cli import main
from snapdp.cli._exit import exit_status

SRC = str(Path(__file__).resolve().parents[3] / "src")
_EXIT = str(Path(SRC) / "snapdp" / "cli" / "_exit.py")

#: Registered at the interpreter's start, before the command: its exit handler must still run,
#: and an executor left with an idle worker must not keep the process from ending.
_SITE = """
import atexit, concurrent.futures, os
atexit.register(lambda: open(os.environ["MARKER"], "a").write("ran\\n"))
atexit.register(print, "an exit handler's line")  # stdout is flushed after the handlers
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
    env.pop("PYTHONUNBUFFERED", None)  # stdout to a pipe is buffered, as for most callers
    how = ["-m", "snapdp.cli"] if launched else ["-c", _CALLED, "snapdp"]
    return subprocess.run(
        [sys.executable, *how, *args],
        capture_output=True, text=True, env=env, cwd=folder, timeout=120,
    )  # fmt: skip


_CALLED = "import sys; from snapdp.cli import main; sys.argv = sys.argv[1:]; main()"


def _marker(folder: Path) -> str:
    return (folder / "marker").read_text(encoding="utf-8")


#: Codes of ``SystemExit`` whose status and message are compared with CPython's own.
_CODES = ["None", "0", "True", "False", "2", "-1", "256", "2**31", "2**32 + 3", "2**63",
          "-2**31 - 1", "-2**63", "'stopped: see above'", "1.5", "(1, 2)"]  # fmt: skip


@pytest.mark.parametrize("code", _CODES)
def test_the_status_and_message_are_the_interpreters(code: str) -> None:
    # the module alone, loaded from its file (it needs the standard library only): a light process
    load = (
        "import importlib.util as u; s = u.spec_from_file_location('_exit', sys.argv[1]); "
        "m = u.module_from_spec(s); s.loader.exec_module(m); "
    )
    ours = subprocess.run(
        [sys.executable, "-c", f"import sys; {load}m.end_process({code})", _EXIT],
        capture_output=True, text=True,
    )  # fmt: skip
    theirs = subprocess.run(
        [sys.executable, "-c", f"raise SystemExit({code})"], capture_output=True, text=True
    )
    assert (ours.returncode, ours.stdout, ours.stderr) == (
        theirs.returncode, theirs.stdout, theirs.stderr,
    )  # fmt: skip
    assert exit_status(eval(code)) % 256 == theirs.returncode


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
    lines = done.stdout.splitlines()
    assert lines[-2].startswith("Wrote ") and lines[-2].endswith("report.html")
    assert lines[-1] == "an exit handler's line"  # printed after the command, still written
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


def test_ctrl_c_while_the_process_ends_keeps_the_status(tmp_path: Path) -> None:
    # A thread that is no daemon keeps the exit waiting; Ctrl-C then is reported as ignored,
    # as the interpreter reports it, and the exit goes on with the command's status.
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(
        "import atexit, os, threading, time\n"
        "atexit.register(lambda: open(os.environ['MARKER'], 'a').write('ran\\n'))\n"
        "threading.Thread(target=time.sleep, args=(20,)).start()\n",
        encoding="utf-8",
    )
    path = os.pathsep.join([str(tmp_path / "site"), SRC, os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path, MARKER=str(tmp_path / "marker"), PYTHONUNBUFFERED="1")
    with subprocess.Popen(
        [sys.executable, "-m", "snapdp.cli", "--version"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    ) as process:  # fmt: skip
        assert process.stdout is not None and process.stderr is not None
        assert process.stdout.readline().startswith("snapdp, version")
        time.sleep(2)  # the command is done: the exit waits for the sleeping thread (20 s)
        process.send_signal(signal.SIGINT)
        status = process.wait(timeout=15)
        err = process.stderr.read()
    assert status == 0, err
    assert (
        err.startswith("Exception ignored in: <module 'threading'") and "KeyboardInterrupt" in err
    )
    assert "Traceback (most recent call last)" in err  # the ignored exception's own, as CPython
    assert err.count("Traceback") == 1
    assert _marker(tmp_path) == "ran\n"  # exit handlers ran after it


def test_a_command_run_from_a_test_opens_no_database_ahead(tmp_path: Path) -> None:
    data = tmp_path / "people.csv"
    data.write_text("age,income,sex\n30,1000,0\n", encoding="utf-8")
    (tmp_path / "plan.toml").write_text(_PLAN.format(source=data.as_posix()), encoding="utf-8")
    args = ["run", str(tmp_path / "plan.toml"), "--ledger", str(tmp_path / "l.db")]
    result = CliRunner().invoke(main, args)  # no budget for the dataset: refused
    assert result.exit_code == 2, result.output
    assert [t for t in threading.enumerate() if t.name == "snapdp-open-database"] == []
