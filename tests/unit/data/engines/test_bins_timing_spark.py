"""The Spark engine finds a row's bin and key with work that does not depend on the value (issue
30 item 3; docs/data.md, "Run time"): the bin index is a nested CASE of fixed depth (every
root-to-leaf path of the analysed expression makes the same number of comparisons), keys are
matched by a join on a keys table (was a CASE chain of up to 256 keys), and the bin index is
the reference engine's for every value tried (tests/unit/data/engines/_bin_cases.py)."""

from __future__ import annotations

import random
from typing import Any

import pandas as pd
import pytest
from tests.data_oracle import _cell_index
from tests.unit.data.engines._bin_cases import (
    DEC_COLUMNS,
    INT_COLUMNS,
    dec_values,
    int_values,
    path_costs,
)

from snapdp.data.engines.base import AggregatePlan
from snapdp.data.model.schema import Column

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark2")]

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


@pytest.mark.parametrize("column", INT_COLUMNS + DEC_COLUMNS, ids=lambda c: f"{c.type}-{c.name}")
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


def _indices(spark: Any, column: Column, values: list[Any], kind: str) -> list[Any]:

    rows = [(i, v) for i, v in enumerate(values)]
    frame = spark.createDataFrame(rows, f"i int, v {kind}")
    out = frame.select("i", _bin_index(column, "v").alias("b")).orderBy("i").collect()
    return [r["b"] for r in out]


def test_bins_equal_the_reference_for_every_value(spark_session: Any) -> None:
    for column in INT_COLUMNS + DEC_COLUMNS:
        rng = random.Random(column.name)
        integer = column.type == "integer"
        values: list[Any] = int_values(column, rng) if integer else dec_values(column, rng)
        got = _indices(spark_session, column, [*values, None], "bigint" if integer else "double")
        assert got == [_cell_index(column, v) for v in values] + [None], column.name


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
