"""SQL text: the pre-pass, the sqlglot tree and errors with a caret (docs/sql.md, "Refusals").

:class:`SqlText` holds a query's text, takes out what sqlglot does not parse (BigQuery's
``WITH DIFFERENTIAL_PRIVACY OPTIONS(...)`` prefix and ``contribution_bounds_per_group => (lo, hi)``
arguments, blanked with spaces so that every position stays where it was), parses the rest into
one statement's tree, and turns a position into an error naming the line and the column, with the
line shown and a caret under the offending part. It knows no grammar beyond that.

The pre-pass reads sqlglot's tokens, not the raw text: a comment is no token and a string literal
is one token, so neither can set an option or an aggregate's bounds, and a literal is never
blanked (docs/sql.md, "OPTIONS and per-aggregate bounds").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from snapdp._validation import SIZE_RULE, NumberSizeError, exact_decimal, shown_text
from snapdp.data.model.names import sql_word_for
from snapdp.errors import ParameterError, did_you_mean

__all__ = ["SqlError", "SqlText"]

_OPTION_NAMES = {
    "epsilon": "epsilon",
    "delta": "delta",
    "privacy_unit_column": "privacy_unit",
    "max_groups_contributed": "max_groups_per_unit",
    "max_rows_contributed": "max_rows_per_unit",
    "grid_counts": "grid_counts",
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
            raise ParameterError(
                f"a SQL query must be text, not {type(text).__name__}", parameter="query"
            )
        self.original = text if display is None else display
        self.prefix = prefix
        self.label = label  # how errors name the text: "query", or "`--where`"
        self._check_unicode(text)
        self.options: dict[str, tuple[object, int]] = {}  # key → (value text, name's offset)
        self.option_spans: dict[str, tuple[int, int]] = {}  # key → span of `name = value`
        self.option_words: dict[str, str] = {}  # key → the name as written
        self.bounds_at: list[tuple[int, Fraction, Fraction]] = []
        self.text = self._prepass(text)

    def _check_unicode(self, text: str) -> None:
        """Refuse a text holding a lone surrogate (``'\\ud800'``, which has no UTF-8 form: no
        engine could hold a literal of it), naming its position but not echoing the line."""
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            shown = self.original
            start = max(0, min(exc.start - self.prefix, len(shown)))
            line = shown.count("\n", 0, start) + 1
            column = start - (shown.rfind("\n", 0, start) + 1) + 1
            raise SqlError(
                f"{self.label}, line {line}, column {column}: the text must be valid Unicode "
                f"text, and {text[exc.start]!r} is a lone surrogate (docs/sql.md)",
                parameter="query",
            ) from None

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

    def tokens(self) -> list[Any]:
        """sqlglot's tokens of the text after the pre-pass."""
        from sqlglot.tokens import Tokenizer

        return list(Tokenizer().tokenize(self.text))

    def keyword(self, words: Sequence[str], after: int = 0) -> tuple[int, int]:
        """The span of the first token among ``words`` at or after offset ``after``."""
        for token in self.tokens():
            if token.start >= after and token.text.upper() in words:
                return token.start, token.end
        return after, after

    def refuse_keyword(self, kind: str, message: str, after: int = 0) -> SqlError:
        start, end = self.keyword(_KEYWORDS[kind], after)
        return self.error(start, end, message)

    # -- the pre-pass ------------------------------------------------------------------------
    def _prepass(self, text: str) -> str:
        from sqlglot.errors import TokenError
        from sqlglot.tokens import Tokenizer

        try:
            tokens = list(Tokenizer().tokenize(text))
        except TokenError:
            raise self.error(0, 0, "syntax error: the query does not tokenize") from None
        spans = self._options(tokens) + self._bounds(tokens)
        for start, end in spans:
            text = text[:start] + _blank(text[start : end + 1]) + text[end + 1 :]
        return text

    def _options(self, tokens: list[Any]) -> list[tuple[int, int]]:
        """BigQuery's ``WITH DIFFERENTIAL_PRIVACY OPTIONS(name = value, …)`` after SELECT: each
        item read into :attr:`options`; the span to blank (empty: no prefix)."""
        words = [t.text.upper() for t in tokens[:5]]
        if words[:4] != ["SELECT", "WITH", "DIFFERENTIAL_PRIVACY", "OPTIONS"] or words[4:] != ["("]:
            return []
        items: list[list[Any]] = [[]]
        depth, close = 0, None
        for token in tokens[5:]:
            kind = token.token_type.name
            if kind == "R_PAREN" and depth == 0:
                close = token
                break
            depth += {"L_PAREN": 1, "R_PAREN": -1}.get(kind, 0)
            if kind == "COMMA" and depth == 0:
                items.append([])
            else:
                items[-1].append(token)
        if close is None:
            raise self.error(tokens[3].start, tokens[4].end, "OPTIONS( is not closed")
        if items == [[]]:
            items = []
        for item in items:
            self._option(item, close.start)
        return [(tokens[1].start, close.end)]

    def _option(self, item: list[Any], close: int) -> None:
        if not item:
            raise self.error(close, close, f"OPTIONS takes `name = value` items ({_KNOWN})")
        start, end = item[0].start, item[-1].end
        if len(item) < 3 or item[1].token_type.name != "EQ" or item[0].token_type.name != "VAR":
            raise self.error(start, end, f"OPTIONS takes `name = value` items ({_KNOWN})")
        written = item[0].text
        name = written.lower()
        if name not in _OPTION_NAMES:
            hint = did_you_mean(name, _OPTION_NAMES)
            known = f"unknown DIFFERENTIAL_PRIVACY option {written}{hint} (known: {_KNOWN})"
            raise self.error(start, item[0].end, known)
        key = _OPTION_NAMES[name]
        if key in self.options:
            raise self.error(start, end, f"OPTIONS gives {name} twice: give it once")
        value = item[2:]
        kinds = [t.token_type.name for t in value]
        if kinds in (
            ["NUMBER"],
            ["DASH", "NUMBER"],
            ["PLUS", "NUMBER"],
            ["NUMBER", "SLASH", "NUMBER"],
        ):
            text = "".join(t.text for t in value).lstrip("+")
        elif kinds in (["VAR"], ["IDENTIFIER"], ["STRING"], ["TRUE"], ["FALSE"]):
            text = value[0].text
        else:
            raise self.error(value[0].start, end, f"{name} takes one number or one column name")
        self.options[key] = (text, start)
        self.option_spans[key] = (start, end)
        self.option_words[key] = name

    def _bounds(self, tokens: list[Any]) -> list[tuple[int, int]]:
        """Each ``, contribution_bounds_per_group => (lo, hi)`` argument, read into
        :attr:`bounds_at` (at its comma); the spans to blank."""
        spans = []
        for i, token in enumerate(tokens):
            if token.token_type.name != "VAR" or token.text.lower() != _BOUNDS_WORD:
                continue
            found = _bounds_after(tokens, i)
            if found is None:
                raise self.error(
                    token.start, token.end,
                    f"{_BOUNDS_WORD} is written `, {_BOUNDS_WORD} => (lower, upper)` with two "
                    "numbers, as an aggregate's last argument",
                )  # fmt: skip
            (lo, hi), end = found
            comma = tokens[i - 1].start
            self.bounds_at.append(
                (
                    comma,
                    self.exact_span(lo, token.start, end),
                    self.exact_span(hi, token.start, end),
                )
            )
            spans.append((comma, end))
        return spans

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


