"""``snapdp release``: release one value through the snapping mechanism."""

from __future__ import annotations

import json

import click

from snapdp.cli._common import library_errors
from snapdp.mechanism import SnappingMechanism


@click.command()
@click.option("--value", type=float, required=True, help="The true value f(D) to release.")
@click.option("--epsilon", type=float, required=True, help="Privacy parameter ε > 0.")
@click.option("--lower", type=float, required=True, help="Public lower bound of the output.")
@click.option("--upper", type=float, required=True, help="Public upper bound of the output.")
@click.option(
    "--sensitivity",
    type=float,
    default=1.0,
    show_default=True,
    help="Δ: max change of f(D) between neighbours.",
)
@click.option(
    "--alpha",
    type=float,
    default=0.05,
    show_default=True,
    help="Accuracy is stated at confidence 1 − alpha.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
@library_errors
def release(
    value: float,
    epsilon: float,
    lower: float,
    upper: float,
    sensitivity: float,
    alpha: float,
    as_json: bool,
) -> None:
    """Release VALUE with ε-differential privacy and print its accuracy.

    The accuracy is computed from the public parameters only (DESIGN §4): with probability at
    least 1 − alpha the release is within ± accuracy of the true value, for any value in bounds.
    """
    mechanism = SnappingMechanism(epsilon, sensitivity, lower, upper)
    accuracy = mechanism.accuracy(alpha)
    released = mechanism.release(value)
    privacy = mechanism.privacy
    if as_json:
        click.echo(
            json.dumps(
                {
                    "release": released,
                    "accuracy": accuracy,
                    "confidence": 1 - alpha,
                    "epsilon": privacy.epsilon,
                    "delta": privacy.delta,
                    "grid_spacing": mechanism.grid_spacing,
                }
            )
        )
        return
    click.echo(f"release   {released!r}")
    click.echo(f"accuracy  ±{accuracy:.6g} with probability >= {1 - alpha:g}")
    click.echo(f"guarantee {privacy}")
