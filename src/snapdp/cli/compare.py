"""``snapdp compare``: what a release is worth — snapping, discrete Laplace and textbook Laplace."""

from __future__ import annotations

import json
from typing import Any

import click

from snapdp.cli._common import json_option, library_errors, sensitivity_option
from snapdp.errors import ParameterError


@click.command()
@click.option("--epsilon", type=float, required=True, help="Privacy parameter ε > 0.")
@click.option("--lower", type=float, required=True, help="Public lower bound of the output.")
@click.option("--upper", type=float, required=True, help="Public upper bound of the output.")
@sensitivity_option
@click.option(
    "--value",
    type=float,
    default=None,
    help="A hypothetical true value to analyse (default: the midpoint of the bounds).",
)
@click.option(
    "--quantum",
    type=float,
    default=None,
    help="Discrete Laplace's step for a real-valued statistic (default: 1 when Δ is an "
    "integer — a count or integer sum — else Δ).",
)
@click.option(
    "--output",
    type=click.Path(file_okay=False),
    default="snapdp-report",
    show_default=True,
    help="Directory for report.html and report.json (created).",
)
@json_option
@library_errors
def compare(
    epsilon: float,
    lower: float,
    upper: float,
    sensitivity: float,
    value: float | None,
    quantum: float | None,
    output: str,
    as_json: bool,
) -> None:
    """Compare the snapping mechanism with discrete Laplace and textbook Laplace at the same ε.

    Prints a plain summary, warnings about useless or wasteful settings, and the three mechanisms
    side by side; writes a self-contained HTML report (figures embedded) and a JSON of every
    number (keys "summary", "flags", "mechanisms", "attacks", ...); --json prints those keys
    instead of the text. Everything is computed
    exactly from the public parameters: no data is read and no privacy budget is spent. See
    docs/utility.md.
    """
    from snapdp.analysis.report import build_report

    report = build_report(epsilon, lower, upper, sensitivity, value, quantum=quantum)
    try:
        html_path, json_path = report.write(output)
    except OSError as exc:
        raise ParameterError(
            f"--output: cannot write the report into {output!r} "
            f"({exc.strerror or type(exc).__name__})",
            parameter="output",
        ) from None
    if as_json:
        keys = ("summary", "flags", "inputs", "mechanisms", "attacks")
        cleaned = json.loads(report.json())  # non-finite numbers already made null
        summary = {k: cleaned[k] for k in keys}
        summary["files"] = {"html": str(html_path), "json": str(json_path)}
        click.echo(json.dumps(summary, indent=1, allow_nan=False))
        return
    click.echo(_text(report.data))
    click.echo(f"wrote {html_path} and {json_path}")


def _num(v: float) -> str:
    return f"{v:.4g}"


def _text(d: dict[str, Any]) -> str:
    """The terminal version: summary, warnings, then the three mechanisms."""
    lines = [d["summary"], ""]
    for f in d["flags"]:
        lines.append(f"warning [{f['code']}]: {f['message']}")
    if d["flags"]:
        lines.append("")
    leaks = {a["mechanism"]: a for a in d["attacks"]}
    x = d["inputs"]["value"]
    lines.append(f"{'mechanism':<18}{'95% ±':>12}{'99% ±':>12}{'MAE at ' + _num(x):>18}  leaks")
    names = (
        ("snapping", "snapping"),
        ("discrete_laplace", "discrete Laplace"),
        ("textbook_laplace", "textbook Laplace"),
    )
    for key, name in names:
        m = d["mechanisms"][key]
        attack = leaks[name]
        leak = (
            f"yes ({attack['rate1']:.0%} of outputs of {_num(attack['input1'])} "
            f"possible under {_num(attack['input0'])})"
            if attack["leaks"]
            else "no"
        )
        lines.append(
            f"{name:<18}{_num(m['accuracy95']):>12}{_num(m['accuracy99']):>12}"
            f"{_num(m['value_metrics']['mae']):>18}  {leak}"
        )
    par = d["parameters"]
    disc = d["mechanisms"]["discrete_laplace"]
    lines.append(
        f"(grid Λ·Δ = {par['grid_spacing']:g}; discrete Laplace on multiples of "
        f"{disc['quantum']:g}; all clamped to [{d['inputs']['lower']:g}, "
        f"{d['inputs']['upper']:g}])"
    )
    return "\n".join(lines)
