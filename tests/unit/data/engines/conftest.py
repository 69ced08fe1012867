"""One local[2] SparkSession for every Spark test of the session (Spark start-up is slow)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark_session() -> Iterator[Any]:
    """A ``local[2]`` session; the test is skipped, saying why, without pyspark or Java."""
    pytest.importorskip("pyspark", reason="pyspark is not installed (the spark extra)")
    if shutil.which("java") is None:
        pytest.skip("no Java runtime on PATH: the Spark tests need Java 17")
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("snapdp-engine-tests")
        .config("spark.ui.enabled", "false")
        # the whole suite shares this session: Spark's 1g default ran out of heap after a few
        # hundred queries (each test's plans and broadcast key tables stay until collected)
        .config("spark.driver.memory", "3g")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.default.parallelism", "2")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
