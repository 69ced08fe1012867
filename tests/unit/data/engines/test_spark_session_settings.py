"""The Spark test session's settings (tests/unit/data/engines/conftest.py): the cheaper planning
every Spark test file but the defaults' runs with, and Spark's own defaults inside
``default_planning``, where test_differential_spark.py and the hive-partitioned folder of
test_spark_engine.py check the path users run. No Spark job runs here."""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.data.engines.conftest import (
    SPARK_CHEAP_PLANNING,
    SPARK_DEFAULT_PLANNING,
    default_planning,
)

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


def test_the_session_plans_cheaply_and_default_planning_restores_sparks_defaults(
    spark_session: Any,
) -> None:
    conf = spark_session.conf
    assert conf.get("spark.sql.codegen.factoryMode") == "NO_CODEGEN"  # interpreted expressions
    assert {k: conf.get(k) for k in SPARK_CHEAP_PLANNING} == SPARK_CHEAP_PLANNING
    with default_planning(spark_session):
        assert {k: conf.get(k) for k in SPARK_CHEAP_PLANNING} == SPARK_DEFAULT_PLANNING
        assert SPARK_DEFAULT_PLANNING["spark.sql.codegen.factoryMode"] == "FALLBACK"
    assert {k: conf.get(k) for k in SPARK_CHEAP_PLANNING} == SPARK_CHEAP_PLANNING
