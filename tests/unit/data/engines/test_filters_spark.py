"""Row filters on the Spark engine: predicates covering every node and column type, and a few
random ones, give the reference engine's exact aggregates (many more random ones run on DuckDB
in test_filters.py)."""

from __future__ import annotations

import datetime as dt
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
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


@pytest.mark.parametrize("bounded", [False, True])
def test_spark_filters_equal_the_reference_engine(
    spark_session: Any, tmp_path: Path, bounded: bool
) -> None:
    from snapdp.data.engines.spark.engine import SparkEngine

    rows = _rows([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 3, 1, 4, 1, 5, 9, 2, 6])
    path = _csv(tmp_path, rows)
    engine = SparkEngine(path, spark=spark_session)
    for where in CASES:
        plan = _plan(where, bounded)
        assert engine.aggregate(plan) == OracleEngine(path).aggregate(plan), where


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(where=PREDICATES, bounded=st.booleans())
def test_random_filters_spark_equals_the_reference_engine(
    spark_session: Any, tmp_path: Path, where: Predicate, bounded: bool
) -> None:
    from snapdp.data.engines.spark.engine import SparkEngine

    rows = _rows([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 2, 7])
    path = _csv(tmp_path, rows)
    plan = _plan(where, bounded)
    assert SparkEngine(path, spark=spark_session).aggregate(plan) == OracleEngine(path).aggregate(
        plan
    )
