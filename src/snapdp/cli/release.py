"""``snapdp release``: one value, or statistics over a table (DESIGN §8), through snapping."""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

import click

from snapdp import usefulness
from snapdp._rational import format_rational, storage_text
from snapdp.cli._common import (
    epsilon_type,
    json_option,
    library_errors,
    mark_spent,
    plain_number,
    sensitivity_option,
)
from snapdp.errors import ParameterError
from snapdp.mechanism import SnappingMechanism


@click.command()
@click.argument("data", required=False, type=click.Path(dir_okay=False))
@click.option("--value", type=float, help="Single-value mode: the true value f(D) to release.")
@click.option(
    "--epsilon",
    type=epsilon_type,
    required=True,
    help="Privacy parameter ε > 0 (total), taken exactly as typed (0.1 is 1/10).",
)
@click.option("--lower", type=float, help="Single-value mode: public lower bound.")
@click.option("--upper", type=float, help="Single-value mode: public upper bound.")
@sensitivity_option
@click.option("--count", "want_count", is_flag=True, help="Release the row count.")
@click.option("--sum", "sums", multiple=True, metavar="COL:LO:HI", help="Release a clamped sum.")
@click.option("--mean", "means", multiple=True, metavar="COL:LO:HI", help="Release a clamped mean.")
@click.option("--by", help="Group by this column (a histogram); needs --keys.")
@click.option("--keys", "keys_spec", metavar="COL=a,b,c", help="The declared group keys.")
@click.option("--privacy-unit", help="Column identifying a person (default: each row is one).")
@click.option("--max-rows-per-unit", type=int, default=1, show_default=True, help="k.")
@click.option("--max-rows", type=int, help="Public upper bound on the number of rows.")
@click.option(
    "--nulls",
    type=click.Choice(["error", "drop", "lower", "upper"]),
    default="error",
    show_default=True,
    help="Null policy for value columns: refuse, drop, or impute the lower/upper bound.",
)
@click.option("--ledger", type=click.Path(dir_okay=False), help="SQLite budget ledger file.")
@click.option(
    "--total-epsilon",
    type=epsilon_type,
    help="Total budget of the dataset when its ledger entry is new (exact, as --epsilon).",
)
@click.option(
    "--dataset",
    metavar="NAME",
    help="Single-value mode: the name of the budget in --ledger (default: value).",
)
@click.option(
    "--alpha",
    type=float,
    default=0.05,
    show_default=True,
    help="Accuracy is stated at confidence 1 − alpha.",
)
@json_option
@click.option("--dry-run", is_flag=True, help="Show the accuracy; draw no noise and spend nothing.")
@click.option(
    "--engine",
    type=click.Choice(["duckdb", "spark"]),
    default="duckdb",
    show_default=True,
    help="Where to aggregate: DuckDB in process, or Spark (the active or a default session).",
)
@library_errors
def release(
    data: str | None,
    value: float | None,
    epsilon: Fraction,
    lower: float | None,
    upper: float | None,
    sensitivity: float,
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
    total_epsilon: Fraction | None,
    dataset: str | None,
    alpha: float,
    as_json: bool,
    dry_run: bool,
    engine: str,
) -> None:
    """Release one value (--value) or statistics over DATA (a CSV or Parquet file).

    Single value: snapdp release --value 42 --epsilon 1 --lower 0 --upper 100

    Table: snapdp release [DATA] --epsilon 1 --count --sum income:0:500000
    --mean age:0:100 --by sex --keys sex=0,1 --max-rows 1000 [--ledger budget.sqlite]

    Without DATA, the statistics are released from a synthetic demo table (100,000 people:
    pid, age, sex, educ, race, income, region). The total ε is split equally among the
    statistics. Accuracy comes from public parameters only (docs/mechanism.md): each value is within
    ± its accuracy of the true (clamped, contribution-bounded) statistic with probability at
    least 1 − alpha. With --ledger the spend is committed before any result is shown.
    """
    if value is not None:
        if data is not None or want_count or sums or means or by or keys_spec:
            raise ParameterError(
                "`--value` releases one number: do not combine it with DATA or statistics"
            )
        if lower is None or upper is None:
            raise ParameterError("`--value` needs `--lower` and `--upper`")
        _single(
            value,
            epsilon,
            lower,
            upper,
            sensitivity,
            alpha,
            as_json,
            _SingleBudget(ledger, total_epsilon, dataset),
            dry_run,
        )
        return
    if dataset is not None:
        raise ParameterError(
            "`--dataset` names the budget of a --value release; a table's budget is named by "
            "its file (see docs/data.md)"
        )
    if lower is not None or upper is not None:
        raise ParameterError(
            "`--lower`/`--upper` belong to --value; for a table use --sum COL:LO:HI"
        )
    from snapdp.cli._data import run_table_release

    run_table_release(
        data=data,
        epsilon=float(epsilon),  # the table glue takes a float for now (docs/data.md)
        want_count=want_count,
        sums=sums,
        means=means,
        by=by,
        keys_spec=keys_spec,
        privacy_unit=privacy_unit,
        max_rows_per_unit=max_rows_per_unit,
        max_rows=max_rows,
        nulls=nulls,
        ledger=ledger,
        total_epsilon=None if total_epsilon is None else float(total_epsilon),
        alpha=alpha,
        as_json=as_json,
        dry_run=dry_run,
        engine=engine,
    )


