"""``snapdp check``: what in a table does not fit its declaration, WITHOUT privacy (docs/data.md).

Thin glue over :func:`snapdp.data.owner.check.check`, with the same declaration flags as
``snapdp release`` (:func:`snapdp.cli._data.declaration_options`), so that an owner checks exactly
the declaration a release will use.
"""

from __future__ import annotations

import json
from typing import Any

import click

from snapdp.cli._common import json_option, library_errors
from snapdp.cli._data import declaration_options, schema_from_options
from snapdp.data.owner.check import check as check_table

__all__ = ["check"]


@click.command()
@click.argument("data", type=str)
@declaration_options
@click.option("--glob", is_flag=True, help="Read DATA as a file pattern (default: literal path).")
@click.option("--memory-limit", default=None, help="DuckDB's memory limit, e.g. 2GB.")
@json_option
@library_errors
def check(
    data: str, glob: bool, memory_limit: str | None, as_json: bool, **declaration: Any
) -> None:
    """Check DATA against a declaration, WITHOUT privacy: for the data owner only.

    Reports exact counts and example cells of what does not fit: cast failures, nulls, values
    outside the bounds, undeclared keys, rows over each contribution bound, the true row count
    against --rows. Spends nothing and opens no ledger. See docs/data.md ("snapdp check").
    """
    schema = schema_from_options(**declaration)
    report = check_table(data, schema, glob=glob, memory_limit=memory_limit)
    if as_json:
        click.echo(json.dumps(report.to_dict(), default=str))
        return
    warning, _, rest = report.to_text().partition("\n")
    click.secho(warning, bold=True)
    click.echo(rest)
