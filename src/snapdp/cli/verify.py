"""``snapdp verify``: certify the exact privacy loss of the implementation (DESIGN §6)."""

from __future__ import annotations

import json
from fractions import Fraction

import click
from msgspec.structs import replace
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from snapdp.cli._common import epsilon_type, json_option, library_errors, sensitivity_option
from snapdp.errors import ParameterError
from snapdp.mechanism import LaplaceMechanism
from snapdp.verify.certify import DEFAULT_GRID, Certificate, GridPoint, certify
from snapdp.verify.laplace import textbook_leak

_FIELDS = (
    ("epsilon", "ε requested"),
    ("sensitivity", "Δ"),
    ("mechanism_epsilon", "ε_r (rescaled run)"),
    ("mechanism_sensitivity", "Δ_r = r·Δ"),
    ("lower", "lower"),
    ("upper", "upper"),
    ("value", "x"),
    ("neighbour", "x′"),
    ("precision", "p (bits)"),
    ("epsilon_prime", "ε′"),
    ("Lambda", "Λ (scaled)"),
    ("outputs", "outputs enumerated"),
    ("loss_digits", "ε achieved (exact loss)"),
    ("epsilon_minus_loss", "ε − loss"),
    ("worst_output", "loss reached at output"),
    ("delta", "δ (one-sided support)"),
    ("hockey_stick_delta", "δ(ε) hockey-stick"),
    ("delta_bound_library", "δ stated by the library"),
    ("seed004_bound", "published bound on loss (docs/verification.md)"),
    ("pure_epsilon", "loss <= ε on every output"),
)


@click.command()
@click.option(
    "--epsilon", type=epsilon_type, help="Privacy parameter ε > 0, exactly as typed (0.1 is 1/10)."
)
@click.option("--lower", type=float, help="Public lower bound.")
@click.option("--upper", type=float, help="Public upper bound.")
@click.option("--value", type=float, help="The input x.")
@click.option("--neighbour", type=float, help="The neighbouring input x′.")
@sensitivity_option
@click.option(
    "--default-grid",
    is_flag=True,
    help="Certify the default grid (ε in {0.1, 0.5, 1, 2}, bounds ±10 and [0, 100], 4 pairs each).",
)
@click.option(
    "--textbook",
    is_flag=True,
    help="Check the textbook LaplaceMechanism instead (UNSAFE baseline): sampled, see docs.",
)
@click.option(
    "--samples",
    type=click.IntRange(min=100),
    default=100_000,
    show_default=True,
    help="With --textbook: outputs sampled per direction.",
)
@click.option(
    "--rescale/--no-rescale",
    default=True,
    show_default=True,
    help="Certify the mechanism as it runs (rescaled: no power-of-two penalty) or the "
    "power-of-two grid on (ε, Δ) itself (docs/mechanism.md).",
)
@json_option
@library_errors
def verify(
    epsilon: Fraction | None,
    lower: float | None,
    upper: float | None,
    value: float | None,
    neighbour: float | None,
    sensitivity: float,
    default_grid: bool,
    textbook: bool,
    samples: int,
    rescale: bool,
    as_json: bool,
) -> None:
    """Certify the exact privacy loss of the snapping mechanism between VALUE and NEIGHBOUR.

    Computes the exact output distribution of the implementation for both inputs (every output,
    its probability an exact rational) and prints a certificate: the parameters, the ε achieved
    (the maximum |ln P(o|x) − ln P(o|x′)|), δ (mass reachable from one input only), the
    hockey-stick δ(ε), and PASS when δ(ε) is within the δ the library states. Exit status 1 on
    FAIL. With --default-grid, certifies the default grid instead of one pair.

    With --textbook, checks the textbook LaplaceMechanism(ε, Δ) instead (bounds unused): each
    sampled output of VALUE is decided exactly as possible or impossible under NEIGHBOUR; one
    impossible output proves an infinite loss, and their fraction estimates δ (99.9% interval).
    """
    if textbook:
        _textbook(epsilon, sensitivity, value, neighbour, samples, as_json)
        return
    if default_grid:
        points = [replace(p, rescale=rescale) for p in DEFAULT_GRID]
    else:
        missing = [
            name
            for name, v in (
                ("--epsilon", epsilon),
                ("--lower", lower),
                ("--upper", upper),
                ("--value", value),
                ("--neighbour", neighbour),
            )
            if v is None
        ]
        if missing:
            raise ParameterError(f"missing {', '.join(missing)} (or use --default-grid)")
        assert epsilon is not None and lower is not None and upper is not None
        assert value is not None and neighbour is not None
        points = [GridPoint(epsilon, lower, upper, value, neighbour, sensitivity, rescale)]  # type: ignore[arg-type]
    certificates = _run(points, quiet=as_json)
    if as_json:
        docs = [{**c.as_dict(), "explanation": _delta_note(c)} for c in certificates]
        click.echo(json.dumps(docs, indent=2))
    else:
        console = Console()
        for cert in certificates:
            console.print(_table(cert))
            note = _delta_note(cert)
            if note is not None:
                console.print(note, highlight=False)
        passed = sum(c.passed for c in certificates)
        console.print(f"{passed}/{len(certificates)} certificates PASS")
    if not all(c.passed for c in certificates):
        raise SystemExit(1)


