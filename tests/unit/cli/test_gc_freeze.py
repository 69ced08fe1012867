"""The ``snapdp`` command, run as its process's own command, freezes the garbage collector's view
of what it imported (issue 32: the collections of a fresh ``snapdp run``, the last one at exit
included, scanned every imported object, ~0.05-0.1 s of CPU), and freezes the rest once the
command is done; called with its arguments (a test's ``CliRunner``), it leaves the collector
alone."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from snapdp.cli import main

SRC = str(Path(__file__).resolve().parents[3] / "src")

_PROBE = """
import gc, sys
from snapdp.cli import main
sys.argv = ["snapdp", *sys.argv[1:]]
try:
    main(prog_name="snapdp")
except SystemExit:
    pass
print(gc.get_freeze_count(), len(gc.get_objects()))
"""


def _frozen_after(*args: str) -> tuple[int, int]:
    """The objects frozen once the command is done, and those left for the collector."""
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, *args], check=True, capture_output=True, text=True, env=env
    )
    frozen, left = out.stdout.strip().splitlines()[-1].split()
    return int(frozen), int(left)


def test_the_process_command_freezes_what_it_imported() -> None:
    frozen, left = _frozen_after("compare", "--help")
    assert frozen > 10_000  # the imports, the command's module and what the command made
    assert left < 1_000  # the collection at exit has (almost) nothing to scan
    assert frozen > _frozen_after("--version")[0]  # the command's module was frozen too


def test_a_command_invoked_with_its_arguments_leaves_the_collector_alone() -> None:
    before = gc.get_freeze_count()
    result = CliRunner().invoke(main, ["compare", "--help"])
    assert result.exit_code == 0
    assert gc.get_freeze_count() == before
