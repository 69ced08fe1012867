"""The ``snapdp`` command: thin glue over the library (DESIGN §9).

Every error becomes one clean line at one boundary (:class:`snapdp.cli._common.BoundaryGroup`):
no traceback reaches the user, flags are named as flags, ``--json`` errors are JSON, Ctrl-C exits
130. Each command lives in its own module.
"""

from __future__ import annotations

import click

from snapdp import __version__
from snapdp.cli._common import BoundaryGroup
from snapdp.cli.budget import budget
from snapdp.cli.check import check
from snapdp.cli.compare import compare
from snapdp.cli.plan import plan, run
from snapdp.cli.release import release
from snapdp.cli.sql import sql
from snapdp.cli.ui import ui
from snapdp.cli.verify import verify

__all__ = ["main"]


@click.group(cls=BoundaryGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="snapdp")
def main() -> None:
    """Differentially private releases through Mironov's snapping mechanism."""


main.add_command(release)
main.add_command(compare)
main.add_command(verify)
main.add_command(budget)
main.add_command(check)
main.add_command(plan)
main.add_command(run)
main.add_command(sql)
main.add_command(ui)
