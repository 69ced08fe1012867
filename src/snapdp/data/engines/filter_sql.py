"""A row filter as SQL text for an engine that runs SQL (DuckDB): each column reference and
each literal written by the engine's own functions, fully parenthesised. The filter's meaning is
:func:`snapdp.data.model.predicate.evaluate`; this only writes it down."""

from __future__ import annotations

from collections.abc import Callable

from snapdp.data.model.predicate import And, Compare, InList, IsNull, LiteralValue, Not, Predicate

__all__ = ["render"]


def render(
    predicate: Predicate,
    column: Callable[[str], str],
    literal: Callable[[str, LiteralValue], str],
) -> str:
    """The predicate as SQL text, with ``column(name)`` for each column reference and
    ``literal(name, value)`` for each literal (an engine passes its own); fully parenthesised."""
    if isinstance(predicate, Compare):
        c = predicate.column
        return f"({column(c)} {predicate.op} {literal(c, predicate.value)})"
    if isinstance(predicate, InList):
        c = predicate.column
        items = ", ".join(literal(c, v) for v in predicate.values)
        return f"({column(c)} IN ({items}))"
    if isinstance(predicate, IsNull):
        return f"({column(predicate.column)} IS NULL)"
    if isinstance(predicate, Not):
        return f"(NOT {render(predicate.term, column, literal)})"
    word = " AND " if isinstance(predicate, And) else " OR "
    return "(" + word.join(render(t, column, literal) for t in predicate.terms) + ")"
