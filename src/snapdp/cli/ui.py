"""``snapdp ui``: serve the local page that builds a plan and runs it (docs/ui.md).

Thin glue over :class:`snapdp.ui.server.UiServer`: the first line of stdout is the page's URL
(the token in its fragment); a browser opens it unless ``--no-browser``, through a private
redirect file so that the token is on no command line; Ctrl-C stops the server cleanly (after a
release in progress). ``--total-epsilon`` is the data owner's budget: the page only spends.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from snapdp._validation import check_epsilon
from snapdp.cli._common import library_errors
from snapdp.data.model.workload import check_delta
from snapdp.ui.server import UiConfig, UiServer

__all__ = ["ui"]


@click.command()
@click.argument("plan_file", metavar="[PLAN]", required=False, type=click.Path(dir_okay=False))
@click.option(
    "--source",
    type=click.Path(dir_okay=False),
    help="The data file (CSV or Parquet) a run releases from (default: the plan's source). "
    "The page cannot change it.",
)
@click.option(
    "--ledger",
    type=click.Path(dir_okay=False),
    help="SQLite budget ledger (created by the first run). Needed to run.",
)
@click.option(
    "--output",
    type=click.Path(file_okay=False),
    help="Folder for the runs' results, one sub-folder per run (default: PLAN's name + "
    "'-results' beside it, else ./snapdp-results).",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="Port on 127.0.0.1 (0: any free port).",
)
@click.option(
    "--total-epsilon",
    metavar="EPS",
    help="The dataset's lifetime ε budget in --ledger, set by the data owner (checked against "
    "the ledger's when it holds one). Without it, the page can run only on a dataset the ledger "
    "already budgets: the page spends from a budget, never sets one.",
)
@click.option(
    "--total-delta",
    metavar="DELTA",
    help="The dataset's lifetime δ budget in --ledger, set by the data owner: what groups "
    "taken from the data spend (docs/sql.md, 'Groups from the data'). Without it, such plans "
    "run only on a dataset whose ledger already has a δ budget.",
)
@click.option(
    "--header/--no-header",
    default=None,
    help="Whether the CSV's first line names the columns (default: the plan's, else yes). How "
    "the source is read is yours: the page shows it, never sets it.",
)
@click.option("--delimiter", help="The CSV delimiter (default: the plan's, else ',').")
@click.option(
    "--encoding", help="The CSV encoding, utf-8 or latin-1 (default: the plan's, else utf-8)."
)
@click.option(
    "--csv-columns",
    "column_names",
    metavar="A,B,C",
    help="The columns of a CSV without a header, in order (with --no-header).",
)
@click.option(
    "--demo",
    is_flag=True,
    help="Open snapdp's synthetic demo table (100,000 made-up people) instead of a source, with "
    "a private ledger and a budget of 1 unless --ledger / --total-epsilon are given.",
)
@click.option(
    "--no-browser",
    is_flag=True,
    help="Print the URL only; do not open a browser. (A browser is opened on a private file that "
    "redirects to the URL, so the token is never on a command line.)",
)
@library_errors
def ui(
    plan_file: str | None,
    source: str | None,
    ledger: str | None,
    output: str | None,
    port: int,
    total_epsilon: str | None,
    total_delta: str | None,
    header: bool | None,
    delimiter: str | None,
    encoding: str | None,
    column_names: str | None,
    demo: bool,
    no_browser: bool,
) -> None:
    """Serve a local web page (127.0.0.1 only) to build a plan, see each query's ε and ± as you
    type, and run it against --ledger. Prints the page's URL (with its access token) first. See
    docs/ui.md."""
    if output is not None:
        out = Path(output)
    elif plan_file is not None:
        out = Path(plan_file).with_name(Path(plan_file).stem + "-results")
    else:
        out = Path("snapdp-results")
    config = UiConfig(
        plan=None if plan_file is None else Path(plan_file),
        source=source,
        ledger=None if ledger is None else Path(ledger),
        output=out,
        port=port,
        total_epsilon=None
        if total_epsilon is None
        else check_epsilon("total_epsilon", total_epsilon),
        total_delta=None if total_delta is None else check_delta("total_delta", total_delta),
        csv=_csv_flags(header, delimiter, encoding, column_names),
        demo=demo,
    )
    server = UiServer(config)
    click.echo(server.url)
    sys.stdout.flush()
    found = server.source()
    if found is None:
        click.echo("snapdp ui: no data source (--source, the plan's, or --demo): the page plans "
                   "but cannot run.", err=True)  # fmt: skip
    elif not Path(found).exists():
        click.echo(f"snapdp ui: the source {found} does not exist (yet): a run will fail until "
                   "it does.", err=True)  # fmt: skip
    click.echo("snapdp ui: serving on 127.0.0.1 only; Ctrl-C stops it.", err=True)
    if not no_browser:
        import webbrowser

        webbrowser.open(server.launch_file().as_uri())
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        click.echo("snapdp ui: stopped.", err=True)
    finally:
        server.close()


def _csv_flags(
    header: bool | None, delimiter: str | None, encoding: str | None, column_names: str | None
) -> dict[str, object]:
    """The CSV options given on the command line (the plan file's hold for the others)."""
    given: dict[str, object] = {"header": header, "delimiter": delimiter, "encoding": encoding}
    if column_names is not None:
        given["column_names"] = tuple(n.strip() for n in column_names.split(","))
    return {k: v for k, v in given.items() if v is not None}
