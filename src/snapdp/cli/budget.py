"""``snapdp budget``: show a privacy-budget ledger, its datasets and its history; export it."""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from fractions import Fraction
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from snapdp._rational import format_rational, storage_text
from snapdp._validation import check_epsilon
from snapdp.cli._common import json_option, library_errors, plain_number
from snapdp.data.budget.ledger import (
    DatasetBudget,
    Ledger,
    LedgerEntry,
    LedgerReport,
    read_ledger,
)
from snapdp.errors import ParameterError

_CSV_COLUMNS = (
    "id",
    "time",
    "dataset",
    "label",
    "what",
    "epsilon",
    "epsilon_exact",
    "delta",
    "query",
)


@click.command()
@click.option("--ledger", type=click.Path(), required=True, help="Ledger file.")
@click.option("--dataset", metavar="NAME", help="Show only this dataset's budget and releases.")
@click.option(
    "--export",
    type=click.Path(dir_okay=False),
    help="Write the whole history to FILE.csv or FILE.json (for audits).",
)
@click.option(
    "--total-epsilon",
    metavar="EPS",
    help="Set --dataset's total ε in the ledger (the data owner's act; releases nothing). "
    "A budget is set once and never changed.",
)
@click.option(
    "--total-delta",
    metavar="DELTA",
    help="Set --dataset's total δ (what groups chosen from the data may spend; docs/plans.md). "
    "Set once and never changed, beside or after --total-epsilon.",
)
@click.option(
    "--lock-timeout",
    type=click.FloatRange(min=0, min_open=True, max=86_400),
    default=60.0,
    show_default=True,
    help="Seconds to wait for a release in progress to finish.",
)
@json_option
@library_errors
def budget(
    ledger: str,
    dataset: str | None,
    export: str | None,
    total_epsilon: str | None,
    total_delta: str | None,
    lock_timeout: float,
    as_json: bool,
) -> None:
    """Show a ledger: every dataset's total ε, what it spent and what remains (exactly), and every
    recorded release (when, what, the cap a plan run reserved, ε spent, δ). ε is shown as the
    decimal it was given (0.1), or as p/q when no short decimal is exact. See docs/data.md,
    "Budgets and the ledger". With --total-epsilon, set a new dataset's budget instead (the data
    owner's act: `snapdp run`, `snapdp ui` and the page spend only from a budget the owner set;
    docs/plans.md); --total-delta sets its δ budget (groups chosen from the data)."""
    if total_epsilon is not None or total_delta is not None:
        _set_budget(ledger, dataset, total_epsilon, export, lock_timeout, as_json, total_delta)
        return
    report = read_ledger(ledger, timeout=lock_timeout)
    datasets, entries = report.datasets, report.entries
    if dataset is not None:
        datasets = [d for d in datasets if d.dataset == dataset]
        if not datasets:
            names = ", ".join(repr(d.dataset) for d in report.datasets) or "none"
            raise ParameterError(
                f"`--dataset` {dataset!r} has no budget in ledger {ledger!r} (its datasets: "
                f"{names})"
            )
        entries = [e for e in entries if e.dataset == dataset]
    if export is not None:
        _export(report, Path(export))
    if as_json:
        click.echo(json.dumps(_document(report, datasets, entries)))
        return
    console = Console()
    if export is not None:
        console.print(f"wrote {len(report.entries):,} releases to {export}")
    if entries:
        table = Table(title=f"Releases recorded in {ledger}")
        for col in ("#", "time (UTC)", "dataset", "released", "reserved", "ε spent", "δ"):
            table.add_column(col, justify="left" if col in ("time (UTC)", "dataset",
                             "released") else "right")  # fmt: skip
        for e in entries:
            table.add_row(
                f"{e.id:,}",
                e.time,
                e.dataset,
                e.what,
                _reserved_text(e),
                format_rational(e.epsilon),
                f"{e.delta:.3g}",
            )
        # as wide as its rows need, never cut at a pipe's 80 columns (a dataset is a full path)
        need = console.measure(table, options=console.options.update_width(10_000)).maximum
        console.width = max(console.width, need)
        console.print(table, crop=False)
    else:
        console.print(f"no releases recorded in {ledger}")
    for d in datasets:
        console.print(
            f"{d.dataset}: total ε = {format_rational(d.total_epsilon)}, "
            f"spent {format_rational(d.spent)}, remaining {format_rational(d.remaining)} "
            f"({plain_number(d.releases)} releases)",
            highlight=False,
            soft_wrap=True,
        )
    if report.cap is not None:
        console.print(
            f"this file, written by an earlier snapdp, also caps all datasets together at "
            f"ε = {format_rational(report.cap)}",
            highlight=False,
            soft_wrap=True,
        )


