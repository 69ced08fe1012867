"""The exceptions snapdp raises for bad input, a spent budget and an unusable ledger.

Each carries ``parameter``: the library parameter at fault when there is one (``"max_rows"``,
``"ledger"``), so that the command line names its own flag instead (``--max-rows``); see
:mod:`snapdp.cli._common`.
"""

from __future__ import annotations

__all__ = ["LedgerError", "ParameterError", "PrivacyBudgetError"]


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

    parameter: str | None = "epsilon"


class LedgerError(RuntimeError):
    """The budget ledger cannot be used: missing, locked, unwritable, foreign or damaged.

    Raised before any noise is drawn when it can be known then (see ``Ledger.check``); the ledger
    file is left as it was. The message is one line naming the file and what to do.
    """

    parameter: str | None = "ledger"

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path
