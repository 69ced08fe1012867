"""The exceptions snapdp raises for bad input, a spent budget and an unusable ledger.

Each carries ``parameter``: the library parameter at fault when there is one (``"max_rows"``,
``"ledger"``), so that the command line names its own flag instead (``--max-rows``); see
:mod:`snapdp.cli._common`.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["LedgerError", "ParameterError", "PrivacyBudgetError", "did_you_mean"]


def did_you_mean(word: object, known: Iterable[str]) -> str:
    """``"; did you mean 'age'?"`` when ``word`` is close to one of ``known`` (a misspelt
    column, statistic or key), else ``""``: for the end of a refusal's first clause."""
    if not isinstance(word, str):
        return ""
    import difflib  # only on a refusal's path (~1 ms at every start otherwise)

    found = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f"; did you mean {found[0]!r}?" if found else ""


def not_declared(name: str, declared: Iterable[str], *, what: str = "column") -> str:
    """The one text for a name the declaration does not have (docs/data.md, "The declaration"):
    ``column 'x' is not declared; did you mean 'y'? (declared: 'a', 'b')``. Declared names only,
    never data values."""
    names = list(declared)
    listed = ", ".join(repr(n) for n in names) or "none"
    return f"{what} {name!r} is not declared{did_you_mean(name, names)} (declared: {listed})"


def not_in_source(name: str) -> str:
    """The one text for a declared column that the source lacks (its header is not listed)."""
    return f"declared column {name!r} is not in the data"


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
