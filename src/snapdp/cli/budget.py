"""``snapdp budget``: show a privacy-budget ledger."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from snapdp.cli._common import json_option, library_errors
from snapdp.data.ledger import Ledger
from snapdp.errors import ParameterError


@click.command()
@click.option("--ledger", type=click.Path(dir_okay=False), required=True, help="Ledger file.")
@json_option
@library_errors
def budget(ledger: str, as_json: bool) -> None:
    """Show a ledger: its total ε, every recorded release (what, when, ε, δ), what remains."""
    if not Path(ledger).is_file():
        raise ParameterError(f"`--ledger` file not found: {ledger!r}")
    book = Ledger(ledger)
    entries = book.entries()
    spent, remaining = float(book.spent()), float(book.remaining())
    if as_json:
        click.echo(
            json.dumps(
                {
                    "ledger": ledger,
                    "total_epsilon": book.total_epsilon,
                    "spent": spent,
                    "remaining": remaining,
                    "releases": [e.__dict__ for e in entries],
                }
            )
        )
        return
    table = Table(title=f"Privacy budget ledger {ledger}")
    for col in ("#", "time (UTC)", "ε", "δ", "released", "data"):
        table.add_column(col)
    for e in entries:
        table.add_row(str(e.id), e.time, f"{e.epsilon:.6g}", f"{e.delta:.3g}", e.what, e.dataset)
    console = Console()
    console.print(table)
    console.print(
        f"total ε = {book.total_epsilon:.6g}, spent {spent:.6g}, remaining {remaining:.6g}"
    )
