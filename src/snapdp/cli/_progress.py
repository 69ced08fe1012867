"""A progress bar for long CLI runs (``snapdp run``): drawn on standard error, only when it is a
terminal, and gone when the run ends. It counts the run's public steps
(:data:`snapdp.data.release.run.ProgressCallback`), never anything about the data."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["progress_bar"]


@contextmanager
def progress_bar(what: str) -> Iterator[Callable[[int, int, str], None] | None]:
    """A callback ``(done, total, label)`` drawing a bar titled ``what``; None when standard
    error is not a terminal (pipes, tests and CI get no bar and no stray output). ``rich`` is
    imported only when a bar may be drawn."""
    if not _may_be_terminal():
        yield None
        return
    from rich.console import Console

    console = Console(stderr=True)
    if not console.is_terminal:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, transient=True,
    ) as bar:  # fmt: skip
        task = bar.add_task(what, total=None)

        def update(done: int, total: int, label: str) -> None:
            bar.update(task, completed=done, total=total, description=f"{what}: {label}")

        yield update


def _may_be_terminal() -> bool:
    """False when ``rich`` would find no terminal either: standard error is not a tty and none of
    the variables that make ``rich`` draw anyway is set."""
    try:
        tty = sys.stderr.isatty()
    except (AttributeError, ValueError):
        tty = False
    return tty or any(
        os.environ.get(v) for v in ("FORCE_TERMINAL", "TTY_INTERACTIVE", "FORCE_COLOR")
    )
