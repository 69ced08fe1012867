"""Integer bins on an evenly spaced grid are found by exact arithmetic (issue 32: DuckDB spent
~290 ms planning the comparison tree of a median's 101 bins), and the arithmetic gives the very
bin the comparison tree gives (:func:`~snapdp.data.engines.relational.exprs.tree_index`) and the
reference engine (tests/data_oracle.py) for every value tried: on, next to and between the
edges, the ends of int64, for grids with extra edges below, above and past int64 and for steps
of 1 and more. The expression references the value a fixed number of times, whatever the
number of edges, and the release query of a median carries no comparison tree."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from sqlglot import exp
from tests.data_oracle import _cell_index
from tests.unit.data.engines._bin_cases import (
    INT64_MAX,
    INT64_MIN,
    RATIONAL_COLUMNS,
    SPAN_COLUMNS,
    dec_values,
    int_values,
)

from snapdp.data.engines.base import AggregatePlan, bin_edges
from snapdp.data.engines.duckdb.engine import DuckDBEngine
from snapdp.data.engines.relational import exprs
from snapdp.data.engines.relational.dialects import duckdb_sql
from snapdp.data.model.schema import Column

F = Fraction


def _col(name: str, edges: list[int | Fraction]) -> Column:
    return Column(name, "integer", bins=tuple(F(e) for e in edges))


def _random_grid(rng: random.Random, k: int) -> Column:
    w = rng.choice((1, 1, 2, 3, 7, 10, 1 << 20))
    start = rng.choice((0, 1, -5, rng.randint(-(10**6), 10**6), INT64_MIN + 1, INT64_MAX - 40 * w))
    m = rng.randint(8, 40)
    run = [start + i * w for i in range(m)]
    below = sorted(rng.sample([-(1 << 70), INT64_MIN, start - w - 3, start - 1], rng.randint(0, 2)))
    above = sorted(
        rng.sample([run[-1] + 1, run[-1] + 5 * w, INT64_MAX, 1 << 63], rng.randint(0, 2))
    )
    edges: list[int | Fraction] = sorted({*below, *run, *above})
    if rng.random() < 0.3:  # a rational first edge: its ceiling joins the integers
        edges[0] = F(2 * int(edges[0]) - 1, 2)
    return _col(f"grid{k}", edges)


def _random_rational_grid(rng: random.Random, k: int) -> Column:
    """A run x₀ + k·W with a rational step W (uneven ceilings, repeated ones when W < 1), and
    edges beside it."""
    w = F(rng.choice((1, 3, 7, 10**6 + 1, 1 << 40)), rng.choice((1, 3, 16, 1024, 999)))
    w += F(rng.choice((0, 1)), rng.choice((2, 7)))
    start = rng.choice(
        (F(0), F(-5, 3), F(rng.randint(-(10**9), 10**9), 7), F(INT64_MIN + 1), INT64_MAX - 60 * w)
    )
    m = rng.randint(8, 50)
    run = [start + i * w for i in range(m)]
    outer = [F(-(1 << 70)), F(INT64_MIN), run[0] - 2, run[-1] + F(1, 2), F(INT64_MAX), F(1 << 63)]
    extra = [e for e in rng.sample(outer, rng.randint(0, 3)) if e not in run]
    return _col(f"rational{k}", sorted({*run, *extra}))


GRIDS = [
    _col("quantile", [-(1 << 63), *range(1, 101), 1 << 63]),  # the median of age in [0, 100]
    _col("tens", list(range(0, 101, 10))),
    _col("tens_past", [-(1 << 70), *range(-50, 60, 10), INT64_MAX, 1 << 64]),
    _col("at_top", [INT64_MAX - 9 + i for i in range(10)]),
    _col("at_bottom", [INT64_MIN + 1 + i for i in range(10)]),
    _col("wide_step", [i * (1 << 58) for i in range(-7, 8)]),
    *SPAN_COLUMNS,
    *RATIONAL_COLUMNS,
    *(_random_grid(random.Random(k), k) for k in range(40)),
    *(_random_rational_grid(random.Random(500 + k), k) for k in range(40)),
]


def _dec(name: str, edges: list[int | Fraction]) -> Column:
    return Column(name, "decimal", bins=tuple(F(e) for e in edges))


def _random_dec_grid(rng: random.Random, k: int) -> Column:
    w = F(rng.choice((1, 3, 5, 15625, 1 << 20)), 1 << rng.choice((0, 1, 5, 10, 30)))
    start = rng.choice((F(0), F(1), F(-7, 4), F(rng.randint(-(10**6), 10**6), 8), -w * 3000))
    m = rng.randint(8, 60)
    run = [start + i * w for i in range(m)]
    outer = [-(F(2) ** 1024), run[0] - F(1, 3), run[-1] + F(1, 3), F(10) ** 300, F(2) ** 1024]
    extra = rng.sample(outer, rng.randint(0, 3))
    return _dec(f"dgrid{k}", sorted({*run, *extra}))


DEC_GRIDS = [
    _dec(
        "income_median",
        [-(F(2) ** 1024), *(F(500000 * j, 1024) for j in range(1, 1024)), F(2) ** 1024],
    ),
    _dec("halves", [F(j, 2) for j in range(-20, 21)]),
    _dec("tiny_step", [F(j, 1 << 40) for j in range(-10, 30)]),
    _dec("near_2_52", [F((1 << 52) - 40 + j) for j in range(30)]),
    *(_random_dec_grid(random.Random(1000 + k), k) for k in range(30)),
]


def _indices(sql: str, values: list[int | None] | list[float | None]) -> list[object]:
    kind = pa.float64() if values and any(isinstance(v, float) for v in values) else pa.int64()
    table = pa.table({"v": pa.array(values, kind), "i": pa.array(range(len(values)))})
    with duckdb.connect() as con:
        con.register("t", table)
        return [r[0] for r in con.execute(f"SELECT {sql} FROM t ORDER BY i").fetchall()]


def _uses_grid(column: Column) -> bool:
    node = exprs.bin_index(column, exprs.column("v"))
    return not any(isinstance(c.this, exp.Case) for c in node.find_all(exp.Paren))


_CASES = [(c, int_values) for c in GRIDS] + [(c, dec_values) for c in DEC_GRIDS]


@pytest.mark.parametrize(("column", "draw"), _CASES, ids=lambda c: getattr(c, "name", ""))
def test_grid_bins_equal_the_tree_and_the_reference(
    column: Column, draw: Callable[[Column, random.Random], list[Any]]
) -> None:
    """Integer and decimal grids alike: the arithmetic, the comparison tree and the reference
    give every value the same bin."""
    assert _uses_grid(column)
    rng = random.Random(column.name)
    values = [*draw(column, rng), None]
    fast = _indices(duckdb_sql(exprs.bin_index(column, exprs.column("v"))), values)
    tree = _indices(duckdb_sql(exprs.tree_index(column, exprs.column("v"))), values)
    assert fast == tree
    assert fast == [_cell_index(column, v) for v in values]


def test_non_dyadic_decimal_edges_keep_the_tree() -> None:
    assert not _uses_grid(_dec("thirds", [F(j, 3) for j in range(0, 30)]))
    assert not _uses_grid(_dec("wide", [F(j * (1 << 60)) for j in range(0, 30)]))  # not exact


def test_a_grid_whose_arithmetic_would_pass_int64_keeps_the_tree() -> None:
    """m·w = 2^63: ⌊(clamp(v) − e₀ + w)/w⌋ would overflow a long at the top of the run."""
    assert not _uses_grid(_col("past_span", [k << 57 for k in range(-32, 32)]))
    assert _uses_grid(_col("within_span", [k << 57 for k in range(-32, 31)]))  # m·w = 2^63 − 2^57
    step = F(INT64_MAX // 20 + 1, 3)  # a rational step whose (m + 1)·P = 21·P passes 2^63 − 1
    assert not _uses_grid(_col("past_rational", [F(-(1 << 62)) + k * step for k in range(20)]))


def test_a_rational_grid_at_the_edge_of_its_arithmetic() -> None:
    """The rational path's bound, (m + 1)·P + 3·Q < 2^63, pinned on both sides: a grid whose
    largest numerator is exactly 2^63 − 1 takes the arithmetic, and every value, at both ends of
    int64 and on every edge, gets the reference's bin without leaving a long (DuckDB raises on
    an overflow); one exactly at 2^63 keeps the tree."""
    low = F(INT64_MIN + 1)
    step = F(576460752303423487, 5)  # Q = 5, m = 15: 16·P + 15 = 2^63 − 1
    at_bound = _col("rational_at_bound", [low + k * step for k in range(15)])
    assert 16 * step.numerator + 3 * 5 == INT64_MAX
    assert _uses_grid(at_bound)
    values = [*int_values(at_bound, random.Random(1)), None]
    fast = _indices(duckdb_sql(exprs.bin_index(at_bound, exprs.column("v"))), values)
    assert fast == [_cell_index(at_bound, v) for v in values]
    step = F(542551296285575047, 3)  # Q = 3, m = 16: 17·P + 9 = 2^63
    past = _col("rational_past_bound", [low + k * step for k in range(16)])
    assert 17 * step.numerator + 3 * 3 == 1 << 63
    assert not _uses_grid(past)


def test_rational_grids_are_uneven_integer_edges() -> None:
    """The rational cases are no integer grid: their ceilings are unevenly spaced."""
    for column in RATIONAL_COLUMNS:
        inside = [e for e in bin_edges(column) if INT64_MIN < e <= INT64_MAX]
        assert len({b - a for a, b in itertools.pairwise(inside)}) > 1, column.name
        assert _uses_grid(column)


def test_the_grid_expression_does_not_grow_with_the_edges() -> None:
    small = duckdb_sql(exprs.bin_index(_col("a", list(range(0, 20))), exprs.column("v")))
    large = duckdb_sql(exprs.bin_index(_col("b", list(range(0, 5000))), exprs.column("v")))
    assert len(large) - len(small) < 20  # only the constants' digits differ
    assert small.count('"v"') == large.count('"v"') <= 4


def test_the_median_query_has_no_comparison_tree() -> None:
    column = GRIDS[0]
    engine = DuckDBEngine(pa.table({"quantile": pa.array([1, 2, 200], pa.int64())}))
    plan = AggregatePlan(groupings=(column,))
    sql, _ = engine.sql(plan)
    assert duckdb_sql(exprs.bin_index(column, exprs.column("_snapdp_c0"))) in sql
    assert len(sql) < 4000
    assert engine.aggregate(plan).rows[:4] == [0, 1, 1, 0]


def test_irregular_or_small_edges_keep_the_tree() -> None:
    for edges in (
        [0, 1, 2, 3],
        [0, 1, 2, 4, 8, 16, 32, 64, 128],
        [0, 5, *range(10, 18), 30, 40, 50, 60],
    ):
        assert not _uses_grid(_col("x", list(edges)))


def test_every_value_takes_the_same_branches() -> None:
    """Past the null guard, the grid expression's only CASE is the range check, whose condition
    every value evaluates alike (the other edges' comparisons included); no comparison tree."""
    for column in GRIDS + DEC_GRIDS:
        node = exprs.bin_index(column, exprs.column("v"))
        assert isinstance(node, exp.Case)
        [guard] = node.args["ifs"]
        inner = guard.args["true"]
        assert isinstance(inner, exp.Case) and inner.args.get("default") is None
        [check] = inner.args["ifs"]
        assert isinstance(check.this, exp.Between)
        assert not list(check.args["true"].find_all(exp.LT, exp.LTE))


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_spark_finds_the_same_bins(spark_session: Any) -> None:
    """The same arithmetic rendered for Spark (FLOOR to a long, DIV) gives the reference's bins.
    One Spark job per column type: each column's values (and a null) are rows tagged with the
    column, every column's expression is computed on every row, and each column's bins are
    checked on its own rows."""
    from pyspark.sql import functions as sf

    from snapdp.data.engines.relational.dialects import spark_sql

    for columns, draw, kind in (
        (GRIDS[:8], int_values, "bigint"),
        (DEC_GRIDS[:8], dec_values, "double"),
    ):
        drawn: list[list[Any]] = [[*draw(c, random.Random(c.name)), None] for c in columns]
        rows = [(j, v) for j, values in enumerate(drawn) for v in values]
        frame = spark_session.createDataFrame(
            [(i, j, v) for i, (j, v) in enumerate(rows)], f"i int, c int, v {kind}"
        )
        bins = [
            sf.expr(spark_sql(exprs.bin_index(c, exprs.column("v")))).alias(f"b{j}")
            for j, c in enumerate(columns)
        ]
        got = frame.select("i", "c", *bins).orderBy("i").collect()
        assert [(r["c"], r["i"]) for r in got] == [(j, i) for i, (j, _) in enumerate(rows)]
        for j, (column, values) in enumerate(zip(columns, drawn, strict=True)):
            mine = [r[f"b{j}"] for r in got if r["c"] == j]
            assert mine == [_cell_index(column, v) for v in values], column.name


@pytest.mark.parametrize("upper", [INT64_MAX, 10**6, 365])
def test_integer_quantile_queries_carry_no_comparison_tree(upper: int) -> None:
    """The leaves of an integer quantile (the long differential's `--quantiles`: [0, 2^63 − 1]
    in 1,024, 3 keys, CSV text cells) are found by arithmetic in both dialects: the query stays
    a few KB (the tree made it ~150,000 characters, which Spark took minutes to parse)."""
    from snapdp.data.engines.relational.dialects import spark_sql
    from snapdp.data.engines.relational.plan import aggregate_query
    from snapdp.data.model.schema import ContributionBounds
    from snapdp.data.statistics.kinds.quantiles import _type_edges
    from snapdp.data.statistics.math import quantile_tree

    h = Column("h", "integer", lower=F(0), upper=F(upper))
    spec = quantile_tree.tree_spec(F(0), F(upper), max(F(upper, 1024), F(1)))
    leaf = Column("h", "integer", bins=_type_edges(h, quantile_tree.leaf_edges(spec)))
    plan = AggregatePlan(
        groupings=(Column("g", "text", keys=("a", "b", "c")), leaf),
        unit=Column("u", "integer"),
        bounds=ContributionBounds(max_groups_per_unit=1, max_rows_per_group=2),
    )
    families = {"g": "text", "u": "text", "h": "text"}
    duck = duckdb_sql(aggregate_query(plan, exp.Var(this="src"), families, wide=True).tree)
    spark = spark_sql(aggregate_query(plan, exp.to_table("v"), families, wide=False).tree)
    assert spec.leaves >= 512
    for sql in (duck, spark):
        assert len(sql) < 8000
        assert sql.count(" < ") < 10
