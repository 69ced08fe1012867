"""The exception raised for bad parameters and inputs."""

from __future__ import annotations

__all__ = ["ParameterError", "PrivacyBudgetError"]


class ParameterError(ValueError, TypeError):
    """A parameter or input breaks a stated rule; the message names it and repeats its value.

    It is a ValueError (the issue contract) and also a TypeError, so that callers who test a wrong
    type the Python way (``except TypeError``) are served as well. ``parameter`` names the
    library parameter at fault when one is (e.g. ``"max_rows"``), so that the command line can
    name its own flag instead (``--max-rows``).
    """

    def __init__(self, message: str, *, parameter: str | None = None) -> None:
        super().__init__(message)
        self.parameter = parameter


class PrivacyBudgetError(ValueError):
    """A release was refused because it would exceed a privacy budget; nothing was spent."""
