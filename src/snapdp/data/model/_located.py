"""Errors located in a file: which file, which line, which key (docs/plans.md, "Errors").

A front end that reads a file (the TOML plan loader) hands the planner a :class:`Locator` with
the plan, so that an error the planner finds later (a target that cannot be met) still names
the file, the line and the key. The planner reads no text: it only asks the locator for a line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from snapdp.errors import ParameterError

__all__ = ["Locator", "Path_", "PlanFileError", "describe_key", "located"]

#: A key path: table names, array-of-table indices (0-based) and key names.
Path_ = tuple[str | int, ...]


class PlanFileError(ParameterError):
    """A plan file breaks a rule; the message names the file, the line and the key."""


class Locator(Protocol):
    """Finds the line of a key path in a file."""

    def line(self, path: Path_) -> int | None:
        """The line (1-based) of ``path`` or of its nearest located parent; None if none."""
        ...


def describe_key(path: Path_) -> str:
    """``query[2].accuracy`` for ("query", 1, "accuracy"): indices 1-based, as a user counts."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part + 1}]"
        else:
            out += ("." if out else "") + part
    return out


def located(
    path: Path, locator: Locator | None, key: Path_, message: str, parameter: str | None
) -> PlanFileError:
    """``message`` as a PlanFileError naming ``path``, the line of ``key`` and ``key``."""
    line = None if locator is None else locator.line(key)
    where = str(path) + ("" if line is None else f", line {line}")
    return PlanFileError(f"{where}, key `{describe_key(key)}`: {message}", parameter=parameter)
