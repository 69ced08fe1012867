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
import threading
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, ParamSpec, TypeVar

import click

from snapdp._validation import check_epsilon
from snapdp.cli._common import mark_spent
from snapdp.data.budget.ledger import Ledger
from snapdp.data.engines import factory
from snapdp.data.frontends.flags import default_by, workload_from_flags
from snapdp.data.frontends.flags import schema_from_options as _schema_from_options
from snapdp.data.model.names import flags
from snapdp.data.model.schema import COLUMN_TYPES, DEFAULT_MAX_LINE_BYTES, Schema
from snapdp.data.output.results import QueryResult
from snapdp.data.planner.consistent_accuracy import NOTE as CONSISTENT_NOTE
from snapdp.data.planner.consistent_accuracy import consistent_statements
from snapdp.data.release.table import PrivateTable
from snapdp.data.statistics import AccuracyStatement
from snapdp.errors import ParameterError

__all__ = [
    "FLAGS",
    "declaration_options",
    "flag_errors",
    "plain_number",
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
) -> None:
    """Run one table release (see ``snapdp release --help``) and print its results."""
    eps = check_epsilon("epsilon", epsilon)
    by_columns = [c.strip() for spec in by for c in spec.split(",") if c.strip()]
    source: object = data
    label = str(data)
    if data is None:
        from snapdp.data.demo import DEMO_DATASET

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
    )
    schema = workload.schema
    queries = [pq.query for pq in workload.queries]
    # Everything decidable from the parameters is refused here, before the data is opened
    # (the same refusals as --dry-run and `snapdp plan`; docs/plans.md).
    blind = PrivateTable(schema=schema, engine=_NoEngine(label), ledger=Ledger(None, eps))
    statements = blind.accuracy(queries, eps, confidence=confidence)
    if workload.declaration.consistent:  # the ± a consistent release states (docs/data.md)
        statements = consistent_statements(
            schema, queries, [pq.epsilon or Fraction(0) for pq in workload.queries],
            confidence, workload.declaration.consistent,
        )  # fmt: skip
    if dry_run:
        _print_accuracy(statements, as_json)
        return
    total = None if total_epsilon is None else check_epsilon("total_epsilon", total_epsilon)
    table = PrivateTable(
        schema=schema,
        engine=factory.make_engine(engine, source, schema, memory_limit=memory_limit, glob=glob),
        ledger=Ledger(None, eps),
        dataset=dataset,
    )
    prepared = table.prepare(  # before any ledger file is created
        queries, eps, confidence=confidence, consistent=workload.declaration.consistent
    )
    name = table.dataset
    book = Ledger(ledger, total if ledger is not None else (total or eps), dataset=name)
    table.ledger = book
    before = len(book.entries())
    try:
        results = _with_progress(
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
                    "epsilon_spent": _exact_text(eps),
                    "ledger": ledger,
                    "budget_remaining": _exact_text(remaining),
                }
            )
        )
        return
    _print_results(label, results, eps, ledger, remaining, schema)


def progress_columns() -> tuple[Any, ...]:
    """The progress bar's columns: the bar, the percentage and the time left. Never a count of
    bytes or rows: with fixed-width rows a file's size is its row count (docs/data.md)."""
    from rich.progress import BarColumn, TaskProgressColumn, TextColumn, TimeRemainingColumn

    return (
        TextColumn("reading"),
        BarColumn(),
        TaskProgressColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )


