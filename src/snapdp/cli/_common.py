"""Shared CLI pieces: the error boundary and option types."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import click

from snapdp.errors import ParameterError, PrivacyBudgetError

P = ParamSpec("P")
R = TypeVar("R")


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