def _textbook(
    epsilon: Fraction | None,
    sensitivity: float,
    value: float | None,
    neighbour: float | None,
    samples: int,
    as_json: bool,
) -> None:
    if epsilon is None or value is None or neighbour is None:
        raise ParameterError("--textbook needs --epsilon, --value and --neighbour")
    mechanism = LaplaceMechanism(epsilon, sensitivity)
    leaks = [
        textbook_leak(mechanism, a, b, samples=samples)
        for a, b in ((value, neighbour), (neighbour, value))
    ]
    rows = [
        {
            "mechanism": "LaplaceMechanism (textbook, UNSAFE)",
            "epsilon": float(epsilon),
            "sensitivity": sensitivity,
            "value": leak.value,
            "neighbour": leak.neighbour,
            "samples": leak.samples,
            "impossible_under_neighbour": leak.impossible,
            "delta_estimate": leak.fraction,
            "delta_interval_99.9": [leak.delta_low, leak.delta_high],
            "loss": "inf" if leak.loss_is_infinite else "not shown by this sample",
            "witness_output": leak.witness,
            "passed": not leak.loss_is_infinite,
        }
        for leak in leaks
    ]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
    else:
        console = Console()
        for row in rows:
            verdict = "[green]no leak found[/green]" if row["passed"] else "[red]FAIL[/red]"
            table = Table(title=f"textbook Laplace check: {verdict}", show_header=False)
            for key, v in row.items():
                table.add_row(key, str(v))
            console.print(table)
    if not all(row["passed"] for row in rows):
        raise SystemExit(1)


def _run(points: list[GridPoint], quiet: bool) -> list[Certificate]:
    """Certify each point; a progress bar (on stderr) counts the enumerated outputs."""
    results = []
    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed} outputs"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        disable=quiet,
        transient=True,
    ) as progress:
        task = progress.add_task("certifying", total=None)
        for i, point in enumerate(points, 1):
            progress.update(task, description=f"certifying {i}/{len(points)}")
            results.append(certify(point, lambda n: progress.advance(task, n)))
    return results


def _delta_note(cert: Certificate) -> str | None:
    """Why a loss above ε can still PASS (or why it fails): the δ of (ε, δ)-DP, in words."""
    if cert.pure:
        return None
    d = cert.as_dict()
    verdict = (
        f"within the δ = {d['delta_bound_library']} that the library states, so the guarantee "
        "holds as (ε, δ)-differential privacy"
        if cert.passed
        else f"more than the δ = {d['delta_bound_library']} that the library states: FAIL"
    )
    return (
        f"note: the loss exceeds ε on some outputs — the far tail of the noise, where one input "
        f"can reach an output the other reaches with much smaller or zero probability. Their "
        f"excess probability is δ(ε) = {d['hockey_stick_delta']}, {verdict}. "
        "See docs/verification.md."
    )


def _table(cert: Certificate) -> Table:
    verdict = "[green]PASS[/green]" if cert.passed else "[red]FAIL[/red]"
    table = Table(title=f"snapping certificate: {verdict}", show_header=False)
    data = cert.as_dict()
    for key, label in _FIELDS:
        value = data[key]
        shown = f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else value
        table.add_row(label, str(shown))
    return table
