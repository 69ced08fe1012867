"""Started as the ``snapdp`` command, the process imports the command's libraries with the
collector off and runs the command with a larger young generation (issue 32: ~150 collections,
15-35 ms of a fresh ``snapdp run``'s CPU); imported any other way, ``snapdp`` and ``snapdp.cli``
leave the collector as they found it, and ``import snapdp`` imports its public names only when
they are first used."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import snapdp
import snapdp.cli as cli

SRC = str(Path(__file__).resolve().parents[3] / "src")

_PROBE = """
import gc, sys
sys.orig_argv[:] = [sys.executable, *sys.argv[1:]]
starts = []
gc.callbacks.append(lambda phase, info: starts.append(1) if phase == "start" else None)
import snapdp.cli
print(len(starts), gc.isenabled(), gc.get_freeze_count() > 10_000, gc.get_threshold()[0])
"""


def _python(code: str, *args: str) -> list[str]:
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run(
        [sys.executable, "-c", code, *args], check=True, capture_output=True, text=True, env=env
    )
    return out.stdout.split()


def test_started_as_the_command_its_imports_make_no_collection() -> None:
    collections, enabled, frozen, young = _python(_PROBE, "-m", "snapdp.cli", "run")
    assert (collections, enabled, frozen, young) == ("0", "True", "True", "700")


def test_imported_otherwise_the_collector_runs_as_usual() -> None:
    collections, enabled, frozen, _ = _python(_PROBE, "-m", "pytest", "-m", "snapdp.cli")
    assert int(collections) > 0 and enabled == "True" and frozen == "False"


@pytest.mark.parametrize(
    ("orig_argv", "argv0", "launched"),
    [
        (["python3", "-m", "snapdp.cli", "run"], "-m", True),
        (["python3", "-X", "importtime", "-W", "error", "-m", "snapdp.cli"], "-m", True),
        (["python3", "-I", "-msnapdp.cli"], "-m", True),
        (["python3", "/usr/local/bin/snapdp", "run"], "/usr/local/bin/snapdp", True),
        (["python3", "-m", "pytest", "-m", "snapdp.cli"], "-m", False),
        (["python3", "-c", "import snapdp.cli", "-m", "snapdp.cli"], "-c", False),
        (["python3", "tool.py", "-m", "snapdp.cli"], "tool.py", False),
        # a tool that runs the script in its own process is not the command
        (["python3", "/venv/bin/coverage", "run", "/venv/bin/snapdp"], "/venv/bin/snapdp", False),
        (["python3", "-", "run"], "-", False),
    ],
)
def test_which_processes_are_the_command(
    monkeypatch: pytest.MonkeyPatch, orig_argv: list[str], argv0: str, launched: bool
) -> None:
    monkeypatch.setattr(sys, "orig_argv", orig_argv)
    monkeypatch.setattr(sys, "argv", [argv0])
    assert cli._launched_as_the_command() is launched


_RUN = """
import gc, sys
from snapdp.cli import main

@main.command("probe")
def probe():
    print(gc.isenabled(), gc.get_threshold()[0])

before = gc.get_threshold()
sys.argv = ["snapdp", "probe"]
try:
    main()
except SystemExit:
    pass
print(gc.get_threshold() == before, main._process)
"""


def test_the_command_runs_with_a_larger_young_generation() -> None:
    # While the command runs; afterwards, code that goes on gets the usual collector back.
    assert _python(_RUN) == ["True", str(cli._YOUNG), "True", "False"]
    assert gc.get_threshold()[0] < cli._YOUNG


def test_a_command_invoked_with_its_arguments_keeps_the_thresholds() -> None:
    before = gc.get_threshold()
    assert CliRunner().invoke(cli.main, ["compare", "--help"]).exit_code == 0
    assert gc.get_threshold() == before and gc.isenabled()


@pytest.mark.parametrize(
    ("code", "printed", "missing"),
    [
        (  # the public names, imported when first used
            "import sys, snapdp; print('snapdp.mechanism' in sys.modules, 'numpy' in sys.modules);"
            "print(all(getattr(snapdp, n).__name__ == n for n in snapdp.__all__))",
            ["False", "False", "True"],
            "nothing",
        ),
        (  # `import snapdp` imported the mechanism, so `snapdp.mechanism` was there; it still is
            "import snapdp; print(snapdp.mechanism.__name__, snapdp.ieee.__name__);"
            "print(snapdp.SnappingMechanism is snapdp.mechanism.SnappingMechanism)",
            ["snapdp.mechanism", "snapdp.ieee", "True"],
            "__wrapped__",
        ),
    ],
)
def test_importing_snapdp_imports_its_names_when_used(
    code: str, printed: list[str], missing: str
) -> None:
    assert _python(code) == printed
    with pytest.raises(AttributeError, match=f"no attribute '{missing}'"):
        getattr(snapdp, missing)
