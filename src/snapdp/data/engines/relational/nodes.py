"""Names as sqlglot nodes, built directly (issue 32): sqlglot's builders parse a string argument
as SQL text (``select("x")``, ``from_("t")``, ``with_("t", …)``, ``join("t", join_type=…)``),
which cost a fresh release a few ms of parsing per query. Each helper here gives the node that
parse gives, for the plain internal names the relational tree uses
(tests/unit/data/engines/test_sql_nodes.py renders every case both ways and compares)."""

from __future__ import annotations

from collections.abc import Iterable

from sqlglot import exp

__all__ = ["columns", "cte_alias", "semi_join", "star", "table"]


def columns(names: Iterable[str]) -> list[exp.Expression]:
    """Column references, one per name (as ``select("a", "b")`` parses them)."""
    return [exp.column(name) for name in names]


def star() -> exp.Expression:
    """``*`` (as ``select("*")`` parses it)."""
    return exp.Star()


def table(name: str) -> exp.Expression:
    """The table ``name`` (as ``from_("name")`` parses it)."""
    return exp.Table(this=exp.to_identifier(name))


def cte_alias(name: str) -> exp.Expression:
    """A CTE's name (as ``with_("name", as_=…)`` parses it)."""
    return exp.TableAlias(this=exp.to_identifier(name))


def semi_join(select: exp.Select, name: str, using: Iterable[str]) -> exp.Select:
    """``select`` SEMI JOIN the table ``name`` USING ``using`` (as
    ``select.join("name", join_type="semi", using=[…])`` parses it)."""
    join = exp.Join(this=table(name), kind="SEMI", using=[exp.to_identifier(u) for u in using])
    return select.join(join)
