"""Glue for ``snapdp release`` over a table: parse the options, call the library, print."""

from __future__ import annotations

import json
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from snapdp.data import Count, Ledger, Mean, PrivateTable, Sum, parse_bound_spec, parse_keys_spec
from snapdp.data.spec import Statistic
from snapdp.errors import ParameterError


def run_table_release(
    *,
    data: str | None,
    epsilon: float,
    want_count: bool,
    sums: tuple[str, ...],
    means: tuple[str, ...],
    by: str | None,
    keys_spec: str | None,
    privacy_unit: str | None,
    max_rows_per_unit: int,
    max_rows: int | None,
    nulls: str,
    ledger: str | None,
    total_epsilon: float | None,
    alpha: float,
    as_json: bool,
    dry_run: bool = False,
    engine: str = "duckdb",
) -> None:
    """Run one table release (see ``snapdp release --help``) and print its results."""
    stats: list[Statistic] = [Count()] if want_count else []
    stats += [Sum(*parse_bound_spec(s, "--sum")) for s in sums]
    stats += [Mean(*parse_bound_spec(s, "--mean")) for s in means]
    if not stats:
        stats = [Count()]
    keys: list[str] | None = None
    if keys_spec is not None:
        key_col, keys = parse_keys_spec(keys_spec)
        if by is not None and by != key_col:
            raise ParameterError(f"`--keys` is for column {key_col!r} but `--by` is {by!r}")
        by = key_col
    source: object
    if data is None:
        from snapdp.data.demo import DEMO_KEYS, DEMO_ROWS, demo_table

        source, label = demo_table(), "demo table (synthetic, 100,000 people)"
        max_rows = DEMO_ROWS if max_rows is None else max_rows
        if by is not None and keys is None and by in DEMO_KEYS:
            keys = list(DEMO_KEYS[by])
    else:
        source, label = data, data
        if max_rows is None:
            raise ParameterError(
                "`--max-rows` (a public upper bound on the number of rows, e.g. from the "
                "survey design) is required with DATA: it sets the mechanisms' bounds"
            )
    if by is not None and keys is None:
        raise ParameterError(
            f"`--by {by}` needs its keys declared in advance: --keys {by}=a,b,c "
            "(undeclared keys are dropped; declared keys absent from the data get a noisy 0)"
        )
    book = Ledger(ledger, total_epsilon if ledger is not None else (total_epsilon or epsilon))
    spark_engine = None
    if engine == "spark":
        from snapdp.data.spark_engine import SparkEngine

        if data is None:
            import pandas as pd  # the demo table, handed to Spark

            assert hasattr(source, "to_pandas")
            source = pd.DataFrame(source.to_pandas())
        spark_engine = SparkEngine(source)
    table = PrivateTable(
        source,
        engine=spark_engine,
        max_rows=max_rows,
        ledger=book,
        privacy_unit=privacy_unit,
        max_rows_per_unit=max_rows_per_unit,
        nulls=nulls,  # type: ignore[arg-type]
    )
    err = Console(stderr=True)
    if dry_run:
        previews = table.accuracy(stats, epsilon, alpha=alpha, by=by, keys=keys)
        if as_json:
            click.echo(json.dumps([p.__dict__ for p in previews]))
        else:
            for p in previews:
                click.echo(f"{p.statistic:<20} {p.describe()}  (confidence {1 - alpha:g})")
        return
    with err.status(f"aggregating {label} …", spinner="dots"):
        results = table.release(stats, epsilon, alpha=alpha, by=by, keys=keys)
    if as_json:
        out: dict[str, Any] = {
            "data": label,
            "results": [r.as_dict() for r in results],
            "epsilon_spent": epsilon,
            "ledger": None if ledger is None else ledger,
            "budget_remaining": table.remaining,
        }
        click.echo(json.dumps(out))
        return
    shown = Table(title=f"Private release from {label}")
    shown.add_column("statistic")
    if by is not None:
        shown.add_column(by)
    shown.add_column("value", justify="right")
    shown.add_column(f"± accuracy ({1 - alpha:.0%})", justify="right")
    shown.add_column("ε", justify="right")
    for r in results:
        for i, (v, a) in enumerate(zip(r.values, r.accuracy, strict=True)):
            row = [r.statistic if i == 0 else ""]
            if by is not None:
                row.append("" if r.keys is None else r.keys[i])
            row += [f"{v:,.6g}", f"±{a:,.4g}", f"{r.epsilon:.4g}" if i == 0 else ""]
            shown.add_row(*row)
    console = Console()
    console.print(shown)
    console.print(
        f"Each value is within its ± accuracy of the true statistic with probability ≥ "
        f"{1 - alpha:g}. Neighbours: {results[0].relation}."
    )
    where = f"ledger {ledger}" if ledger else "no ledger (one-off budget)"
    console.print(f"Spent ε = {epsilon:g}; {where}; remaining ε = {table.remaining:.6g}.")
