"""The aggregate query computes each value once (issue 32): a text cell's check and trim once
below its cast, a bin's comparison tree once (the filter reads its first and last comparisons
only), no cast of a column to the type it already has. Both engines' renderings are checked, and
on DuckDB the casts read through the inner projection give the very values of the one-expression
cast."""

from __future__ import annotations

import re
from fractions import Fraction

import duckdb
import pytest
from sqlglot import exp

from snapdp.data.engines._cells import declared_columns
from snapdp.data.engines.base import AggregatePlan, ValueColumn
from snapdp.data.engines.relational import builders, exprs, observed
from snapdp.data.engines.relational.dialects import duckdb_sql, spark_sql
from snapdp.data.engines.relational.plan import aggregate_query
from snapdp.data.model.predicate import Compare
from snapdp.data.model.schema import Column, ContributionBounds, NullRule

F = Fraction
KEY = "00112233445566778899aabbccddeeff"
# uneven edges: no grid, so the comparison tree (one literal per edge)
EDGES = (-(1 << 63), 3, 17, 100, 1000, 12345, 99999, 1 << 40, (1 << 62) + 7, 1 << 63)
H = Column("h", "integer", bins=tuple(F(e) for e in EDGES))
X = Column("x", "decimal", bins=(F(0), F(1, 3), F(2, 3), F(5, 4), F(7)))
G = Column("g", "text", keys=("a", "b"))
W = ValueColumn(Column("w", "integer", lower=F(0), upper=F(1000)), 0, 0, 1000)
V = ValueColumn(Column("v", "decimal", lower=F(0), upper=F(10)), 2, 0, 1000)
U = Column("u", "text")


def _plans() -> list[AggregatePlan]:
    return [
        AggregatePlan(groupings=(H,)),
        AggregatePlan(groupings=(G, H), values=(W, V), where=Compare("w", ">", 3),
                      where_columns=(W.column,)),
        AggregatePlan(groupings=(X,), values=(V,), unit=U, bounds=ContributionBounds(2, 1),
                      hash_key=KEY),
    ]  # fmt: skip


def _render(plan: AggregatePlan, family: str) -> list[str]:
    """The plan's query over a source whose used columns are all of ``family``, as DuckDB
    (wide) and Spark (narrow) render it."""
    fams = dict.fromkeys(plan.used_columns(), family)
    spark_fams = {n: "text" if f == "bytes" else f for n, f in fams.items()}
    duck = aggregate_query(plan, exp.Var(this="src"), fams, wide=True).tree
    spark = aggregate_query(plan, exp.to_table("v"), spark_fams, wide=False).tree
    return [duckdb_sql(duck), spark_sql(spark)]


@pytest.mark.parametrize("plan", _plans())
@pytest.mark.parametrize("family", ["text", "bytes"])
def test_each_text_cell_is_checked_and_trimmed_once(plan: AggregatePlan, family: str) -> None:
    duck, spark = _render(plan, family)
    trims = sum(1 for n in plan.used_columns() if _kind(plan, n) != "text")
    # the source column is named where its cell's text is read, once: DuckDB's check names it
    # once, Spark's three times (not empty, valid UTF-8, the text)
    for sql, quote, reads in ((duck, '"', 1), (spark, "`", 3)):
        for name in plan.used_columns():
            assert sql.count(f"{quote}{name}{quote}") == reads, (name, sql[:300])
        assert sql.count("TRIM(") == trims


def _kind(plan: AggregatePlan, name: str) -> str:
    return declared_columns(plan)[name].type


def test_a_csv_integer_cell_has_its_text_check_once_on_spark() -> None:
    plan = AggregatePlan(groupings=(H,))
    sql = spark_sql(aggregate_query(plan, exp.to_table("v"), {"h": "text"}, wide=False).tree)
    assert sql.count("is_valid_utf8(") == 1
    assert sql.count("TRIM(") == 1
    assert sql.count(" RLIKE ") == 2  # the integer gate, the decimal gate
    duck = duckdb_sql(aggregate_query(plan, exp.Var(this="src"), {"h": "text"}, wide=True).tree)
    assert duck.count("NULLIF(CAST(") == 1
    assert duck.count("TRIM(") == 1
    assert duck.count("regexp_full_match(") == 2


@pytest.mark.parametrize("family", ["text", "int"])
def test_the_comparison_tree_is_written_once(family: str) -> None:
    plan = AggregatePlan(groupings=(H,))
    for sql in _render(plan, family):
        for e in EDGES[1:-1]:
            assert len(re.findall(rf"< {e}\b", sql)) == 1, e
        # the filter keeps the rows in a bin by the tree's first and last comparisons only
        where = sql[sql.index(" WHERE ", sql.index("_snapdp_s1 AS")) :]
        where = where[: where.index("_snapdp_b0") if "_snapdp_b0" in where else None]
        assert len(re.findall(r"<=? ", where)) == 2, where[:300]


@pytest.mark.parametrize("plan", _plans())
@pytest.mark.parametrize("family", ["text", "int", "float"])
def test_no_column_is_cast_to_the_type_it_has(plan: AggregatePlan, family: str) -> None:
    for sql in _render(plan, family):
        assert not re.search(r"CAST\([`\"]?_snapdp_c\d+[`\"]? AS BIGINT\)", sql)
        assert not re.search(r"CAST\([`\"]?_snapdp_q\d+[`\"]? AS BIGINT\)", sql)
        # a decimal column's value is a DOUBLE: its bins and quanta read it as it is
        decimals = [n for n in plan.used_columns() if _kind(plan, n) == "decimal"]
        for i, name in enumerate(plan.used_columns()):
            if name in decimals:
                assert not re.search(rf"CAST\([`\"]?_snapdp_c{i}[`\"]? AS DOUBLE\)", sql)


