"""What ``snapdp release`` and ``snapdp sql`` print: numbers in plain digits, the progress bar,
a dry run's accuracy statements and a release's results with their usefulness flags
(docs/data.md, "The command line"; docs/utility.md)."""

from __future__ import annotations

import functools
import json
import math
import threading
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, TypeVar

import click

from snapdp._rational import exact_text
from snapdp.data.model.schema import Schema
from snapdp.data.output.results import QueryResult
from snapdp.data.planner.consistent_accuracy import NOTE as CONSISTENT_NOTE
from snapdp.data.statistics import AccuracyStatement

__all__ = [
    "PRINT_MODULES",
    "exact_text",
    "plain_number",
    "print_accuracy",
    "print_results",
    "progress_columns",
    "usefulness",
    "with_progress",
]

R = TypeVar("R")


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


def with_progress(engine: Any, run: Callable[[], R], quiet: bool) -> R:
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


def key_text(k: object) -> str:
    """A key as printed: a number in plain digits; a text with each character that is not
    printable (a control character such as ESC or a line break, a format or separator
    character) written as its Python escape (``\\x1b``, ``\\n``, ``\\u200e``), so that a key
    chosen from the data cannot recolour, retitle or move the cursor of the user's terminal. The
    result files and ``--json`` hold the key as it is (docs/data.md, "The command line")."""
    if isinstance(k, Fraction):
        return plain_number(float(k))
    text = str(k)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


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
                summary = plain_summary(exact_text(result.epsilon), lo, hi, worst)
    return list(found.values()), summary


def print_accuracy(statements: list[AccuracyStatement], as_json: bool) -> None:
    if as_json:
        doc = [
            {
                "query": s.label,
                "epsilon": exact_text(s.epsilon),
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
            f"{s.label:<28} ε = {exact_text(s.epsilon):<10} {s.describe()} "
            f"(confidence {s.confidence:g})"
        )
    consistent = {n for s in statements for n in s.notes if n == CONSISTENT_NOTE}
    for note in consistent:
        click.echo(f"assumes: {note}")


#: What :func:`print_results` imports (a command preloads them: :func:`snapdp.cli.preload`).
PRINT_MODULES = (
    "rich.console",
    "rich.table",
    "snapdp.usefulness",
    "snapdp.data.output.notes_plain",
)


def print_results(
    label: str,
    results: list[QueryResult],
    eps: Fraction,
    ledger: str | None,
    remaining: Fraction,
    schema: Schema,
    *,
    plain: bool = False,
) -> None:
    """The results as tables, each with its notes: as the release states them, or with
    ``plain`` in plain words with their docs page (:mod:`snapdp.data.output.notes_plain`), the
    exact statements left to ``--details``."""
    from rich.cells import cell_len
    from rich.console import Console
    from rich.table import Table

    # every text printed is the user's (paths, labels, keys) or snapdp's plain words: never rich
    # markup or emoji codes (a file named `data[final].csv` prints as named), and rich does not
    # parse them for either (cheaper)
    console = Console(markup=False, emoji=False)
    # rich's highlighting (numbers, paths, quotes in colour) shows only where styles are written:
    # without a colour system (not a terminal) its regular expressions would change no byte
    say = functools.partial(console.print, highlight=console.color_system is not None)
    say(f"Private release from {key_text(label)}")  # a file name as text, printable
    for r in results:
        title = f"{r.label}, ε = {exact_text(r.epsilon)}"
        # at least as wide as its title: rich wraps a title to the table's width
        shown = Table(title=title, min_width=min(cell_len(title), console.width))
        for k in r.key_columns:
            shown.add_column(k)
        quantiles = r.query.statistic == "quantiles"
        if quantiles:
            shown.add_column("p", justify="right")
        shown.add_column("value", justify="right")
        shown.add_column(f"± ({r.confidence:.0%})", justify="right")
        for row in r.rows:
            shown.add_row(
                *[key_text(k) for k in row.keys],
                *([plain_number(float(row.quantile or 0))] if quantiles else []),
                plain_number(row.value),
                "±" + plain_number(row.accuracy, 4),
            )
        say(shown)
        if r.target_note is not None:
            say(f"  {'✓' if r.target_met else '✗'} {r.target_note}")
        for note in _plain_lines(r.notes) if plain else r.notes:
            say(f"  · {note}")
        flags, summary = usefulness(r, schema)
        for flag in flags:
            say(f"  ⚑ {flag['message']}")
        if summary:
            say(f"  {summary}")
    say(
        f"Each value is within its ± of the true statistic (of the declared, bounded table) with "
        f"probability ≥ {results[0].confidence:g}."
    )
    if plain and any(r.notes for r in results):
        say("(--details prints the exact statement of each note)")
    where = f"ledger {ledger}" if ledger else "no ledger (one-off budget)"
    say(f"Spent ε = {exact_text(eps)}; {where}; remaining ε = {exact_text(remaining)}.")


def _plain_lines(notes: Sequence[str]) -> list[str]:
    """Each note in plain words with its docs page, one line per distinct text."""
    from snapdp.data.output.notes_plain import plain_note

    lines: list[str] = []
    for note in notes:
        shown = plain_note(note)
        line = f"{shown.text} ({shown.doc})"
        if line not in lines:
            lines.append(line)
    return lines
