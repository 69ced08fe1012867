"""Glue for ``snapdp release`` over a table: the declaration flags → a :class:`Schema`, the
statistic flags → queries, the library call, the printing (docs/data.md, "The command line").

:func:`declaration_options` adds the declaration flags to a command and
:func:`schema_from_options` turns them into a Schema; ``snapdp check`` shares both.
Types of undeclared columns come from the query, never from the data: ``--keys`` literals that
are all integers make an integer column, else text; a value column named by ``--sum COL:LO:HI``
(and the like) or binned by ``--bins`` is decimal; a privacy unit is text.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, ParamSpec, TypeVar

import click
from msgspec.structs import replace

from snapdp._validation import check_epsilon
from snapdp.cli._common import mark_spent
from snapdp.cli._print import (
    exact_text,
    print_accuracy,
    print_results,
    usefulness,
    with_progress,
)
from snapdp.data.budget.ledger import Ledger
from snapdp.data.engines import factory
from snapdp.data.frontends.flags import default_by, workload_from_flags
from snapdp.data.frontends.flags import schema_from_options as _schema_from_options
from snapdp.data.model.names import flags
from snapdp.data.model.schema import COLUMN_TYPES, DEFAULT_MAX_LINE_BYTES
from snapdp.data.model.workload import Workload
from snapdp.data.planner.consistent_accuracy import NOTE as CONSISTENT_NOTE
from snapdp.data.release.table import PrivateTable
from snapdp.data.statistics import AccuracyStatement
from snapdp.errors import ParameterError

__all__ = [
    "FLAGS",
    "declaration_options",
    "flag_errors",
    "run_table_release",
    "schema_from_options",
]

P = ParamSpec("P")
R = TypeVar("R")

#: Library parameter → the flag that sets it (errors name the flag): from the one table of
#: user-facing names, :mod:`snapdp.data.model.names`.
FLAGS: dict[str, str] = flags()


def flag_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Re-raise the library's ParameterErrors with the flag named instead of the parameter."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except ParameterError as exc:
            flag = FLAGS.get(exc.parameter or "")
            if flag is None:
                raise
            message = str(exc)
            for parameter, name in FLAGS.items():
                message = message.replace(f"`{parameter}`", f"`{name}`")
            if flag.split("/")[0] not in message:
                message = f"{flag}: {message}"
            raise ParameterError(message, parameter=exc.parameter) from None

    return wrapper


#: The Schema the declaration flags declare, errors naming the flag (``snapdp check`` too).
schema_from_options = flag_errors(_schema_from_options)


def declaration_options(func: Callable[P, R]) -> Callable[P, R]:
    """The declaration flags (shared by ``release`` and ``check``)."""
    options = [
        click.option("--column", "columns", multiple=True, metavar="NAME:TYPE[:LO:HI]",
                     help=f"Declare a column: type ({', '.join(COLUMN_TYPES)}) and bounds."),
        click.option("--keys", "keys", multiple=True, metavar="COL=a,b,c",
                     help="Declare a grouping column's keys (typed by the column's type)."),
        click.option("--key", "key", multiple=True, metavar="COL=VALUE",
                     help="Declare one key (repeat; for keys that contain commas)."),
        click.option("--bins", "bins", multiple=True, metavar="COL=e0,e1,...",
                     help="Numeric bins [e0, e1), [e1, e2), … of a grouping column."),
        click.option("--privacy-unit", help="Column naming a person (default: each row is one)."),
        click.option("--max-rows-per-unit", type=int, help="k: rows one unit keeps in all."),
        click.option("--max-groups-per-unit", type=int, help="L0: groups one unit keeps."),
        click.option("--max-rows-per-group", type=int, help="L∞: rows a unit keeps per group."),
        click.option("--null-units", type=click.Choice(["drop", "own"]), default="drop",
                     show_default=True, help="Rows whose unit is null: dropped, or each its own."),
        click.option("--nulls", "nulls", multiple=True, metavar="COL=drop|VALUE",
                     help="What a null (or unreadable) cell becomes: dropped (default) or VALUE."),
        click.option("--rows", type=int, help="The exact row count, declared public."),
        click.option("--max-rows", type=int,
                     help="A public upper bound on the rows (optional: ± then holds up to it)."),
        click.option("--encoding", default="utf-8", show_default=True, help="CSV encoding."),
        click.option("--delimiter", default=",", show_default=True, help="CSV delimiter."),
        click.option("--header/--no-header", default=True, show_default=True,
                     help="Whether the CSV's first line names the columns."),
        click.option("--csv-columns", "column_names", metavar="A,B,C",
                     help="The columns of a CSV without a header, in order (required with "
                          "--no-header)."),
        click.option("--max-line-bytes", type=int, default=DEFAULT_MAX_LINE_BYTES,
                     show_default=True,
                     help="A longer CSV line is no record (skipped, never held in memory)."),
    ]  # fmt: skip
    for option in reversed(options):
        func = option(func)
    return func


# -- the release ------------------------------------------------------------------------------
@flag_errors
def run_table_release(
    *,
    data: str | None,
    epsilon: object,
    want_count: bool,
    sums: Sequence[str],
    means: Sequence[str],
    variances: Sequence[str],
    stds: Sequence[str],
    quantiles: Sequence[str],
    mean_method: str,
    by: Sequence[str],
    declaration: dict[str, Any],
    ledger: str | None,
    total_epsilon: object,
    dataset: str | None,
    confidence: float,
    as_json: bool,
    dry_run: bool,
    engine: str,
    memory_limit: str | None = None,
    glob: bool = False,
    where: str | None = None,
    consistent: str | None = None,
    quantile_method: str = "tree",
    var_samps: Sequence[str] = (),
    std_samps: Sequence[str] = (),
    grid_counts: bool = False,
    delta: Fraction | None = None,
) -> None:
    """Run one table release (see ``snapdp release --help``) and print its results."""
    eps = check_epsilon("epsilon", epsilon)
    by_columns = [c.strip() for spec in by for c in spec.split(",") if c.strip()]
    source: object = data
    label = str(data)
    if data is None:
        from snapdp.data.frontends.demo import DEMO_DATASET

        source, label, declaration, by_columns = _demo(declaration, by_columns)
        dataset = DEMO_DATASET if dataset is None else dataset
    if not by_columns:  # the one-liner `--keys sex=0,1` groups by sex
        by_columns = default_by(declaration)
    workload = workload_from_flags(
        source=source,
        epsilon=eps,
        declaration=declaration,
        want_count=want_count,
        sums=sums,
        means=means,
        variances=variances,
        stds=stds,
        var_samps=var_samps,
        std_samps=std_samps,
        quantiles=quantiles,
        mean_method=mean_method,
        quantile_method=quantile_method,
        by=by_columns,
        confidence=confidence,
        dataset=dataset,
        where=where,
        consistent=consistent,
        grid_counts=grid_counts,
        delta=delta,
    )
    schema = workload.schema
    queries = [pq.query for pq in workload.queries]
    # Everything decidable from the parameters is refused here, before the data is opened
    # (the same refusals as --dry-run and `snapdp plan`; docs/plans.md).
    blind = PrivateTable(schema=schema, engine=_NoEngine(label), ledger=Ledger(None, eps))
    statements = blind.accuracy(queries, eps, confidence=confidence, delta=delta)
    if dry_run:
        print_accuracy(_planned(workload, statements), as_json)
        return
    total = None if total_epsilon is None else check_epsilon("total_epsilon", total_epsilon)
    table = PrivateTable(
        schema=schema,
        engine=factory.make_engine(engine, source, schema, memory_limit=memory_limit, glob=glob),
        ledger=Ledger(None, eps),
        dataset=dataset,
    )
    prepared = table.prepare(  # before any ledger file is created
        queries,
        eps,
        confidence=confidence,
        consistent=workload.declaration.consistent,
        delta=delta,
    )
    name = table.dataset
    book = Ledger(ledger, total if ledger is not None else (total or eps), dataset=name)
    table.ledger = book
    before = len(book.entries())
    try:
        results = with_progress(
            table.engine,
            lambda: table.release(prepared),
            as_json,
        )
    except KeyboardInterrupt:
        if len(book.entries()) > before:  # the boundary then says the spend was committed
            mark_spent(f"ledger {ledger or '(in memory)'}, dataset {name!r}")
        raise
    remaining = table.remaining
    if as_json:
        click.echo(
            json.dumps(
                {
                    "data": label,
                    "results": [
                        {**r.as_dict(), "flags": usefulness(r, schema)[0]} for r in results
                    ],
                    "epsilon_spent": exact_text(eps),
                    "ledger": ledger,
                    "budget_remaining": exact_text(remaining),
                }
            )
        )
        return
    print_results(label, results, eps, ledger, remaining, schema)
    if prepared.selections:  # docs/sql.md, "Groups from the data"
        shown_delta = math.fsum(r.delta for r in results)
        click.echo(f"(ε, δ)-DP: δ = {shown_delta:.3g} in all (groups chosen from the data, "
                   "plus the snapping mechanism's own)")  # fmt: skip


def _planned(workload: Workload, statements: list[AccuracyStatement]) -> list[AccuracyStatement]:
    """``statements`` with the ± the planner states for a consistent release (the numbers of
    ``snapdp plan`` and the page; docs/data.md, "Tables that add up")."""
    if not workload.declaration.consistent:
        return statements
    from snapdp.data.planner.plan import Plan

    planned = Plan.from_workload(workload).preview()
    return [
        s
        if a.accuracy is None or a.accuracy == s.accuracy
        else replace(s, accuracy=a.accuracy, notes=(*s.notes, CONSISTENT_NOTE))
        for s, a in zip(statements, planned.allocations, strict=True)
    ]


def _demo(
    declaration: dict[str, Any], by: list[str]
) -> tuple[object, str, dict[str, Any], list[str]]:
    """The demo table, with its public facts declared (row count, keys of its columns)."""
    from snapdp.data.frontends.demo import DEMO_KEYS, DEMO_ROWS, demo_table

    declaration = dict(declaration)
    declared_keys = {s.partition("=")[0].strip() for s in declaration.get("keys", ())}
    extra = [
        f"{c}={','.join(DEMO_KEYS[c])}" for c in by if c in DEMO_KEYS and c not in declared_keys
    ]
    declaration["keys"] = (*declaration.get("keys", ()), *extra)
    if declaration.get("rows") is None:
        declaration["rows"] = DEMO_ROWS
    return demo_table(), "demo table (synthetic, 100,000 people)", declaration, by


class _NoEngine:
    """Stands for the data in a dry run, which never reads it."""

    def __init__(self, label: str) -> None:
        self._label = label

    def column_names(self) -> list[str]:
        return []

    def aggregate(self, plan: object) -> Any:
        raise AssertionError("a dry run never reads the data")

    def describe(self) -> str:
        return self._label
