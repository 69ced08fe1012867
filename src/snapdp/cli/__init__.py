"""The ``snapdp`` command: thin glue over the library (DESIGN §9).

Library errors (ParameterError, PrivacyBudgetError) become clean one-line CLI errors here, at one
boundary; no traceback reaches the user for bad input. Each command lives in its own module.
"""

from __future__ import annotations

import click

from snapdp import __version__
from snapdp.cli.budget import budget
from snapdp.cli.check import check
from snapdp.cli.compare import compare
from snapdp.cli.release import release
from snapdp.cli.verify import verify

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="snapdp")
def main() -> None:
    """Differentially private releases through Mironov's snapping mechanism."""


main.add_command(release)
main.add_command(compare)
main.add_command(verify)
main.add_command(budget)
main.add_command(check)