class _SingleBudget:
    """Where a --value release spends: a ledger file and dataset name, or nowhere."""

    def __init__(
        self, ledger: str | None, total_epsilon: Fraction | None, dataset: str | None
    ) -> None:
        if ledger is None and (total_epsilon is not None or dataset is not None):
            raise ParameterError("`--total-epsilon` and `--dataset` need `--ledger`")
        self.ledger = ledger
        self.total_epsilon = total_epsilon
        self.dataset = dataset or "value"


def _single(
    value: float,
    epsilon: Fraction,
    lower: float,
    upper: float,
    sensitivity: float,
    alpha: float,
    as_json: bool,
    budget: _SingleBudget,
    dry_run: bool,
) -> None:
    """One value: accuracy first; with a ledger, check (before any noise), release, spend (before
    anything is shown); with --dry-run, the accuracy only."""
    mechanism = SnappingMechanism(epsilon, sensitivity, lower, upper)
    accuracy = mechanism.accuracy(alpha)
    book = None
    if budget.ledger is not None:
        from snapdp.data.ledger import Ledger

        book = Ledger(budget.ledger, budget.total_epsilon, dataset=budget.dataset)
        if not dry_run:
            book.check(epsilon)  # refuse before any noise is drawn
    privacy = mechanism.privacy
    summary = usefulness.summary(mechanism)
    warnings = usefulness.flags(mechanism, alpha)
    out: dict[str, Any] = {
        "summary": summary,
        "flags": [f.as_dict() for f in warnings],
        "accuracy": accuracy,
        "confidence": 1 - alpha,
        "epsilon": float(epsilon),
        "epsilon_exact": storage_text(epsilon),
        "delta": privacy.delta,
        "grid_spacing": mechanism.grid_spacing,
    }
    if dry_run:
        if book is not None:
            remaining = book.remaining()
            out["budget_remaining"] = format_rational(remaining)
            out["would_be_refused"] = epsilon > remaining
        if as_json:
            click.echo(json.dumps({"dry_run": True, **out}))
            return
        click.echo(f"dry run: no noise drawn, nothing spent (ε = {format_rational(epsilon)})")
        _echo_plain(summary, warnings)
        click.echo(
            f"accuracy  ±{plain_number(accuracy, digits=6)} with probability >= {1 - alpha:g}"
        )
        if book is not None:
            refused = " (this release would be refused)" if out["would_be_refused"] else ""
            click.echo(f"remaining ε = {out['budget_remaining']} on {budget.dataset!r}{refused}")
        return
    released = mechanism.release(value)
    if book is not None:
        query = {"lower": lower, "upper": upper, "sensitivity": sensitivity}
        delta = privacy.delta
        book.spend(epsilon, delta, "value", "--value", query)
        mark_spent(
            f"ledger {budget.ledger}, dataset {budget.dataset!r}",
            json.dumps({"release": released}) if as_json else f"release   {released!r}",
        )
        out["ledger"] = budget.ledger
        out["dataset"] = budget.dataset
        out["budget_remaining"] = format_rational(book.remaining())
    if as_json:
        click.echo(json.dumps({"release": released, **out}))
        return
    _echo_plain(summary, warnings)
    click.echo(f"release   {plain_number(released)}")
    click.echo(f"accuracy  ±{plain_number(accuracy, digits=6)} with probability >= {1 - alpha:g}")
    click.echo(f"guarantee {privacy}")
    if book is not None:
        click.echo(
            f"spent ε = {format_rational(epsilon)} on {budget.dataset!r} in {budget.ledger}; "
            f"remaining ε = {out['budget_remaining']}"
        )


def _echo_plain(summary: str, warnings: list[usefulness.Flag]) -> None:
    """The plain-words summary and the usefulness warnings (public parameters only)."""
    click.echo(summary)
    for flag in warnings:
        click.echo(f"warning: {flag.message}")