def test_an_integer_imputed_past_int64_takes_its_public_bin() -> None:
    wide = Column("h", "integer", bins=H.bins, nulls=NullRule("impute", 1 << 64))
    assert not exprs.typed_after_rule(wide)
    assert exprs.typed_after_rule(Column("h", "integer", bins=H.bins, nulls=NullRule("impute", 5)))
    sql = _render(AggregatePlan(groupings=(wide,)), "int")[0]
    # the 128-bit literal is never cast back to a long: the long is compared as it is
    assert "COALESCE(" not in sql


def test_the_observed_keys_query_reads_each_text_cell_once() -> None:
    cols = [Column("k", "integer", keys=(1, 2))]
    tree = observed.observed_query(cols, None, [], exp.to_table("v"), {"k": "text"})
    sql = spark_sql(tree)
    assert sql.count("is_valid_utf8(") == 1 and sql.count("TRIM(") == 1


CELLS = [
    None, "", " ", "0", "-0", "+7", " 12 ", "1_000", "1e3", "1.0", "1.5", "-2.50",
    "9223372036854775807", "9223372036854775808", "-9223372036854775808", "1e19", "Infinity",
    "nan", "0x10", "00012", ".5", "5.", "1E+2", "true", "T", "yes", "No", "0000-01-01",
    "2024-02-29", "2023-02-29", "2024-13-01", " 2024-01-05", "é", "\t3",
]  # fmt: skip


@pytest.mark.parametrize("kind", ["integer", "decimal", "boolean", "date", "text"])
@pytest.mark.parametrize("family", ["text", "bytes"])
def test_casts_through_the_inner_projection_equal_the_one_expression(
    kind: str, family: str
) -> None:
    con = duckdb.connect()
    if family == "bytes":
        con.execute("CREATE TABLE src (i INTEGER, c BLOB)")
        cells: list[object] = [None if c is None else c.encode() for c in CELLS]
        cells.append(b"1\xff")  # not UTF-8: null
    else:
        con.execute("CREATE TABLE src (i INTEGER, c VARCHAR)")
        cells = list(CELLS)
    con.executemany("INSERT INTO src VALUES (?, ?)", list(enumerate(cells)))
    one = duckdb_sql(exprs.cast_native(exprs.column("c"), family, kind))
    inline = con.execute(f"SELECT {one} FROM src ORDER BY i").fetchall()
    select = exprs.cast_select(
        [("i", "int", "integer", "_i"), ("c", family, kind, "_v")], exp.Var(this="src"), "_l"
    )
    laned = con.execute(f"SELECT _v FROM ({duckdb_sql(select)}) ORDER BY _i").fetchall()
    assert laned == inline
    assert len({v for (v,) in inline}) >= 3  # the cells tell the casts apart
    assert ("_ls" in duckdb_sql(select)) == (kind != "text")


RANGE_COLUMNS = [
    H,
    X,
    Column("wide", "integer", bins=(F(-(1 << 70)), F(-5), F(0), F(7, 2), F(1 << 64))),
    Column("grid", "integer", bins=tuple(F(e) for e in range(0, 101, 10))),
    Column("inf", "decimal", bins=(-(F(2) ** 1024), F(-1, 2), F(3), F(2) ** 1024)),
    Column("dgrid", "decimal", bins=tuple(F(j, 4) for j in range(-12, 13))),
]


@pytest.mark.parametrize("column", RANGE_COLUMNS, ids=lambda c: c.name)
def test_the_bin_filter_keeps_exactly_the_values_in_a_bin(column: Column) -> None:
    """s1 keeps a row by ``bin_range``: true exactly where the bin index (tree or grid) is not
    null, false or null elsewhere, for values on, beside and between the edges and at the ends
    of the type (infinities and NaN for doubles)."""
    integer = column.type == "integer"
    values: list[object] = [None]
    for e in column.bins or ():
        x = int(e) if integer else builders.nearest_double(e)
        values += [x - 1, x, x + 1] if integer else [x, x * (1 - 1e-16), x * (1 + 1e-16), x + 0.25]
    if integer:
        values = [v for v in values if v is None or -(1 << 63) <= v < 1 << 63]  # type: ignore[operator]
        values += [-(1 << 63), (1 << 63) - 1, 0]
    else:
        values += [float("inf"), float("-inf"), float("nan"), 0.0, -0.0, 1e308]
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t (i INTEGER, v {'BIGINT' if integer else 'DOUBLE'})")
    con.executemany("INSERT INTO t VALUES (?, ?)", list(enumerate(values)))
    index = duckdb_sql(exprs.bin_index(column, exprs.column("v")))
    keep = duckdb_sql(exprs.bin_range(column, exprs.column("v")))
    rows = con.execute(f"SELECT {index}, {keep} FROM t ORDER BY i").fetchall()
    assert all((i is not None) == bool(k) for i, k in rows), rows
    assert any(i is None for i, _ in rows) and any(i is not None for i, _ in rows)
