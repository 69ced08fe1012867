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
from snapdp.cli._data import declaration_options
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
@click.option(
    "--delta",
    type=epsilon_type,
    help="δ: lets --by name columns without declared keys, their groups chosen privately "
    "(docs/sql.md, 'Groups from the data').",
)
@click.option("--lower", type=float, help="Single-value mode: public lower bound.")
@click.option("--upper", type=float, help="Single-value mode: public upper bound.")
@sensitivity_option
@click.option("--count", "want_count", is_flag=True, help="Release the row count.")
@click.option("--sum", "sums", multiple=True, metavar="COL[:LO:HI]", help="A clamped sum.")
@click.option("--mean", "means", multiple=True, metavar="COL[:LO:HI]", help="A clamped mean.")
@click.option("--var", "variances", multiple=True, metavar="COL[:LO:HI]", help="A variance.")
@click.option("--std", "stds", multiple=True, metavar="COL[:LO:HI]", help="A standard deviation.")
@click.option(
    "--var-samp", "var_samps", multiple=True, metavar="COL[:LO:HI]",
    help="A sample variance (divided by n − 1; SQL's VAR_SAMP).",
)  # fmt: skip
@click.option(
    "--std-samp", "std_samps", multiple=True, metavar="COL[:LO:HI]",
    help="A sample standard deviation (SQL's STDDEV_SAMP).",
)  # fmt: skip
@click.option(
    "--quantiles",
    "quantiles",
    multiple=True,
    metavar="COL[:LO:HI]:P1,P2,…",
    help="Quantiles, e.g. income:0:500000:0.25,0.5,0.75.",
)
@click.option(
    "--mean-method",
    type=click.Choice(["ratio", "substitute"]),
    default="ratio",
    show_default=True,
    help="Means: noisy sum / noisy count, or sum/n with n declared public (--rows).",
)
@click.option(
    "--quantile-method",
    type=click.Choice(["tree", "exponential"]),
    default="tree",
    show_default=True,
    help="Quantiles: a tree histogram, or the exact exponential mechanism (better for 1-3).",
)
@click.option("--by", multiple=True, metavar="COL[,COL…]", help="Group by these columns.")
@click.option(
    "--where",
    metavar="CONDITION",
    help='Keep only the rows this SQL condition holds for, e.g. "age >= 18 AND sex = 1" '
    "(declared columns; docs/sql.md).",
)
@declaration_options
@click.option("--ledger", type=click.Path(dir_okay=False), help="SQLite budget ledger file.")
@click.option(
    "--total-epsilon",
    type=epsilon_type,
    help="Total budget of the dataset when its ledger entry is new (exact, as --epsilon).",
)
@click.option(
    "--dataset",
    metavar="NAME",
    help="The name of the dataset's budget in --ledger, given by its owner (default: the "
    "source's resolved path; 'value' with --value). See docs/data.md.",
)
@click.option(
    "--alpha",
    type=float,
    default=None,
    help="Accuracy is stated at confidence 1 − alpha (default 0.05; or use --confidence).",
)
@click.option(
    "--confidence",
    type=float,
    default=None,
    help="Every ± holds with this probability (default 0.95).",
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
@click.option(
    "--memory-limit",
    metavar="SIZE",
    help="DuckDB's memory limit, e.g. 2GB; it spills to a temporary folder beyond it.",
)
@click.option("--glob", is_flag=True, help="Read DATA as a file pattern (default: a literal path).")
@click.option(
    "--consistent",
    type=click.Choice(["wls", "nonnegative", "integer"]),
    is_flag=False,
    flag_value="wls",
    default=None,
    help="With --count: also release its margins along --by (the total, by the first column, "
    "…) and fit them jointly so they add up (free post-processing); optionally rounded to "
    "non-negative values or integers. See docs/data.md, 'Tables that add up'.",
)
@click.option(
    "--grid-counts",
    is_flag=True,
    help="Release counts on the mechanism's grid (e.g. 2000.125) rather than as the nearest "
    "integer. See docs/utility.md, 'Integer counts'.",
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
    variances: tuple[str, ...],
    stds: tuple[str, ...],
    var_samps: tuple[str, ...],
    std_samps: tuple[str, ...],
    quantiles: tuple[str, ...],
    mean_method: str,
    quantile_method: str,
    by: tuple[str, ...],
    where: str | None,
    ledger: str | None,
    total_epsilon: Fraction | None,
    dataset: str | None,
    alpha: float | None,
    confidence: float | None,
    as_json: bool,
    dry_run: bool,
    engine: str,
    memory_limit: str | None,
    glob: bool,
    consistent: str | None,
    grid_counts: bool,
    delta: Fraction | None,
    **declaration: Any,
) -> None:
    """Release one value (--value) or statistics over DATA (a CSV or Parquet file).

    Single value: snapdp release --value 42 --epsilon 1 --lower 0 --upper 100

    Table: snapdp release [DATA] --epsilon 1 --count --mean age:0:100 --var income:0:500000
    --by sex --keys sex=0,1 [--ledger budget.sqlite]

    Without DATA, the statistics are released from a synthetic demo table (100,000 people:
    pid, age, sex, educ, race, income, region). The total ε is split equally among the
    statistics. Columns, keys and bounds are declared (--column, --keys, --bins, …) or taken
    from the query; never from the data. Accuracy comes from public parameters only: each value
    is within ± its accuracy of the true (clamped, contribution-bounded) statistic with the
    stated probability. With --ledger the spend is committed before any result is shown. See
    docs/data.md.
    """
    if alpha is not None and confidence is not None:
        raise ParameterError("give `--alpha` or `--confidence`, not both")
    table_confidence = 0.95 if confidence is None else confidence
    if alpha is not None and value is None:
        if not 0 < alpha < 1:
            raise ParameterError(f"`--alpha` must be in (0, 1), not {alpha!r}")
        table_confidence = float(1 - Fraction(repr(float(alpha))))
    if alpha is None:
        alpha = 0.05 if confidence is None else float(1 - Fraction(repr(float(confidence))))
    statistics = (want_count, sums, means, variances, stds, var_samps, std_samps, quantiles)
    table_flags = any(statistics) or bool(by) or bool(where)
    if value is not None:
        if data is not None or table_flags:
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
    if lower is not None or upper is not None:
        raise ParameterError(
            "`--lower`/`--upper` belong to --value; for a table use --sum COL:LO:HI"
        )
    from snapdp.cli._data import run_table_release

    run_table_release(
        data=data,
        epsilon=epsilon,
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
        by=by,
        declaration=declaration,
        ledger=ledger,
        total_epsilon=total_epsilon,
        dataset=dataset,
        confidence=table_confidence,
        as_json=as_json,
        dry_run=dry_run,
        engine=engine,
        memory_limit=memory_limit,
        glob=glob,
        where=where,
        consistent=consistent,
        grid_counts=grid_counts,
        delta=delta,
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
        from snapdp.data.budget.ledger import Ledger

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
        # the public rescaling that removes the power-of-two penalty (docs/mechanism.md)
        "rescale_ratio": storage_text(mechanism.rescaling.ratio),
        "mechanism_epsilon": storage_text(mechanism.rescaling.mechanism_epsilon),
        "mechanism_sensitivity": storage_text(mechanism.rescaling.mechanism_sensitivity),
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
