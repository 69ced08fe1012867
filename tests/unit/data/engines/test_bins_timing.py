"""A row's bin is found with the same number of comparisons wherever its value lies (issue 30
item 3; docs/data.md, "Run time").

DuckDB used to find a bin with a linear CASE chain over the edges, so a value at the top of the
range made n comparisons and one at the bottom one: one privacy unit of 5,000 rows at the top of
the range nearly doubled the run time of a quantile release. The bin index is now a nested CASE
of fixed depth (:func:`~snapdp.data.engines.base.bin_tree`). These tests read the generated SQL
(no wall time): every root-to-leaf path of the expression makes the same number of comparisons;
and the index is the one of the reference engine (tests/data_oracle.py) for every value tried:
on, next to and between the edges, ±0 and the ends of the type. The Spark engine's copy is
tested in test_bins_timing_spark.py; the timing itself is measured by benchmarks/timing_bins.py.
"""

from __future__ import annotations

import random
from fractions import Fraction
from typing import TYPE_CHECKING

import duckdb
import pyarrow as pa
import pytest
import sqlglot
from sqlglot import exp
from tests.data_oracle import _cell_index
from tests.unit.data.engines._bin_cases import (
    DEC_COLUMNS,
    INT_COLUMNS,
    dec_values,
    int_values,
    path_costs,
)

from snapdp.data.engines import base
from snapdp.data.engines.base import AggregatePlan
from snapdp.data.engines.duckdb.engine import DuckDBEngine
from snapdp.data.engines.relational import exprs
from snapdp.data.engines.relational.dialects import duckdb_sql
from snapdp.data.model.schema import Column


def _bin_expr(column: Column, value: str) -> str:
    return duckdb_sql(exprs.bin_index(column, exprs.column(value)))


if TYPE_CHECKING:
    from snapdp.data.engines.base import BinTree

_COMPARISONS = (exp.LT, exp.LTE, exp.GT, exp.GTE, exp.EQ, exp.NEQ)


def _case(
    node: exp.Expression,
) -> tuple[list[tuple[exp.Expression, exp.Expression]], exp.Expression | None] | None:
    while isinstance(node, exp.Paren):
        node = node.this
    if not isinstance(node, exp.Case):
        return None
    assert node.this is None  # searched CASE only
    branches = [(i.this, i.args["true"]) for i in node.args["ifs"]]
    return branches, node.args.get("default")


def _count(condition: exp.Expression) -> int:
    return sum(1 for _ in condition.find_all(*_COMPARISONS))


def _costs_of_non_null(sql: str) -> list[int]:
    """Comparisons per path of the bin expression for a non-null value (the null guard
    ``CASE WHEN v IS NOT NULL THEN … END``, if any, is stepped over)."""
    tree = sqlglot.parse_one(sql, read="duckdb")
    parts = _case(tree)
    assert parts is not None
    (condition, result), *rest = parts[0]
    if not rest and isinstance(condition, exp.Not) and isinstance(condition.this, exp.Is):
        tree = result
    return path_costs(tree, _case, _count)


@pytest.mark.parametrize("column", INT_COLUMNS + DEC_COLUMNS, ids=lambda c: f"{c.type}-{c.name}")
def test_every_value_makes_the_same_number_of_comparisons(column: Column) -> None:
    # the tree, as every column whose edges are no even integer grid has it (a grid's arithmetic:
    # test_bins_grid.py)
    costs = _costs_of_non_null(duckdb_sql(exprs.tree_index(column, exprs.column("v"))))
    assert len(costs) > len(column.bins or ())  # a leaf per bin and more
    assert set(costs) == {len(column.bins or ()).bit_length()}


def test_the_release_query_uses_the_fixed_depth_expression() -> None:
    column = INT_COLUMNS[0]
    engine = DuckDBEngine(pa.table({"tree": pa.array([1, 2], pa.int64())}))
    sql, _ = engine.sql(AggregatePlan(groupings=(column,)))
    assert _bin_expr(column, "_snapdp_c0") in sql


def _leaf_depths(node: BinTree, depth: int = 0) -> list[int]:
    if node is None or isinstance(node, int):
        return [depth]
    _, left, right = node
    return _leaf_depths(left, depth + 1) + _leaf_depths(right, depth + 1)


def _walk(node: BinTree, edges: list[Fraction], v: Fraction) -> int | None:
    while isinstance(node, tuple):
        j, left, right = node
        node = left if v < edges[j] else right
    return node


@pytest.mark.parametrize("n", [*range(2, 40), 63, 64, 65, 1025])
def test_the_search_tree_has_one_depth_and_finds_the_contract_bin(n: int) -> None:
    tree = base.bin_tree(n)
    assert set(_leaf_depths(tree)) == {n.bit_length()}
    rng = random.Random(n)
    # non-decreasing edges, repeats included (equal nearest doubles or ceilings: empty bins)
    edges = sorted(Fraction(rng.randint(-20, 20), rng.choice((1, 2))) for _ in range(n))
    for twice in range(-45, 46):
        v = Fraction(twice, 2)
        first = next((i for i in range(n - 1) if edges[i] <= v < edges[i + 1]), None)
        assert _walk(tree, edges, v) == first


def _duckdb_indices(column: Column, values: list[object], arrow_type: pa.DataType) -> list[object]:
    table = pa.table({"v": pa.array(values, arrow_type), "i": pa.array(range(len(values)))})
    with duckdb.connect() as con:
        con.register("t", table)
        rows = con.execute(f"SELECT {_bin_expr(column, 'v')} FROM t ORDER BY i").fetchall()
    return [r[0] for r in rows]


@pytest.mark.parametrize("column", INT_COLUMNS, ids=lambda c: c.name)
def test_integer_bins_equal_the_reference_for_every_value(column: Column) -> None:
    values = int_values(column, random.Random(column.name))
    got = _duckdb_indices(column, [*values, None], pa.int64())
    assert got == [_cell_index(column, v) for v in values] + [None]


@pytest.mark.parametrize("column", DEC_COLUMNS, ids=lambda c: c.name)
def test_decimal_bins_equal_the_reference_for_every_value(column: Column) -> None:
    values = dec_values(column, random.Random(column.name))
    got = _duckdb_indices(column, [*values, None], pa.float64())
    assert got == [_cell_index(column, v) for v in values] + [None]
