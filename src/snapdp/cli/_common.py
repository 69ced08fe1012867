"""Shared CLI pieces: the one error boundary, option types and number formatting.

The boundary (:class:`BoundaryGroup`, used by ``snapdp``) turns every failure into one line — no
traceback — in one place, in the manner of sqlite-utils:

* library errors (:class:`~snapdp.errors.ParameterError`, ``PrivacyBudgetError``,
  ``LedgerError``) carry ``parameter``; their message names the command's flag instead of the
  Python name (``max_rows`` → ``--max-rows``), through the invoked command's own option of that
  name or else :data:`FLAGS`, the one table of user-facing names
  (:mod:`snapdp.data.model.names`, docs/sql.md "One workload");
* with ``--json`` every error, click's own included, is ``{"error": "..."}`` on stdout;
* Ctrl-C prints "interrupted, nothing spent" and exits 130 — or, when the command has called
  :func:`mark_spent` (its spend is committed), says so and where to look;
* anything else (sqlite3, DuckDB, OSError, a bug) is one line naming its kind; set
  ``SNAPDP_TRACEBACK=1`` to see the traceback.

Exit status: 2 for a bad parameter, 1 for any other error, 130 on Ctrl-C.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import click

from snapdp._validation import check_epsilon
from snapdp.data.model.names import PlanFileError, flags
from snapdp.errors import LedgerError, ParameterError, PrivacyBudgetError

__all__ = [
    "FLAGS",
    "BoundaryGroup",
    "EpsilonType",
    "check_source",
    "epsilon_type",
    "json_option",
    "library_errors",
    "mark_spent",
    "plain_number",
    "sensitivity_option",
]

P = ParamSpec("P")
R = TypeVar("R")

#: Library parameter name → command-line flag, for messages: the one table of user-facing names
#: (:mod:`snapdp.data.model.names`); the invoked command's own option of a name wins.
FLAGS: dict[str, str] = flags()

_SPENT_KEY = "snapdp.spent"
_INTERRUPTED = 130
_BACKTICKED = re.compile(r"`([a-z][a-z0-9_]*)`")


class EpsilonType(click.ParamType[Fraction]):
    """A privacy parameter typed as a decimal, parsed exactly into a Fraction (``0.1`` → 1/10).

    Uses :func:`snapdp._validation.check_epsilon`, so the command line and the API accept the same
    texts (docs/mechanism.md, "Exact ε").
    """

    name = "epsilon"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> Fraction:
        if isinstance(value, Fraction):
            return value
        flag = param.opts[0] if param is not None and param.opts else "epsilon"
        try:
            return check_epsilon(flag.lstrip("-").replace("-", "_"), value)
        except ParameterError as exc:
            self.fail(_flags_in(str(exc), {}), param, ctx)


#: The shared instance: ``@click.option("--epsilon", type=epsilon_type)``.
epsilon_type = EpsilonType()

#: ``--sensitivity``, identical in every command that builds a mechanism.
sensitivity_option = click.option(
    "--sensitivity",
    type=float,
    default=1.0,
    show_default=True,
    help="Δ: the most f(D) can change between neighbouring datasets.",
)

#: ``--json``, identical in every command.
json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print JSON for machines instead of tables."
)


def plain_number(x: float | int | Fraction, *, digits: int | None = None) -> str:
    """``x`` in plain decimal notation with thousands separators, never scientific notation:
    1.5e20 → ``"150,000,000,000,000,000,000"``, 1e-7 → ``"0.0000001"``. A float is written from
    its shortest repr (exactly the double); ``digits`` first rounds to that many significant
    digits. A Fraction prints as its exact decimal if short, else to 12 significant digits."""
    if isinstance(x, Fraction):
        from snapdp._rational import format_rational

        text = format_rational(x)
        if "/" not in text:
            return plain_number(Decimal(text), digits=digits)  # type: ignore[arg-type]
        x = float(x)
        digits = digits or 12
    if isinstance(x, float) and not (x == x and abs(x) != float("inf")):
        return repr(x)
    d = Decimal(repr(x)) if isinstance(x, float) else Decimal(x)
    if digits is not None and d != 0:
        d = Decimal(f"{d:.{digits - 1}e}")
    text = f"{d:,f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def check_source(source: object, origin: str) -> None:
    """Refuse a source path that does not exist, naming where it was given (``origin``: the
    plan or declaration file) and the path it resolves to; before anything is read or spent.
    A file pattern (``*``, ``?``, ``[``) and any non-path source are left to the reader."""
    if not isinstance(source, (str, Path)) or any(ch in str(source) for ch in "*?["):
        return
    path = Path(source).expanduser()
    if not path.exists():
        raise ParameterError(
            f"{origin}: [data] `source` {str(path.resolve())!r} does not exist (a relative path "
            "is read from the file's own folder; docs/plans.md); nothing was spent",
            parameter="source",
        )


def mark_spent(note: str, result: str | None = None) -> None:
    """Tell the boundary that this command's spend is committed (``note`` says where), so that a
    Ctrl-C from now on is not reported as "nothing spent"; ``result``, if given, is the released
    text, which the boundary then shows (it was paid for)."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.find_root().meta[_SPENT_KEY] = (note, result)


def _flags_in(message: str, extra: dict[str, str]) -> str:
    """``message`` with each backticked library name that has a flag replaced by the flag."""
    table = {**FLAGS, **extra}

    def swap(match: re.Match[str]) -> str:
        flag = table.get(match.group(1))
        return f"`{flag}`" if flag else match.group(0)

    return _BACKTICKED.sub(swap, message)


def _named(exc: BaseException, extra: dict[str, str]) -> str:
    """A library error in one line, naming flags instead of library names — except a plan
    file's error, which already names the file's key (``query[2].bins``) and keeps its words."""
    text = _one_line(exc)
    return text if isinstance(exc, PlanFileError) else _flags_in(text, extra)


def _command_flags(group: click.Group, ctx: click.Context) -> dict[str, str]:
    """The invoked subcommand's options by parameter name (``max_rows`` → ``--max-rows``)."""
    name = ctx.invoked_subcommand  # set once the group has chosen it (its arguments are gone)
    if name is None:
        args = _arguments(ctx)
        name = args[0] if args else None
    command = group.get_command(ctx, name) if name else None
    if command is None:
        return {}
    return {p.name: p.opts[0] for p in command.params if p.name and p.opts}


def _own_flags(ctx: click.Context | None) -> dict[str, str]:
    """The running command's options by parameter name."""
    if ctx is None:
        return {}
    return {p.name: p.opts[0] for p in ctx.command.params if p.name and p.opts}


def _arguments(ctx: click.Context) -> list[str]:
    """The group's unparsed arguments: the subcommand's name and its arguments."""
    protected = getattr(ctx, "_protected_args", None)  # click >= 8.2
    if protected is None:
        protected = ctx.protected_args  # click 8.1
    return [*protected, *ctx.args]


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


class BoundaryGroup(click.Group):
    """A ``click.Group`` whose subcommands run inside the error boundary (module docstring)."""

    def invoke(self, ctx: click.Context) -> Any:
        as_json = "--json" in _arguments(ctx)
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            spent = ctx.meta.get(_SPENT_KEY)
            if spent:
                note, result = spent
                if result is not None:
                    click.echo(result)
                _fail(f"interrupted after the spend was committed ({note})", as_json)
            else:
                _fail("interrupted, nothing spent", as_json)
            ctx.exit(_INTERRUPTED)
        except (ParameterError, PrivacyBudgetError, LedgerError) as exc:
            message = _named(exc, _command_flags(self, ctx))
            code = 2 if isinstance(exc, ParameterError) else 1
            if not as_json and code == 2:
                raise click.UsageError(message) from None
            _fail(message, as_json)
            ctx.exit(code)
        except click.exceptions.Exit:
            raise
        except click.ClickException as exc:
            if not as_json:
                raise
            _fail(_one_line(click.ClickException(exc.format_message())), as_json)
            ctx.exit(exc.exit_code)
        except click.Abort:
            raise
        except Exception as exc:
            if os.environ.get("SNAPDP_TRACEBACK"):
                raise
            _fail(f"{_kind(exc)}{_text(exc)} (set SNAPDP_TRACEBACK=1 for details)", as_json)
            ctx.exit(1)
        return None


def _text(exc: Exception) -> str:
    """The exception's own text only where it cannot quote the data: a file error names a path
    the user gave, the ledger's sqlite3 errors its file. A data engine's message (DuckDB,
    pyarrow, pyspark) or an unexpected error's may quote a cell, so a release shows its class
    alone (docs/data.md, "What is public, what is protected")."""
    if isinstance(exc, OSError) or type(exc).__module__.split(".")[0] == "sqlite3":
        return f": {_one_line(exc)}"
    return ""


def _kind(exc: Exception) -> str:
    module = type(exc).__module__.split(".")[0]
    if isinstance(exc, OSError):
        return "file error"
    if module in ("sqlite3", "duckdb", "pyarrow", "pyspark"):
        return f"{module} error"
    return f"unexpected error ({type(exc).__name__})"


def _fail(message: str, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps({"error": message}))
    else:
        click.echo(f"Error: {message}", err=True)


def library_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Mark a command as running inside the boundary of :class:`BoundaryGroup`.

    The conversion happens there, in one place; this wrapper only converts library errors for a
    command invoked on its own (outside the ``snapdp`` group), with the same messages.
    """

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except ParameterError as exc:
            ctx = click.get_current_context(silent=True)
            if ctx is not None and isinstance(ctx.find_root().command, BoundaryGroup):
                raise
            raise click.UsageError(_named(exc, _own_flags(ctx))) from None
        except (PrivacyBudgetError, LedgerError) as exc:
            ctx = click.get_current_context(silent=True)
            if ctx is not None and isinstance(ctx.find_root().command, BoundaryGroup):
                raise
            raise click.ClickException(_named(exc, _own_flags(ctx))) from None

    return wrapper
