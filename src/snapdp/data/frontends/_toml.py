"""Reading a TOML file with positions for errors (docs/plans.md, "Errors"); the TOML front end's
reader (:mod:`snapdp.data.frontends.toml`).

``tomllib`` reports the line of a syntax error but gives no positions for the values it returns,
so a semantic error ("unknown column") could not say where it is. :class:`KeyLocator` finds the
line of each key from the text itself: it follows table headers (``[data]``, ``[[query]]``, …),
``key = value`` lines (dotted and quoted keys included) and the keys of inline tables
(``age = { type = "integer", lower = 0 }``). It is a locator, not a parser: the values come from
``tomllib``; only the line numbers come from here, and a key it cannot place is reported at the
line of its nearest located parent (or without a line).
"""

from __future__ import annotations

import re
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

from snapdp._validation import SIZE_RULE
from snapdp.data.model.names import Path_, PlanFileError, describe_key

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the package needs Python 3.11 for plan files
    tomllib = None

__all__ = ["KeyLocator", "Path_", "PlanFileError", "describe_key", "load_toml", "parse_toml"]

_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\[\]]+?)\s*\]\]?\s*(#.*)?$")
_BARE = r"[A-Za-z0-9_-]+"
_QUOTED = r'"(?:[^"\\]|\\.)*"|\'[^\']*\''
_KEY_PART = rf"(?:{_BARE}|{_QUOTED})"
_DOTTED = rf"{_KEY_PART}(?:\s*\.\s*{_KEY_PART})*"
_ASSIGN = re.compile(rf"^\s*({_DOTTED})\s*=")
_INLINE_KEY = re.compile(rf"(?:^|[{{,])\s*({_DOTTED})\s*=")
_SYNTAX_LINE = re.compile(r"\(at line (\d+), column \d+\)")
_LONG_NUMBER = re.compile(r"[0-9_]{101,}")


def _split_dotted(text: str) -> list[str]:
    parts = re.findall(_KEY_PART, text)
    return [p[1:-1] if p[:1] in "\"'" else p for p in parts]


class KeyLocator:
    """The line (1-based) of every key of a TOML text, by key path."""

    def __init__(self, text: str) -> None:
        self._lines: dict[Path_, int] = {}
        prefix: Path_ = ()
        arrays: dict[tuple[str, ...], int] = {}
        in_multiline = False
        for number, raw in enumerate(text.splitlines(), start=1):
            line = raw
            if in_multiline:
                if line.count('"""') % 2 == 1 or line.count("'''") % 2 == 1:
                    in_multiline = False
                continue
            header = _HEADER.match(line)
            if header and not _ASSIGN.match(line):
                names = tuple(_split_dotted(header.group(2)))
                if header.group(1) == "[[":
                    index = arrays.get(names, -1) + 1
                    arrays[names] = index
                    prefix = (*names, index)
                else:
                    prefix = names
                self._lines.setdefault(prefix, number)
                continue
            assign = _ASSIGN.match(line)
            if assign is None:
                continue
            path: Path_ = (*prefix, *_split_dotted(assign.group(1)))
            self._lines.setdefault(path, number)
            rest = line[assign.end() :]
            if rest.count('"""') % 2 == 1 or rest.count("'''") % 2 == 1:
                in_multiline = True
            brace = rest.find("{")
            if brace >= 0:
                for m in _INLINE_KEY.finditer(rest[brace:]):
                    self._lines.setdefault((*path, *_split_dotted(m.group(1))), number)

    def line(self, path: Path_) -> int | None:
        """The line of ``path``, or of its nearest located parent; None if none is located."""
        for end in range(len(path), 0, -1):
            found = self._lines.get(path[:end])
            if found is not None:
                return found
        return None


def load_toml(path: Path) -> tuple[dict[str, Any], KeyLocator]:
    """The parsed file (floats as exact ``Decimal``) and its key locator; a PlanFileError naming
    the file (and line) when it cannot be read or is not TOML."""
    if tomllib is None:  # pragma: no cover
        raise PlanFileError("plan files need Python 3.11 or later (tomllib)", parameter="plan")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise PlanFileError(
            f"{path}: the plan file cannot be read ({exc.strerror or type(exc).__name__})",
            parameter="plan",
        ) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise PlanFileError(f"{path}: the plan file is not UTF-8 text", parameter="plan") from None
    return parse_toml(text, path)


def parse_toml(text: str, path: Path) -> tuple[dict[str, Any], KeyLocator]:
    """The parsed text (floats as exact ``Decimal``) and its key locator; errors name ``path``
    (the file, or what the text is called) and the line."""
    if tomllib is None:  # pragma: no cover
        raise PlanFileError("plan files need Python 3.11 or later (tomllib)", parameter="plan")
    try:
        data = tomllib.loads(text, parse_float=Decimal)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        m = _SYNTAX_LINE.search(message)
        where = f"{path}, line {m.group(1)}" if m else str(path)
        reason = _SYNTAX_LINE.sub("", message).strip()
        raise PlanFileError(f"{where}: not valid TOML: {reason}", parameter="plan") from None
    except ValueError:  # an integer of more digits than Python converts (over 4,300)
        long = _LONG_NUMBER.search(text)
        line = "" if long is None else f", line {text.count(chr(10), 0, long.start()) + 1}"
        raise PlanFileError(
            f"{path}{line}: a number must have {SIZE_RULE}", parameter="plan"
        ) from None
    return data, KeyLocator(text)
