"""The relational tree's SQL types are parsed once per process and copied (issue 32: a fresh run
parsed each type name anew, ~60 times for three queries): each call gives a node of its own,
equal to the one parsed afresh, and the queries' text is unchanged (the differential and engine
tests compare the releases; here the types themselves)."""

from __future__ import annotations

from sqlglot import exp

from snapdp.data.engines.relational import topn

NAMES = ("BIGINT", "HUGEINT", "DOUBLE", "VARCHAR", "DECIMAL(38, 0)", "UBIGINT")


def test_each_call_gets_its_own_node_equal_to_a_fresh_parse() -> None:
    for name in NAMES:
        first, second = topn.node_type(name), topn.node_type(name)
        fresh = exp.DataType.build(name, dialect="duckdb")
        assert first is not second and first == fresh == second
        assert first.sql(dialect="duckdb") == fresh.sql(dialect="duckdb")
        assert first.sql(dialect="spark") == fresh.sql(dialect="spark")
        first.set("this", exp.DataType.Type.TEXT)  # a node changed in one tree …
        assert topn.node_type(name) == fresh  # … changes no later one


def test_a_name_is_parsed_once() -> None:
    topn._parsed_type.cache_clear()
    for _ in range(5):
        topn.node_type("BIGINT")
    info = topn._parsed_type.cache_info()
    assert (info.misses, info.hits) == (1, 4)
