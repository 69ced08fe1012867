"""Shared CLI pieces: the error boundary and option types."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import click

from snapdp.errors import ParameterError, PrivacyBudgetError

P = ParamSpec("P")
R = TypeVar("R")

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


def library_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Turn the library's input and budget errors into clean ``click`` errors (exit status 2/1)."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except ParameterError as exc:
            raise click.UsageError(str(exc)) from None
        except PrivacyBudgetError as exc:
            raise click.ClickException(str(exc)) from None

    return wrapper
