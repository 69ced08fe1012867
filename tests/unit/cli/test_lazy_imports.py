"""The CLI imports a command's module only when that command runs (docs/performance.md,
"Latency"): ``snapdp run`` pays neither for the page's server nor for ``rich`` nor for the owner's
check, and every command named in the table is found."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click

from snapdp.cli import COMMANDS, main

SRC = str(Path(__file__).resolve().parents[3] / "src")

_PROBE = """
import json, sys
import click
from snapdp.cli import main
ctx = click.Context(main)
command = main.get_command(ctx, "run")
assert command is not None and command.name == "run"
heavy = ("pandas", "rich", "snapdp.ui.server", "snapdp.data.owner.check", "snapdp.cli.verify",
         "snapdp.cli.budget", "snapdp.data.frontends.demo", "matplotlib", "pyarrow", "sqlglot",
         "polars")
print(json.dumps([m for m in heavy if m in sys.modules]))
"""


def test_run_command_loads_no_other_command() -> None:
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], check=True, capture_output=True, text=True, env=env
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_every_listed_command_resolves_to_its_name() -> None:
    ctx = click.Context(main)
    assert main.list_commands(ctx) == sorted(COMMANDS)
    for name in COMMANDS:
        command = main.get_command(ctx, name)
        assert command is not None and command.name == name
    assert main.get_command(ctx, "no-such-command") is None


_BAR_PROBE = """
import sys
from snapdp.cli._progress import progress_bar
with progress_bar("running") as update:
    assert update is None
print("rich" in sys.modules)
"""


def test_no_progress_bar_and_no_rich_without_a_terminal() -> None:
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for name in ("FORCE_TERMINAL", "TTY_INTERACTIVE", "FORCE_COLOR"):
        env.pop(name, None)
    out = subprocess.run(
        [sys.executable, "-c", _BAR_PROBE], check=True, capture_output=True, text=True, env=env
    )
    assert out.stdout.strip() == "False"