def _with_progress(engine: Any, run: Callable[[], R], quiet: bool) -> R:
    """Run the release with a progress bar on stderr (:func:`progress_columns`: percentage and
    time left, out of 100) when the engine reports ``progress() -> percent | None``; else
    without one."""
    report = getattr(engine, "progress", None)
    if quiet or not callable(report):
        return run()
    from rich.console import Console
    from rich.progress import Progress

    stop = threading.Event()
    with Progress(*progress_columns(), console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("reading", total=None)

        def update() -> None:
            percent = report()
            if percent is not None:
                bar.update(task, completed=min(max(int(percent), 0), 100), total=100)

        def poll() -> None:
            while not stop.wait(0.1):
                update()

        update()
        thread = threading.Thread(target=poll, daemon=True)
        thread.start()
        try:
            return run()
        finally:
            stop.set()
            thread.join()
            update()


def _demo(
    declaration: dict[str, Any], by: list[str]
) -> tuple[object, str, dict[str, Any], list[str]]:
    """The demo table, with its public facts declared (row count, keys of its columns)."""
    from snapdp.data.demo import DEMO_KEYS, DEMO_ROWS, demo_table

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


# -- printing ---------------------------------------------------------------------------------
def plain_number(x: float, significant: int = 6) -> str:
    """``x`` in plain digits with thousands separators, never in scientific notation."""
    if not math.isfinite(x):
        return str(x)
    if x == 0:
        return "0"
    if float(x).is_integer() and abs(x) >= 10 ** (significant - 1):
        return f"{int(x):,}"
    places = max(0, significant - 1 - math.floor(math.log10(abs(x))))
    text = f"{x:,.{places}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _exact_text(x: Fraction) -> str:
    from snapdp.data.output.results import _fraction_text

    return _fraction_text(x)


def _key_text(k: object) -> str:
    if isinstance(k, Fraction):
        return plain_number(float(k))
    return str(k)


def usefulness(result: QueryResult, schema: Schema) -> tuple[list[dict[str, Any]], str | None]:
    """Flags and a plain summary for a result, from its public parameters only
    (:mod:`snapdp.usefulness`, docs/utility.md): the grid and δ flags of each part's mechanism;
    for a substitute mean (whose ± is fixed by public parameters), "almost pure noise" when the
    ± is at least half the declared value range and, at 95% confidence, the one-sentence
    summary. (A mechanism's own bounds come from the row bound, too generous to judge by.)"""
    from snapdp.mechanism import SnappingMechanism
    from snapdp.usefulness import flags as mechanism_flags
    from snapdp.usefulness import plain_summary

    alpha = float(1 - Fraction(repr(result.confidence)))
    found: dict[str, dict[str, Any]] = {}
    for part in result.mechanisms.values():
        if "lower" not in part:  # the exact exponential mechanism (quantiles): no snapping grid
            continue
        mech = SnappingMechanism(
            Fraction(part["epsilon"]),
            Fraction(part["sensitivity"]),
            Fraction(part["lower"]),
            Fraction(part["upper"]),
        )
        for flag in mechanism_flags(mech, alpha):
            if flag.code != "almost_pure_noise":
                found.setdefault(flag.code, flag.as_dict())
    query = result.query
    summary = None
    # Only a ± fixed by public parameters is judged (a ratio mean's or a quantile's depends on
    # the noisy count: judging it would make the messages vary with the noise).
    if query.statistic == "mean" and query.method == "substitute" and result.rows:
        assert query.column is not None
        column = schema.column(query.column)
        if column.lower is not None and column.upper is not None:
            lo, hi = float(column.lower), float(column.upper)
            worst = result.rows[0].accuracy
            if 2 * worst >= hi - lo:
                found.setdefault(
                    "almost_pure_noise",
                    {
                        "code": "almost_pure_noise",
                        "message": "the ± is at least half the declared range: these values "
                        "are almost pure noise; a larger ε or narrower bounds would help",
                        "threshold": 1.0,
                        "value": 2 * worst / (hi - lo),
                    },
                )
            if result.confidence == 0.95:
                summary = plain_summary(_exact_text(result.epsilon), lo, hi, worst)
    return list(found.values()), summary


def _print_accuracy(statements: list[AccuracyStatement], as_json: bool) -> None:
    if as_json:
        doc = [
            {
                "query": s.label,
                "epsilon": _exact_text(s.epsilon),
                "confidence": s.confidence,
                "accuracy": s.accuracy,
                "accuracy_per_count": s.per_count,
                "accuracy_cap": s.cap,
                "rank_accuracy": s.rank,
                "notes": list(s.notes),
            }
            for s in statements
        ]
        click.echo(json.dumps({"dry_run": True, "queries": doc}))
        return
    click.echo("Dry run: nothing is read, drawn or spent.")
    for s in statements:
        click.echo(
            f"{s.label:<28} ε = {_exact_text(s.epsilon):<10} {s.describe()} "
            f"(confidence {s.confidence:g})"
        )
    consistent = {n for s in statements for n in s.notes if n == CONSISTENT_NOTE}
    for note in consistent:
        click.echo(f"assumes: {note}")


def _print_results(
    label: str,
    results: list[QueryResult],
    eps: Fraction,
    ledger: str | None,
    remaining: Fraction,
    schema: Schema,
) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"Private release from {label}")
    for r in results:
        shown = Table(title=f"{r.label}, ε = {_exact_text(r.epsilon)}")
        for k in r.key_columns:
            shown.add_column(k)
        quantiles = r.query.statistic == "quantiles"
        if quantiles:
            shown.add_column("p", justify="right")
        shown.add_column("value", justify="right")
        shown.add_column(f"± ({r.confidence:.0%})", justify="right")
        for row in r.rows:
            shown.add_row(
                *[_key_text(k) for k in row.keys],
                *([plain_number(float(row.quantile or 0))] if quantiles else []),
                plain_number(row.value),
                "±" + plain_number(row.accuracy, 4),
            )
        console.print(shown)
        if r.target_note is not None:
            console.print(f"  {'✓' if r.target_met else '✗'} {r.target_note}")
        for note in r.notes:
            console.print(f"  · {note}")
        flags, summary = usefulness(r, schema)
        for flag in flags:
            console.print(f"  ⚑ {flag['message']}")
        if summary:
            console.print(f"  {summary}")
    console.print(
        f"Each value is within its ± of the true statistic (of the declared, bounded table) with "
        f"probability ≥ {results[0].confidence:g}."
    )
    where = f"ledger {ledger}" if ledger else "no ledger (one-off budget)"
    console.print(f"Spent ε = {_exact_text(eps)}; {where}; remaining ε = {_exact_text(remaining)}.")
