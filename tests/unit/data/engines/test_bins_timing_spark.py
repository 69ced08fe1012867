"""The Spark engine finds a row's bin and key with work that does not depend on the value (issue
30 item 3; docs/data.md, "Run time"): the bin index is a nested CASE of fixed depth (every
root-to-leaf path of the analysed expression makes the same number of comparisons), keys are
matched by a join on a keys table (was a CASE chain of up to 256 keys), and the bin index is
the reference engine's for every value tried (tests/unit/data/engines/_bin_cases.py).

Spark's SQL parser spends ~19 s of CPU on the 1,003-edge tree and ~8 s on the 303-edge grid
of _bin_cases.py: here they are replaced by trees of the same shape with 103 and 43 edges
(``SPARK_COLUMNS``). Spark's part is to keep the rendered tree's shape and evaluate it like the
reference; the tree builder's one depth at 1,003 and 303 edges is checked on the rendered
expression in test_bins_timing.py (same columns), and their values on DuckDB there."""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Any

import pandas as pd
import pytest
from tests.data_oracle import _cell_index
from tests.unit.data.engines._bin_cases import (
    DEC_COLUMNS,
    INT_COLUMNS,
    RATIONAL_COLUMNS,
    SPAN_COLUMNS,
    dec_values,
    int_values,
    path_costs,
)

from snapdp.data.engines.base import AggregatePlan
from snapdp.data.model.schema import Column

F = Fraction
# The shared columns, the two big trees made smaller (same open ends, same steps, uneven splits
# at several levels: 103 and 43 edges, depth 7 and 6).
SPARK_COLUMNS = [
    Column("tree", "integer", bins=(F(-(1 << 63)), *(F(i) for i in range(0, 101)), F(1 << 63))),
    *INT_COLUMNS[1:],
    Column("grid", "decimal", bins=(F(-(1 << 1024)), *(F(i, 3) for i in range(41)), F(1 << 1024))),
    *DEC_COLUMNS[1:],
]
assert [c.name for c in SPARK_COLUMNS] == [c.name for c in INT_COLUMNS + DEC_COLUMNS]

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

_COMPARISONS = {
    "LessThan",
    "LessThanOrEqual",
    "GreaterThan",
    "GreaterThanOrEqual",
    "EqualTo",
    "EqualNullSafe",
}


def _children(node: Any) -> list[Any]:
    seq = node.children()
    return [seq.apply(i) for i in range(seq.length())]


def _case(node: Any) -> tuple[list[tuple[Any, Any]], Any | None] | None:
    while node.nodeName() == "Alias":
        node = _children(node)[0]
    if node.nodeName() != "CaseWhen":
        return None
    kids = _children(node)  # cond, value, cond, value, …, [else]
    pairs = [(kids[i], kids[i + 1]) for i in range(0, len(kids) - 1, 2)]
    return pairs, kids[-1] if len(kids) % 2 else None


def _count(condition: Any) -> int:
    own = 1 if condition.nodeName() in _COMPARISONS else 0
    return own + sum(_count(c) for c in _children(condition))


def _analysed(spark: Any, column: Column) -> Any:
    """The analysed bin expression of ``column`` over a one-column frame of its type."""

    kind = "bigint" if column.type == "integer" else "double"
    frame = spark.createDataFrame([], f"v {kind}")
    df = frame.select(_bin_index(column, "v", tree=True).alias("i"))
    return df._jdf.queryExecution().analyzed().expressions().apply(0)


@pytest.mark.parametrize("column", SPARK_COLUMNS, ids=lambda c: f"{c.type}-{c.name}")
def test_every_value_makes_the_same_number_of_comparisons(
    spark_session: Any, column: Column
) -> None:
    expression = _analysed(spark_session, column)
    parts = _case(expression)
    assert parts is not None
    [(guard, tree)], default = parts  # CASE WHEN isNotNull(v) THEN … END
    assert guard.nodeName() == "IsNotNull" and default is None
    costs = path_costs(tree, _case, _count)
    assert len(costs) > len(column.bins or ())
    assert set(costs) == {len(column.bins or ()).bit_length()}


def _indices(spark: Any, columns: list[Column], values: list[list[Any]]) -> list[list[Any]]:
    """Per column, the bin index Spark gives each of its values: one job for all columns (a
    union of one projection per column, each over a frame of its own values)."""
    from pyspark.sql import functions as sf

    frames = []
    for c, (column, vals) in enumerate(zip(columns, values, strict=True)):
        kind = "bigint" if column.type == "integer" else "double"
        frame = spark.createDataFrame(list(enumerate(vals)), f"i int, v {kind}")
        frames.append(frame.select(sf.lit(c).alias("c"), "i", _bin_index(column, "v").alias("b")))
    union = frames[0]
    for frame in frames[1:]:
        union = union.unionAll(frame)
    out: list[list[Any]] = [[] for _ in columns]
    for row in union.orderBy("c", "i").collect():
        out[row["c"]].append(row["b"])
    return out


# The values test keeps the 1,003-edge integer column: an even grid, found by arithmetic (cheap);
# the grids reaching the end of int64 and the rational ones check that no step of the arithmetic
# overflows (Spark's ANSI mode would raise).
VALUE_COLUMNS = INT_COLUMNS + SPARK_COLUMNS[len(INT_COLUMNS) :] + SPAN_COLUMNS + RATIONAL_COLUMNS


def test_bins_equal_the_reference_for_every_value(spark_session: Any) -> None:
    values: list[list[Any]] = []
    for column in VALUE_COLUMNS:
        rng = random.Random(column.name)
        integer = column.type == "integer"
        values.append([*(int_values(column, rng) if integer else dec_values(column, rng)), None])
    got = _indices(spark_session, VALUE_COLUMNS, values)
    for column, vals, found in zip(VALUE_COLUMNS, values, got, strict=True):
        assert found == [_cell_index(column, v) for v in vals[:-1]] + [None], column.name


def test_keys_are_matched_by_a_join_not_a_chain(spark_session: Any) -> None:
    from snapdp.data.engines.spark.engine import SparkEngine

    column = Column("k", "integer", keys=tuple(range(5)))
    frame = pd.DataFrame({"k": pd.Series([0, 4, 4, 7], dtype="int64")})
    engine = SparkEngine(frame, spark=spark_session)
    df, _ = engine._aggregate_df(AggregatePlan(groupings=(column,)))
    plan = df._jdf.queryExecution().optimizedPlan().toString()
    assert "Join" in plan
    assert "CASE WHEN" not in plan
    assert engine.aggregate(AggregatePlan(groupings=(column,))).rows == [1, 0, 0, 0, 2]


def _bin_index(column: Column, name: str, tree: bool = False) -> Any:
    """The shared bin expression of ``column`` over the column ``name``, as Spark renders it
    (``tree``: the comparison tree, which a column on an even integer grid does not use)."""
    from pyspark.sql import functions as sf

    from snapdp.data.engines.relational import exprs
    from snapdp.data.engines.relational.dialects import spark_sql

    index = exprs.tree_index if tree else exprs.bin_index
    return sf.expr(spark_sql(index(column, exprs.column(name))))
