"""``snapdp plan`` and ``snapdp run``: release plans from a TOML file (docs/plans.md).

Thin glue over :mod:`snapdp.data.planner.plan`: ``plan`` shows each query's ε and ± and spends
nothing; ``run`` releases the whole plan as one ledger entry and writes the results as files.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from snapdp.cli._common import json_option, library_errors
from snapdp.data import Plan
from snapdp.data.planner.preview import usefulness_flags

__all__ = ["plan", "run"]


@click.command()
@click.argument("plan_file", metavar="PLAN", type=click.Path(dir_okay=False))
@json_option
@library_errors
def plan(plan_file: str, as_json: bool) -> None:
    """Show every query's ε and ± (at its confidence) for the plan file PLAN, before anything
    is spent: queries with a target `accuracy` get the smallest ε that meets it, queries with a
    `weight` share what is left of `total_epsilon`. Reads no data; spends nothing. See
    docs/plans.md."""
    p = Plan.load(plan_file)
    preview = p.preview()
    flags = {a.planned.query.label: usefulness_flags(p.schema, a) for a in preview.allocations}
    if as_json:
        shown = preview.as_dict()
        for q in shown["queries"]:
            q["flags"] = flags[q["query"]]
        click.echo(json.dumps({"plan": plan_file, **shown}))
        return
    click.echo(f"Plan {plan_file} (nothing spent)\n")
    click.echo(preview.describe())
    for label, found in flags.items():
        for text in found:
            click.echo(f"warning: {label}: {text}")


@click.command()
@click.argument("plan_file", metavar="PLAN", type=click.Path(dir_okay=False))
@click.option(
    "--ledger",
    type=click.Path(dir_okay=False),
    required=True,
    help="SQLite budget ledger file (created if absent). [required]",
)
@click.option(
    "--total-epsilon",
    metavar="EPS",
    help="The dataset's total budget, the owner's act, when the ledger has none for it yet "
    "(the plan's total_epsilon never sets it; or use snapdp budget --total-epsilon).",
)
@click.option(
    "--output",
    type=click.Path(file_okay=False),
    help="Folder for results.csv, results.parquet, results.json and report.html "
    "(default: PLAN's name + '-results', beside it).",
)
@json_option
@library_errors
def run(
    plan_file: str,
    ledger: str,
    total_epsilon: str | None,
    output: str | None,
    as_json: bool,
) -> None:
    """Release every query of the plan file PLAN as ONE ledger entry and write the results (CSV,
    Parquet, columnar JSON) and an HTML report. The entry reserves the plan's cap before any
    noise is drawn and returns the unused part when the run ends. See docs/plans.md."""
    from snapdp.cli._data import _exact_text, _print_results

    p = Plan.load(plan_file)
    out = (
        Path(output)
        if output is not None
        else Path(plan_file).with_name(Path(plan_file).stem + "-results")
    )
    done = p.run(ledger=ledger, total_epsilon=total_epsilon, output=out)
    results = list(done.results)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "plan": plan_file,
                    "results": [r.as_dict() for r in results],
                    "epsilon_spent": _exact_text(done.spent),
                    "epsilon_reserved": _exact_text(done.preview.total),
                    "ledger": ledger,
                    "files": [str(f) for f in done.files],
                }
            )
        )
        return
    remaining = done.ledger.remaining()
    _print_results(str(p.source_path()), results, done.spent, ledger, remaining, p.schema)
    if done.spent != done.preview.total:
        click.echo(
            f"Reserved ε = {_exact_text(done.preview.total)} (the plan's cap); the unused "
            f"{_exact_text(done.preview.total - done.spent)} was returned to the budget."
        )
    click.echo("Wrote " + ", ".join(str(f) for f in done.files))