def _set_budget(
    ledger: str,
    dataset: str | None,
    total_epsilon: str | None,
    export: str | None,
    lock_timeout: float,
    as_json: bool,
    total_delta: str | None = None,
) -> None:
    """Record ``dataset``'s budget in ``ledger`` with no release; refuse to change one."""
    flag = "--total-epsilon" if total_epsilon is not None else "--total-delta"
    if dataset is None:
        raise click.UsageError(f"`{flag}` needs `--dataset`: the dataset whose budget it is")
    if export is not None:
        raise ParameterError(
            "`--total-epsilon` sets a budget; use `--export` in a separate call", parameter="export"
        )
    known = {d.dataset: d.total_epsilon for d in _datasets(ledger, lock_timeout)}
    if total_epsilon is None and dataset not in known:
        raise ParameterError(
            f"`--total-delta` needs the dataset's ε budget: give --total-epsilon beside it "
            f"(dataset {dataset} has none in ledger {ledger})",
            parameter="total_epsilon",
        )
    total = (
        known[dataset] if total_epsilon is None else check_epsilon("total_epsilon", total_epsilon)
    )
    if dataset in known and known[dataset] != total:
        raise ParameterError(
            f"`--total-epsilon`: dataset {dataset} already has total ε = "
            f"{format_rational(known[dataset])} in ledger {ledger}; a budget is never changed "
            '(docs/data.md, "Budgets and the ledger")',
            parameter="total_epsilon",
        )
    book = Ledger(ledger, total, dataset=dataset, timeout=lock_timeout, total_delta=total_delta)
    created = book.set_budget()
    delta = {} if book.total_delta is None else {"total_delta": str(total_delta)}
    if as_json:
        click.echo(
            json.dumps(
                {"ledger": ledger, "dataset": dataset, "created": created,
                 **_exact("total_epsilon", total), **delta}
            )
        )  # fmt: skip
        return
    done = "set" if created else "was already"
    also = "" if book.total_delta is None else f", total δ {total_delta}"
    click.echo(
        f"dataset {dataset}: total ε {done} {format_rational(total)}{also} in {ledger} "
        "(nothing spent)"
    )


def _datasets(ledger: str, timeout: float) -> list[DatasetBudget]:
    """The ledger's budgets (none when the file does not exist yet)."""
    if not Path(ledger).exists():
        return []
    return Ledger.datasets(ledger, timeout=timeout)


def _reserved_text(e: LedgerEntry) -> str:
    """The reserved cap of a plan run ("" for a plain release); an open reservation (a run that
    never returned its unused part, e.g. a crash) counts whole."""
    if e.reserved is None:
        return ""
    return format_rational(e.reserved) + ("" if e.settled else " (open: all spent)")


def _budget_dict(d: DatasetBudget) -> dict[str, Any]:
    return {
        "dataset": d.dataset,
        "releases": d.releases,
        **_exact("total_epsilon", d.total_epsilon),
        **_exact("spent", d.spent),
        **_exact("remaining", d.remaining),
    }


def _exact(key: str, x: Fraction) -> dict[str, Any]:
    """A JSON number (the nearest double) and the exact value as text ``"p/q"``."""
    return {key: float(x), f"{key}_exact": storage_text(x)}


def _entry_dict(e: LedgerEntry) -> dict[str, Any]:
    out = e.as_dict()
    out["epsilon"] = float(e.epsilon)
    return out


def _document(
    report: LedgerReport, datasets: list[DatasetBudget], entries: list[LedgerEntry]
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "ledger": report.path,
        "created": report.created,
        "file_cap": None if report.cap is None else storage_text(report.cap),
        "datasets": [_budget_dict(d) for d in datasets],
        "releases": [_entry_dict(e) for e in entries],
    }
    if len(datasets) == 1:  # one budget: its numbers at the top level too
        doc.update({k: v for k, v in _budget_dict(datasets[0]).items() if k != "releases"})
    return doc


def _export(report: LedgerReport, path: Path) -> None:
    """Write the whole history as CSV or JSON, atomically (a temporary file, then a rename)."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(_CSV_COLUMNS)
        for e in report.entries:
            d = e.as_dict()
            writer.writerow([*(d[c] for c in _CSV_COLUMNS[:-1]), json.dumps(e.query)])
        text = buffer.getvalue()
    elif suffix == ".json":
        text = json.dumps(_document(report, report.datasets, report.entries), indent=2)
    else:
        raise ParameterError(f"`--export` must end in .csv or .json, not {path.name!r}")
    folder = path.parent
    if not folder.is_dir():
        raise ParameterError(f"`--export` folder {str(folder)!r} does not exist: create it first")
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
