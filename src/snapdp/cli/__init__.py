"""The ``snapdp`` command: thin glue over the library (DESIGN §9).

Every error becomes one clean line at one boundary (:class:`snapdp.cli._common.BoundaryGroup`):
no traceback reaches the user, flags are named as flags, ``--json`` errors are JSON, Ctrl-C exits
130. Each command lives in its own module, imported only when that command runs (or help lists
it), so that ``snapdp run`` does not pay for the page's server, ``rich`` tables or the owner's
check (docs/performance.md, "Latency").
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any


def _launched_as_the_command() -> bool:
    """Whether this process was started as the ``snapdp`` command: ``python -m snapdp.cli``
    (its interpreter options before ``-m``) or the installed ``snapdp`` script, read from the
    interpreter's own command line only (a tool that runs the script inside its own process,
    ``coverage run …/snapdp`` or a profiler, is not the command)."""
    words = iter(getattr(sys, "orig_argv", ())[1:])
    for word in words:
        if word in ("-X", "-W", "--check-hash-based-pycs"):  # an option and its value
            next(words, None)
        elif word.startswith("-m"):
            return (word[2:] or next(words, "")) == "snapdp.cli"
        elif word.startswith("-c") or word == "-":
            return False  # code
        elif not word.startswith("-"):  # a script and its arguments
            return Path(word).stem in ("snapdp", "snapdp-script")
    return False


#: The young generation's threshold while the process runs the command (Python's default is
#: 700): its lazy imports (DuckDB, sqlglot, pyarrow, rich) then make ~10 young collections
#: instead of ~85, and at most this many young objects wait for the next one.
_YOUNG = 5_000


@contextlib.contextmanager
def _collector_off(active: bool) -> Iterator[None]:
    """When ``active``: no collection inside, then what it made is frozen (never scanned again:
    imports live as long as the process) and the collector is on again."""
    if active:
        gc.disable()
    try:
        yield
    finally:
        if active:
            gc.freeze()
            gc.enable()


# Started as the command, the collector stays off while the command's libraries are imported
# (numpy, click, the planner: ~0.4 s of a fresh run, ~70 young collections, 10-40 ms of CPU)
# and is then frozen, so that the command's collections do not scan the imports either; and
# numpy's BLAS starts on one thread (snapdp._blas: ~0.1 s of CPU in every fresh run).
_COMMAND = _launched_as_the_command()
with _collector_off(gc.isenabled() and _COMMAND):
    if _COMMAND:
        from snapdp._blas import start_on_one_thread

        start_on_one_thread()
    import click

    from snapdp import __version__
    from snapdp.cli._common import BoundaryGroup

__all__ = ["COMMANDS", "main", "preload", "preload_source"]

#: Command name → the module defining it (its function has the command's name).
COMMANDS: dict[str, str] = {
    "release": "snapdp.cli.release",
    "compare": "snapdp.cli.compare",
    "verify": "snapdp.cli.verify",
    "budget": "snapdp.cli.budget",
    "check": "snapdp.cli.check",
    "plan": "snapdp.cli.plan",
    "run": "snapdp.cli.plan",
    "sql": "snapdp.cli.sql",
    "ui": "snapdp.cli.ui",
}


class _LazyGroup(BoundaryGroup):
    """A :class:`BoundaryGroup` whose commands are imported on first use.

    Run as the process's own command (its arguments read from ``sys.argv``: the ``snapdp``
    script, ``python -m snapdp.cli``), it freezes the garbage collector's view of what is
    imported (:func:`gc.freeze`, once before the command's module is imported and once after):
    those objects live as long as the process, and the collections the command then makes no
    longer scan them; once the command is done, everything is frozen, so the collection at exit
    scans nothing (~0.05–0.1 s of CPU in a fresh ``snapdp run``; docs/performance.md). The
    collector is off while the command's module is imported, and its young generation waits for
    :data:`_YOUNG` objects while the command runs. Started as the command (``snapdp``,
    ``python -m snapdp.cli``), it then ends the process without the interpreter's teardown
    (:func:`snapdp.cli._exit.end_process`: exit handlers run, stdout is flushed). Called
    with its arguments (a test's ``CliRunner``, code embedding the command), it leaves the
    collector as it is."""

    _process = False  # set when run as the process's command

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        run: Callable[..., Any] = super().main  # click types it by standalone_mode's value
        if args is not None:
            return run(args, prog_name, complete_var, standalone_mode, windows_expand_args, **extra)
        self._process = True  # the process's own command line
        gc.freeze()
        thresholds = gc.get_threshold()
        gc.set_threshold(_YOUNG, *thresholds[1:])
        try:
            return run(None, prog_name, complete_var, standalone_mode, windows_expand_args, **extra)
        except SystemExit as done:
            if not _COMMAND or sys.flags.inspect or os.environ.get("PYTHONINSPECT"):
                raise  # an embedding caller may catch it and go on; `-i` goes on to its prompt
            from snapdp.cli._exit import end_process

            end_process(done.code)  # without the interpreter's teardown (snapdp.cli._exit)
        finally:  # the process ends: its last collection, at exit, has nothing left to scan
            gc.freeze()
            # Code that goes on after the command (an embedding caller) gets the usual collector.
            gc.set_threshold(*thresholds)
            self._process = False

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            with _collector_off(self._process):  # no collection while the module is imported
                command = getattr(importlib.import_module(COMMANDS[cmd_name]), cmd_name)
            self.add_command(command, cmd_name)
        return self.commands.get(cmd_name)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="snapdp")
def main() -> None:
    """Differentially private releases through Mironov's snapping mechanism."""


def preload(*modules: str) -> None:
    """Import ``modules`` now, in one go: a command that knows from its arguments and its plan
    which libraries its run will import (the DuckDB engine, pyarrow for the results, rich to
    print them) imports them before its work instead of one by one in the middle of it. Run as
    the process's own command, the collector is off meanwhile and what they made is then frozen
    (each lazy import otherwise sets off young collections that scan its objects, and a second
    generation one: ~30 ms of a fresh ``snapdp run``'s CPU; docs/performance.md, "Latency").
    Called with its arguments (a test's ``CliRunner``), it only imports. Only the plan, the
    command and its flags may choose ``modules``, never the data (the imports take time)."""
    with _collector_off(isinstance(main, _LazyGroup) and main._process):
        for name in modules:
            importlib.import_module(name)


#: What a release over a file imports when it opens and reads the source (the engine the
#: library picks for a path: DuckDB's; a command preloads them, :func:`snapdp.cli.preload`).
_DUCKDB_MODULES = ("duckdb", "snapdp.data.engines.duckdb.engine")


def preload_source(source: object, *modules: str) -> None:
    """Preload what a release over the file ``source`` imports, then ``modules``
    (:func:`snapdp.cli.preload`): DuckDB's engine, and pyarrow unless the source is named as
    Parquet (a CSV file's records reach DuckDB as Arrow batches). Once DuckDB is imported, the
    process's shared database is opened on another thread while the rest is imported and the
    plan checked, when the command is the process's own (docs/performance.md, "Latency"). For
    a command whose engine sets none of DuckDB's database-wide settings; chosen by the source's
    name and the command, never the data."""
    preload(*_DUCKDB_MODULES)
    from snapdp.data.engines.header import PARQUET_SUFFIXES  # loaded with the engine

    if isinstance(main, _LazyGroup) and main._process:  # not for a test's CliRunner
        from snapdp.data.engines.duckdb.connection import open_shared_database_soon

        open_shared_database_soon()
    parquet = str(source).lower().endswith(PARQUET_SUFFIXES)
    preload(*(() if parquet else ("pyarrow",)), *modules)