_BOUNDS_WORD = "contribution_bounds_per_group"
_KNOWN = ", ".join(_OPTION_NAMES)


def _bounds_after(tokens: list[Any], i: int) -> tuple[tuple[str, str], int] | None:
    """The two numbers of ``, word => (lo, hi)`` around ``tokens[i]`` (the word) and the offset
    of its closing parenthesis; None when the tokens do not have that shape."""
    if i == 0 or tokens[i - 1].token_type.name != "COMMA":
        return None
    kinds = [t.token_type.name for t in tokens[i + 1 : i + 11]]
    texts = [t.text for t in tokens[i + 1 : i + 11]]
    if kinds[:2] != ["FARROW", "L_PAREN"]:
        return None
    numbers: list[str] = []
    j = 2
    for closing in ("COMMA", "R_PAREN"):
        sign = ""
        if j < len(kinds) and kinds[j] in ("DASH", "PLUS"):
            sign, j = texts[j], j + 1
        if kinds[j : j + 2] != ["NUMBER", closing]:
            return None
        numbers.append(sign + texts[j])
        j += 2
    return (numbers[0], numbers[1]), tokens[i + j].end


def _blank(text: str) -> str:
    return "".join(ch if ch == "\n" else " " for ch in text)


def _offset(text: str, line: int, col: int) -> int:
    lines = text.split("\n")
    before = sum(len(x) + 1 for x in lines[: max(0, line - 1)])
    return before + max(0, col - 1)
