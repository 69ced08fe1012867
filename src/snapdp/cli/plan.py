"""``snapdp plan`` and ``snapdp run``: release plans from a TOML file (docs/plans.md).

Thin glue over :mod:`snapdp.data.planner.plan`: ``plan`` shows each query's ε and ± and spends
nothing; ``run`` releases the whole plan as one ledger entry and writes the results as files.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from snapdp.cli._common import check_source, json_option, library_errors, mark_spent
from snapdp.data import Plan
from snapdp.data.planner.preview import usefulness_flags

__all__ = ["plan", "run"]


@click.command()
@click.argument("plan_file", metavar="PLAN", type=click.Path(dir_okay=False))
@click.option(
    "--export-python",
    type=click.Path(dir_okay=False),
    help="Also write the plan as a runnable Python script (docs/notebooks.md).",
)
@click.option(
    "--export-notebook",
    type=click.Path(dir_okay=False),
    help="Also write the plan as a Jupyter notebook (docs/notebooks.md).",
)
@json_option
@library_errors
def plan(
    plan_file: str, export_python: str | None, export_notebook: str | None, as_json: bool
) -> None:
    """Show every query's ε and ± (at its confidence) for the plan file PLAN, before anything
    is spent: queries with a target `accuracy` get the smallest ε that meets it, queries with a
    `weight` share what is left of `total_epsilon`. Reads no data; spends nothing. See
    docs/plans.md."""
    p = Plan.load(plan_file)
    preview = p.preview()
    _export(p, export_python, export_notebook)
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


def _export(p: Plan, python: str | None, notebook: str | None) -> None:
    """Write the plan as a script and/or a notebook (docs/notebooks.md, "Export a plan")."""
    from snapdp.data.frontends.python_export import export_notebook, export_python

    for path, export in ((python, export_python), (notebook, export_notebook)):
        if path is not None:
            Path(path).write_text(export(p.to_workload()), encoding="utf-8")
            click.echo(f"Wrote {path}", err=True)


@click.command()
@click.argument("plan_file", metavar="PLAN", type=click.Path(dir_okay=False))
@click.option(
    "--ledger",
    type=click.Path(dir_okay=False),
    required=True,
    help="SQLite budget ledger file (created if absent).",
)
@click.option(
    "--total-epsilon",
    metavar="EPS",
    help="The dataset's total budget, the owner's act, when the ledger has none for it yet "
    "(the plan's total_epsilon never sets it; or use snapdp budget --total-epsilon).",
)
@click.option(
    "--total-delta",
    metavar="DELTA",
    help="The dataset's total δ (groups chosen from the data), the owner's act, when the ledger "
    "has none for it yet (or use snapdp budget --total-delta; docs/plans.md).",
)
@click.option(
    "--dataset",
    metavar="NAME",
    help="The name of the dataset's budget in --ledger (default: the plan's [data] dataset, else "
    "the source file's resolved path).",
)
@click.option(
    "--output",
    type=click.Path(file_okay=False),
    help="Folder for results.csv, results.parquet, results.json and report.html "
    "(default: PLAN's name + '-results', beside it).",
)
@click.option(
    "--details",
    is_flag=True,
    help="Print each result's notes as the release states them (default: in plain words, each "
    "with its docs page). --json always holds the exact statements.",
)
@json_option
@library_errors
def run(
    plan_file: str,
    ledger: str,
    total_epsilon: str | None,
    total_delta: str | None,
    dataset: str | None,
    output: str | None,
    details: bool,
    as_json: bool,
) -> None:
    """Release every query of the plan file PLAN as ONE ledger entry and write the results (CSV,
    Parquet, columnar JSON) and an HTML report. The entry reserves the plan's cap before any
    noise is drawn and returns the unused part when the run ends. See docs/plans.md."""
    from snapdp.cli import preload_source
    from snapdp.cli._print import PRINT_MODULES, exact_text, print_results
    from snapdp.cli._progress import progress_bar
    from snapdp.data.frontends.toml import load_workload

    p = Plan.load(plan_file)
    check_source(p.source_path(), plan_file)
    # what reading the source takes, as for `snapdp sql`; results.parquet is written by pyarrow
    printing = () if as_json else PRINT_MODULES
    preload_source(p.source_path(), "pyarrow.parquet", *printing)
    name = dataset or load_workload(plan_file).dataset  # as `snapdp sql --dataset`
    out = (
        Path(output)
        if output is not None
        else Path(plan_file).with_name(Path(plan_file).stem + "-results")
    )
    spent_note = f"ledger {ledger or '(in memory)'}"

    def progress(done: int, total: int, label: str) -> None:
        if label not in ("planning", "preparing the mechanisms"):  # the cap is reserved from
            mark_spent(spent_note)  # "releasing" on: a Ctrl-C must not say "nothing spent"
        if bar is not None:
            bar(done, total, label)

    with progress_bar(f"snapdp run {Path(plan_file).name}") as bar:
        done = p.run(
            ledger=ledger,
            total_epsilon=total_epsilon,
            output=out,
            progress=progress,
            total_delta=total_delta,
            dataset=name,
        )
    mark_spent(spent_note)
    results = list(done.results)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "plan": plan_file,
                    "results": [r.as_dict() for r in results],
                    "epsilon_spent": exact_text(done.spent),
                    "epsilon_reserved": exact_text(done.preview.total),
                    "ledger": ledger,
                    "files": [str(f) for f in done.files],
                }
            )
        )
        return
    remaining = done.ledger.remaining()
    print_results(
        str(p.source_path()), results, done.spent, ledger, remaining, p.schema, plain=not details
    )
    if done.spent != done.preview.total:
        click.echo(
            f"Reserved ε = {exact_text(done.preview.total)} (the plan's cap); the unused "
            f"{exact_text(done.preview.total - done.spent)} was returned to the budget."
        )
    click.echo("Wrote " + ", ".join(str(f) for f in done.files))
