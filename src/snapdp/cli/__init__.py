"""The ``snapdp`` command: thin glue over the library (DESIGN §9).

Every error becomes one clean line at one boundary (:class:`snapdp.cli._common.BoundaryGroup`):
no traceback reaches the user, flags are named as flags, ``--json`` errors are JSON, Ctrl-C exits
130. Each command lives in its own module, imported only when that command runs (or help lists
it), so that ``snapdp run`` does not pay for the page's server, ``rich`` tables or the owner's
check (docs/performance.md, "Latency").
"""

from __future__ import annotations

import importlib

import click

from snapdp import __version__
from snapdp.cli._common import BoundaryGroup

__all__ = ["COMMANDS", "main"]

#: Command name → the module defining it (its function has the command's name).
COMMANDS: dict[str, str] = {
    "release": "snapdp.cli.release",
    "compare": "snapdp.cli.compare",
    "verify": "snapdp.cli.verify",
    "budget": "snapdp.cli.budget",
    "check": "snapdp.cli.check",
    "plan": "snapdp.cli.plan",
    "run": "snapdp.cli.plan",
    "sql": "snapdp.cli.sql",
    "ui": "snapdp.cli.ui",
}


class _LazyGroup(BoundaryGroup):
    """A :class:`BoundaryGroup` whose commands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            command = getattr(importlib.import_module(COMMANDS[cmd_name]), cmd_name)
            self.add_command(command, cmd_name)
        return self.commands.get(cmd_name)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="snapdp")
def main() -> None:
    """Differentially private releases through Mironov's snapping mechanism."""
