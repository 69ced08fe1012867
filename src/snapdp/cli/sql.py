"""``snapdp sql``: a SELECT over a declared table, released through snapping (docs/sql.md).

Thin glue: the declaration file and the query text go through the SQL front end
(:mod:`snapdp.data.frontends.sql`) into a workload; the release runs it as ``snapdp release``
does (one ledger entry, all or nothing) and prints the same output (``--json``:
``{"results": [...]}`` exactly as ``release --json``). A query outside the grammar is refused with
its line, column and a caret, before any data is read and with nothing spent.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction

import click

from snapdp.cli._common import (
    check_source,
    epsilon_type,
    json_option,
    library_errors,
    mark_spent,
)
from snapdp.errors import ParameterError

__all__ = ["sql"]


@click.command()
@click.argument("query", metavar="QUERY")
@click.option(
    "--declaration",
    type=click.Path(dir_okay=False),
    required=True,
    help="TOML file with [data] (source, privacy unit, bounds) and [columns].",
)
@click.option(
    "--epsilon",
    type=epsilon_type,
    help="ε of the whole query, split equally between its aggregates (or OPTIONS(epsilon=…)).",
)
@click.option(
    "--delta",
    type=epsilon_type,
    help="δ of the query: lets GROUP BY take columns without declared keys (docs/sql.md).",
)
@click.option("--ledger", type=click.Path(dir_okay=False), help="SQLite budget ledger file.")
@click.option(
    "--total-epsilon",
    type=epsilon_type,
    help="Total budget of the dataset when its ledger entry is new.",
)
@click.option(
    "--total-delta",
    type=epsilon_type,
    help="Total δ of the dataset when its ledger entry is new (the owner's; docs/plans.md).",
)
@click.option("--dataset", metavar="NAME", help="The name of the dataset's budget in --ledger.")
@click.option("--confidence", type=float, default=None, help="Every ± holds with this probability.")
@click.option("--dry-run", is_flag=True, help="Show the accuracy; draw no noise, spend nothing.")
@click.option(
    "--details",
    is_flag=True,
    help="Print each result's notes as the release states them (default: in plain words, each "
    "with its docs page). --json always holds the exact statements.",
)
@json_option
@library_errors
def sql(
    query: str,
    declaration: str,
    epsilon: Fraction | None,
    delta: Fraction | None,
    ledger: str | None,
    total_epsilon: Fraction | None,
    total_delta: Fraction | None,
    dataset: str | None,
    confidence: float | None,
    dry_run: bool,
    details: bool,
    as_json: bool,
) -> None:
    """Release the aggregates of the SELECT QUERY over the table declared in --declaration.
    Accepted: COUNT, SUM, AVG, VAR_POP/VAR_SAMP, STDDEV_POP/STDDEV_SAMP, PERCENTILE_CONT, MEDIAN;
    WHERE over declared columns; GROUP BY declared keys or bins (or, with --delta, columns whose
    groups are chosen privately from the data); HAVING and ORDER BY over the
    released values. See docs/sql.md."""
    from msgspec.structs import replace

    from snapdp.cli import preload, preload_source

    preload("sqlglot", "snapdp.data.frontends.sql")  # the query is parsed with sqlglot
    from snapdp.cli._data import _NoEngine
    from snapdp.cli._print import (
        PRINT_MODULES,
        exact_text,
        print_accuracy,
        print_results,
        usefulness,
    )
    from snapdp.data.budget.ledger import Ledger
    from snapdp.data.engines import factory
    from snapdp.data.frontends.sql import SqlError, apply_post_processing, parse_sql
    from snapdp.data.frontends.toml import load_declaration
    from snapdp.data.release.table import PrivateTable

    if epsilon is None and "OPTIONS" not in query.upper():
        raise ParameterError(
            "`snapdp sql` needs an ε: give --epsilon, or OPTIONS(epsilon = …) in the query "
            "(docs/sql.md)",
            parameter="epsilon",
        )
    decl = load_declaration(declaration)
    if confidence is not None:
        decl = replace(decl, confidence=confidence)
    try:
        parsed = parse_sql(query, decl, epsilon=epsilon, delta=delta)
    except SqlError as exc:
        if as_json:
            click.echo(json.dumps({"error": str(exc)}))
        else:
            click.echo(f"Error: {exc}", err=True)
        raise SystemExit(2) from None
    workload = parsed.workload
    schema = workload.schema
    queries, epsilons = parsed.queries, parsed.epsilons
    total = sum(epsilons, Fraction(0))
    conf = workload.confidence
    source = workload.declaration.source_path()
    if source is None:
        raise ParameterError("the declaration names no `source` in [data]", parameter="source")
    # Everything decidable from the query, the declaration and ε is refused here, before the
    # source is opened (the same refusals as --dry-run and `snapdp plan`; docs/plans.md).
    blind = PrivateTable(schema=schema, engine=_NoEngine(str(source)), ledger=Ledger(None, total))
    qdelta = workload.delta
    statements = blind.accuracy(queries, epsilons, confidence=conf, delta=qdelta)
    if dry_run:
        print_accuracy(statements, as_json)
        return
    check_source(source, declaration)
    preload_source(source, *(() if as_json else PRINT_MODULES))  # what it imports
    table = PrivateTable(
        schema=schema,
        engine=factory.make_engine("duckdb", source, schema),
        ledger=Ledger(None, total),
        dataset=dataset or workload.dataset,
    )
    # before any ledger file:
    prepared = table.prepare(queries, epsilons, confidence=conf, delta=qdelta)
    name = table.dataset
    # A ledger file spends only from a budget its owner set: its entry, or --total-epsilon;
    # a declaration's total_epsilon never creates one (docs/sql.md, docs/plans.md).
    given = None if total_epsilon is None else Fraction(total_epsilon)
    book = Ledger(
        ledger,
        given if ledger is not None else (given or total),
        dataset=name,
        total_delta=total_delta,
    )
    table.ledger = book
    before = len(book.entries())
    try:
        released = table.release(prepared)
    except KeyboardInterrupt:
        if len(book.entries()) > before:
            mark_spent(f"ledger {ledger or '(in memory)'}, dataset {name!r}")
        raise
    results = apply_post_processing(parsed, released)
    remaining = table.remaining
    if as_json:
        click.echo(
            json.dumps(
                {
                    "data": str(source),
                    "results": [
                        {**r.as_dict(), "flags": usefulness(r, schema)[0]} for r in results
                    ],
                    "epsilon_spent": exact_text(total),
                    "ledger": ledger,
                    "budget_remaining": exact_text(remaining),
                }
            )
        )
        return
    print_results(str(source), results, total, ledger, remaining, schema, plain=not details)
    if prepared.selections:  # docs/sql.md, "Groups from the data"
        shown_delta = math.fsum(r.delta for r in results)
        click.echo(f"(ε, δ)-DP: δ = {shown_delta:.3g} in all (groups chosen from the data, "
                   "plus the snapping mechanism's own)")  # fmt: skip
