"""``snapdp release``: one value, or statistics over a table (DESIGN §8), through snapping."""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

import click

from snapdp._validation import check_epsilon
from snapdp.cli._common import json_option, library_errors, sensitivity_option
from snapdp.cli._data import declaration_options
from snapdp.errors import ParameterError
from snapdp.mechanism import SnappingMechanism


@click.command()
@click.argument("data", required=False, type=click.Path(dir_okay=False))
@click.option("--value", type=float, help="Single-value mode: the true value f(D) to release.")
@click.option(
    "--epsilon", required=True, metavar="EPS", help="Privacy parameter ε > 0 (total). [required]"
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
@click.option("--by", multiple=True, metavar="COL[,COL…]", help="Group by these columns.")
@declaration_options
@click.option("--ledger", type=click.Path(dir_okay=False), help="SQLite budget ledger file.")
@click.option("--total-epsilon", metavar="EPS", help="Total budget when creating a new ledger.")
@click.option("--dataset", help="The name this data's budget is kept under (default: its path).")
@click.option(
    "--confidence",
    type=float,
    default=0.95,
    show_default=True,
    help="Every ± holds with this probability.",
)
@json_option
@click.option(
    "--dry-run", is_flag=True, help="Table mode: show the accuracy; read and spend nothing."
)
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
    epsilon: str,
    lower: float | None,
    upper: float | None,
    sensitivity: float,
    want_count: bool,
    sums: tuple[str, ...],
    means: tuple[str, ...],
    variances: tuple[str, ...],
    stds: tuple[str, ...],
    quantiles: tuple[str, ...],
    mean_method: str,
    by: tuple[str, ...],
    ledger: str | None,
    total_epsilon: str | None,
    dataset: str | None,
    confidence: float,
    as_json: bool,
    dry_run: bool,
    engine: str,
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
    table_flags = want_count or sums or means or variances or stds or quantiles or by
    if value is not None:
        if data is not None or table_flags:
            raise ParameterError(
                "`--value` releases one number: do not combine it with DATA or statistics"
            )
        if lower is None or upper is None:
            raise ParameterError("`--value` needs `--lower` and `--upper`")
        _single(value, epsilon, lower, upper, sensitivity, confidence, as_json)
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
        quantiles=quantiles,
        mean_method=mean_method,
        by=by,
        declaration=declaration,
        ledger=ledger,
        total_epsilon=total_epsilon,
        dataset=dataset,
        confidence=confidence,
        as_json=as_json,
        dry_run=dry_run,
        engine=engine,
    )


def _single(
    value: float,
    epsilon_text: str,
    lower: float,
    upper: float,
    sensitivity: float,
    confidence: float,
    as_json: bool,
) -> None:
    epsilon = check_epsilon("epsilon", epsilon_text)
    alpha = float(1 - Fraction(repr(float(confidence))))
    mechanism = SnappingMechanism(epsilon, sensitivity, lower, upper)
    accuracy = mechanism.accuracy(alpha)
    released = mechanism.release(value)
    privacy = mechanism.privacy
    if as_json:
        out: dict[str, Any] = {
            "release": released,
            "accuracy": accuracy,
            "confidence": confidence,
            "epsilon": privacy.epsilon,
            "delta": privacy.delta,
            "grid_spacing": mechanism.grid_spacing,
        }
        click.echo(json.dumps(out))
        return
    click.echo(f"release   {released!r}")
    click.echo(f"accuracy  ±{accuracy:.6g} with probability >= {confidence:g}")
    click.echo(f"guarantee {privacy}")
