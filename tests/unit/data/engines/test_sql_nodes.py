"""The relational tree builds its names as nodes, parsing no SQL text (issue 32: sqlglot's
builders parse a string argument, a few ms per query of a fresh run), and the DuckDB and Spark
text is byte for byte the text of the string builders: the oracle builds every case of
:mod:`_sql_cases` again with :mod:`~snapdp.data.engines.relational.nodes` replaced by the
strings main passed (``select("x")``, ``from_("t")``, ``with_("t", …)``,
``join("t", join_type="semi", using=[…])``), which sqlglot parses."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from tests.unit.data.engines._sql_cases import trees

from snapdp.data.engines.relational import nodes, topn
from snapdp.data.engines.relational.dialects import duckdb_sql, spark_sql


def _string_semi_join(select: exp.Select, name: str, using: Iterable[str]) -> exp.Select:
    return select.join(name, join_type="semi", using=list(using))


STRINGS: dict[str, Callable[..., Any]] = {
    "columns": list,
    "star": lambda: "*",
    "table": str,
    "cte_alias": str,
    "semi_join": _string_semi_join,
}


def _built() -> tuple[list[exp.Expression], list[tuple[str, str]]]:
    """Every case's tree and its DuckDB and Spark text (each rendered from a copy: rendering
    may change a tree)."""
    built = trees()
    return built, [(duckdb_sql(t.copy()), spark_sql(t.copy())) for t in built]


def test_the_text_is_the_string_builders_text(monkeypatch: pytest.MonkeyPatch) -> None:
    built, text = _built()
    with monkeypatch.context() as m:
        for name, reference in STRINGS.items():
            m.setattr(nodes, name, reference)
        parsed, parsed_text = _built()
    assert len(text) == len(parsed_text) == 40
    assert text == parsed_text  # DuckDB and Spark, byte for byte
    assert built == parsed  # the same nodes, not only the same text


@contextmanager
def _parses() -> Iterator[list[str]]:
    """Every SQL text sqlglot parses inside the block (types aside: parsed once per process)."""
    seen: list[str] = []
    parse, parse_into = Dialect.parse, Dialect.parse_into

    def spy(self: Dialect, sql: str, **opts: Any) -> Any:
        seen.append(sql)
        return parse(self, sql, **opts)

    def spy_into(self: Dialect, into: Any, sql: str, **opts: Any) -> Any:
        if into is not exp.DataType:
            seen.append(sql)
        return parse_into(self, into, sql, **opts)

    Dialect.parse, Dialect.parse_into = spy, spy_into  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        Dialect.parse, Dialect.parse_into = parse, parse_into  # type: ignore[method-assign]


def test_building_and_rendering_for_duckdb_parses_no_text() -> None:
    topn._parsed_type.cache_clear()
    with _parses() as seen:
        for tree in trees():
            duckdb_sql(tree)
    assert seen == []
