"""SQL text: the pre-pass, the sqlglot tree and errors with a caret (docs/sql.md, "Refusals").

:class:`SqlText` holds a query's text, takes out what sqlglot does not parse (BigQuery's
``WITH DIFFERENTIAL_PRIVACY OPTIONS(...)`` prefix and ``contribution_bounds_per_group => (lo, hi)``
arguments, blanked with spaces so that every position stays where it was), parses the rest into
one statement's tree, and turns a position into an error naming the line and the column, with the
line shown and a caret under the offending part. It knows no grammar beyond that.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from snapdp._validation import SIZE_RULE, NumberSizeError, exact_decimal, shown_text
from snapdp.data.frontends.names import sql_word_for
from snapdp.errors import ParameterError

__all__ = ["SqlError", "SqlText"]

_OPTIONS = re.compile(
    r"^(\s*SELECT\s+)(WITH\s+DIFFERENTIAL_PRIVACY\s+OPTIONS\s*\(([^()]*)\))", re.I | re.S
)
_NUMBER = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_BOUNDS = re.compile(
    rf",\s*contribution_bounds_per_group\s*=>\s*\(\s*({_NUMBER})\s*,\s*({_NUMBER})\s*\)", re.I
)
_OPTION_NAMES = {
    "epsilon": "epsilon",
    "privacy_unit_column": "privacy_unit",
    "max_groups_contributed": "max_groups_per_unit",
    "max_rows_contributed": "max_rows_per_unit",
}
_KEYWORDS = {
    "join": ("JOIN", ","),
    "distinct": ("DISTINCT",),
    "limit": ("LIMIT", "OFFSET", "FETCH", "TOP"),
    "window": ("OVER",),
    "set": ("UNION", "INTERSECT", "EXCEPT"),
}


class SqlError(ParameterError):
    """A query outside the grammar of docs/sql.md: the message names the line and column and
    draws a caret under the offending part; nothing was read or spent."""


_BACKTICKED = re.compile(r"`([a-z][a-z0-9_]*)`")
_OPTION_SUFFIXES = ("_contributed", "_column")


class SqlText:
    """A query's text, its pre-pass and its tree; errors located in the text."""

    def __init__(
        self, text: str, display: str | None = None, prefix: int = 0, label: str = "query"
    ) -> None:
        if not isinstance(text, str):
            raise ParameterError(f"a SQL query must be text, not {text!r}", parameter="query")
        self.original = text if display is None else display
        self.prefix = prefix
        self.label = label  # how errors name the text: "query", or "`--where`"
        self.options: dict[str, tuple[object, int]] = {}
        self.bounds_at: list[tuple[int, Fraction, Fraction]] = []
        self.text = self._prepass(text)

    # -- errors ----------------------------------------------------------------------------
    def error(self, start: int, end: int, message: str, parameter: str = "query") -> SqlError:
        text = self.original
        start = max(0, min(start - self.prefix, len(text)))
        end = max(start, min(end - self.prefix, max(len(text) - 1, start)))
        line_start = text.rfind("\n", 0, start) + 1
        line_end = text.find("\n", start)
        line_end = len(text) if line_end < 0 else line_end
        line = text.count("\n", 0, start) + 1
        column = start - line_start + 1
        shown = text[line_start:line_end]
        width = max(1, min(end, line_end - 1) - start + 1)
        caret = " " * (start - line_start) + "^" * width
        return SqlError(
            f"{self.label}, line {line}, column {column}: {message} (docs/sql.md)\n"
            f"  {shown}\n  {caret}",
            parameter=parameter,
        )

    def words(self, message: str) -> str:
        """``message`` with each backticked library parameter that has an OPTIONS name written
        as that name (``max_rows_per_unit`` → ``max_rows_contributed``; :mod:`.names`)."""

        def swap(m: re.Match[str]) -> str:
            word = sql_word_for(m.group(1))
            return f"`{word}`" if word and word.endswith(_OPTION_SUFFIXES) else m.group(0)

        return _BACKTICKED.sub(swap, message)

    def at(self, node: Any, message: str, parameter: str = "query") -> SqlError:
        start, end = self.span(node)
        return self.error(start, end, message, parameter)

    def exact(self, node: Any, text: str | None = None, *, rational: bool = False) -> Fraction:
        """A number literal's exact value (``text``, else the node's), its digits and exponent
        checked before anything is built from it; an error with the caret under it otherwise."""
        start, end = self.span(node)
        return self.exact_span(str(node.this) if text is None else text, start, end, rational)

    def exact_span(self, written: str, start: int, end: int, rational: bool = False) -> Fraction:
        """The number ``written`` at [start, end] of the text, as :meth:`exact`."""
        try:
            return exact_decimal(written, name="number", rational=rational)
        except NumberSizeError:
            message = f"a number here must have {SIZE_RULE}, not {shown_text(written)}"
        except ParameterError:
            message = f"a number is expected here, not {shown_text(written)}"
        raise self.error(start, end, message)

    def span(self, node: Any) -> tuple[int, int]:
        """The text span of ``node``: its own position, or that of the first position below."""
        meta = getattr(node, "meta", None) or {}
        if "start" in meta:
            return int(meta["start"]), int(meta["end"])
        for child in node.walk():
            m = getattr(child, "meta", None) or {}
            if "start" in m:
                return int(m["start"]), int(m["end"])
        return 0, 0

    def keyword(self, words: Sequence[str], after: int = 0) -> tuple[int, int]:
        """The span of the first token among ``words`` at or after offset ``after``."""
        from sqlglot.tokens import Tokenizer

        for token in Tokenizer().tokenize(self.text):
            if token.start >= after and token.text.upper() in words:
                return token.start, token.end
        return after, after

    def refuse_keyword(self, kind: str, message: str, after: int = 0) -> SqlError:
        start, end = self.keyword(_KEYWORDS[kind], after)
        return self.error(start, end, message)

    # -- the pre-pass ------------------------------------------------------------------------
    def _prepass(self, text: str) -> str:
        m = _OPTIONS.match(text)
        if m:
            body_start = m.start(3)
            for item in re.finditer(r"([^,=]+)=([^,]+)", m.group(3)):
                name = item.group(1).strip().lower()
                value = item.group(2).strip()
                where = body_start + item.start(1)
                if name not in _OPTION_NAMES:
                    raise self.error(
                        where,
                        body_start + item.end(1) - 1,
                        f"unknown DIFFERENTIAL_PRIVACY option {name!r}; known: "
                        + ", ".join(_OPTION_NAMES),
                    )
                self.options[_OPTION_NAMES[name]] = (value, where)
            text = text[: m.start(2)] + _blank(m.group(2)) + text[m.end(2) :]
        for b in _BOUNDS.finditer(text):
            lo = self.exact_span(b.group(1), b.start(1), b.end(1) - 1)
            hi = self.exact_span(b.group(2), b.start(2), b.end(2) - 1)
            self.bounds_at.append((b.start(), lo, hi))
        return _BOUNDS.sub(lambda b: _blank(b.group(0)), text)

    # -- parsing ---------------------------------------------------------------------------
    def tree(self) -> Any:
        import sqlglot
        from sqlglot import exp
        from sqlglot.errors import ParseError, TokenError

        try:
            statements = [s for s in sqlglot.parse(self.text) if s is not None]
        except ParseError as exc:
            first = exc.errors[0] if exc.errors else {}
            start = _offset(self.text, first.get("line", 1), first.get("col", 1))
            highlight = str(first.get("highlight") or " ")
            start = max(0, start - len(highlight) + 1)
            reason = str(first.get("description") or "not valid SQL")
            raise self.error(start, start + len(highlight) - 1, f"syntax error: {reason}") from None
        except TokenError:
            raise self.error(0, 0, "syntax error: the query does not tokenize") from None
        if not statements:
            raise self.error(0, 0, "the query is empty")
        if len(statements) > 1:
            second = statements[1]
            start, _ = self.span(second)
            semicolon = self.text.rfind(";", 0, max(start, 1))
            raise self.error(
                semicolon if semicolon >= 0 else start,
                semicolon if semicolon >= 0 else start,
                "one statement only: write each query on its own",
            )
        tree = statements[0]
        if isinstance(tree, (exp.Union, exp.Intersect, exp.Except)):
            raise self.refuse_keyword(
                "set", "set operations (UNION, INTERSECT, EXCEPT) are refused"
            )
        if not isinstance(tree, exp.Select):
            raise self.at(tree, "only a SELECT is accepted")
        if tree.args.get("with") or tree.args.get("with_"):
            start, end = self.keyword(("WITH",))
            raise self.error(
                start, end, "WITH (common table expressions) is refused: no subqueries"
            )
        return tree


def _blank(text: str) -> str:
    return "".join(ch if ch == "\n" else " " for ch in text)


def _offset(text: str, line: int, col: int) -> int:
    lines = text.split("\n")
    before = sum(len(x) + 1 for x in lines[: max(0, line - 1)])
    return before + max(0, col - 1)
