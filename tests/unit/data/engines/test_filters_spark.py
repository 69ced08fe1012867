"""Row filters on the Spark engine: predicates covering every node and column type, and a few
random ones, give the reference engine's exact aggregates (many more random ones run on DuckDB
in test_filters.py). One engine per table for the module (reading a CSV's header is a Spark job;
an engine keeps nothing between aggregates)."""

from __future__ import annotations

import datetime as dt
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.data_oracle import OracleEngine
from tests.unit.data.test_filters import PREDICATES, _csv, _plan, _rows

from snapdp.data.model.predicate import And, Compare, InList, IsNull, Not, Or, Predicate, between

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

CASES: list[Predicate] = [
    Compare("a", ">=", 3),
    Or((Compare("x", "=", Fraction(1, 10)), IsNull("x"))),
    And((Not(InList("s", ("p", "z"))), Compare("b", "=", True))),
    Not(between("d", dt.date(2024, 1, 1), dt.date(2024, 1, 31))),
    Or((Not(Compare("a", "<>", 1)), And((Compare("x", "<", 0), Not(IsNull("d")))))),
    InList("x", (Fraction(-1, 10), Fraction(3, 2), 2)),
]


def _engines(spark: Any, tmp: pytest.TempPathFactory, picks: list[int]) -> tuple[Any, Any]:
    """A Spark engine and the reference engine over the same CSV table of ``picks``."""
    from snapdp.data.engines.spark.engine import SparkEngine

    path = _csv(tmp.mktemp("filters"), _rows(picks))
    return SparkEngine(path, spark=spark), OracleEngine(path)


@pytest.fixture(scope="module")
def fixed_table(spark_session: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    return _engines(
        spark_session, tmp_path_factory, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 3, 1, 4, 1, 5, 9, 2, 6]
    )


@pytest.fixture(scope="module")
def random_table(spark_session: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    return _engines(spark_session, tmp_path_factory, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 2, 7])


@pytest.mark.parametrize("bounded", [False, True])
def test_spark_filters_equal_the_reference_engine(
    fixed_table: tuple[Any, Any], bounded: bool
) -> None:
    engine, oracle = fixed_table
    for where in CASES:
        plan = _plan(where, bounded)
        assert engine.aggregate(plan) == oracle.aggregate(plan), where


@settings(max_examples=8, deadline=None)
@given(where=PREDICATES, bounded=st.booleans())
def test_random_filters_spark_equals_the_reference_engine(
    random_table: tuple[Any, Any], where: Predicate, bounded: bool
) -> None:
    engine, oracle = random_table
    plan = _plan(where, bounded)
    assert engine.aggregate(plan) == oracle.aggregate(plan)
