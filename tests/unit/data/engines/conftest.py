"""One local SparkSession for every Spark test of a test process (Spark start-up is slow), set up
for many small queries on tiny tables. Every test that uses it is in the xdist group "spark", so
that ``pytest -n 2 --dist loadgroup`` starts one JVM for all of them, on one worker, while the
other worker runs the rest (docs/performance.md, "Spark tests, fifth 2026-11-27 session": a
second JVM cost its start and warm-up again, ~10 s of CPU, for two groups of ~150 s each). The
standalone cluster (test_spark_cluster.py) runs its own JVMs and joins no group."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from tests.unit.data.engines._cluster_cases import TEST_JVM_OPTIONS, jvm_archive_options

# The test session's settings, each for a measured reason (docs/performance.md, "The test suite"):
SPARK_TEST_CONFIG = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "1",
    "spark.default.parallelism": "2",
    # Spark's SQL parser (ANTLR) keeps a DFA cache of every statement it has parsed, unbounded:
    # over the Spark tests it held ~450 MiB of the heap (ATNConfig, DFAState; `jmap -histo:live`)
    # and was why the session needed a 3g heap. Spark's own flush keeps it below ~20,000 states.
    # (Unbounded with a 2g heap, the quantile queries parse ~5x cheaper once learnt, but the
    # Spark tests as a whole took ~18 s more CPU: docs/performance.md, "Spark tests, sixth
    # 2026-11-27 session".)
    "spark.sql.parser.manageParserCaches": "true",
    "spark.sql.parser.parserDfaCacheFlushThreshold": "20000",
    "spark.driver.memory": "1g",
}
# Cheaper planning for 17-row tables (docs/performance.md, "The test suite, fourth 2026-11-27
# session"): test_spark_engine.py 114.6 -> 88.6 s of CPU with its JVM. Each is a runtime SQL
# setting that changes how Spark plans and runs a query, not what it returns: no constraint
# propagation (the optimizer's inferred filters over our large CASE expressions), no adaptive
# re-planning (one stage, one shuffle partition), no whole-stage code generation (no Janino
# compile per plan) and interpreted expressions (no Janino compile of each operator's
# expressions either: ~12% less JVM CPU per aggregate, docs/performance.md, "Spark tests,
# sixth 2026-11-27 session"). The Spark defaults (code generation included) stay checked by
# test_differential_spark.py, by the casts of test_spark_edges.py (a mixed pandas column and an
# invalid UTF-8 Parquet cell against the reference), by the hive-partitioned folder of
# test_spark_engine.py (``default_planning``: its default plan prunes partitions dynamically);
# the standalone cluster (test_spark_cluster.py, a session of its own) keeps adaptive execution.
SPARK_CHEAP_PLANNING = {
    "spark.sql.constraintPropagation.enabled": "false",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}
# Spark's own defaults for the settings above, which ``default_planning`` checks it restores.
SPARK_DEFAULT_PLANNING = {
    "spark.sql.constraintPropagation.enabled": "true",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.codegen.wholeStage": "true",
    "spark.sql.codegen.factoryMode": "FALLBACK",
}
SPARK_TEST_CONFIG.update(SPARK_CHEAP_PLANNING)


@contextmanager
def default_planning(session: Any) -> Iterator[None]:
    """Spark's default planning and code generation in ``session`` for the ``with`` block."""
    for key in SPARK_CHEAP_PLANNING:
        session.conf.unset(key)
        assert session.conf.get(key) == SPARK_DEFAULT_PLANNING[key], key
    try:
        yield
    finally:
        for key, value in SPARK_CHEAP_PLANNING.items():
            session.conf.set(key, value)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups, however this file was loaded
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test using ``spark_session`` runs in an xdist group: its module's, else "spark"
    (one JVM per group and run)."""
    for item in items:
        if "spark_session" in getattr(item, "fixturenames", ()) and not any(
            item.iter_markers("xdist_group")
        ):
            item.add_marker(pytest.mark.xdist_group("spark"))


@pytest.fixture(scope="session")
def spark_session() -> Iterator[Any]:
    """A ``local[2]`` session; the test is skipped, saying why, without pyspark or Java."""
    pytest.importorskip("pyspark", reason="pyspark is not installed (the spark extra)")
    if shutil.which("java") is None:
        pytest.skip("no Java runtime on PATH: the Spark tests need Java 17")
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[2]").appName("snapdp-engine-tests")
    for key, value in SPARK_TEST_CONFIG.items():
        builder = builder.config(key, value)
    # C1 only and the serial collector (see TEST_JVM_OPTIONS): half of the JVM's CPU went to the
    # C2 compiler threads (per-thread CPU from /proc), for code that runs a few hundred times.
    # Spark's classes mapped from a class-data-sharing archive, not loaded from the jars (AppCDS;
    # the first run writes it): the JVM's start 9.7 -> 4.5 s of CPU.
    archive = jvm_archive_options(dump=True)
    builder = builder.config("spark.driver.extraJavaOptions", f"{TEST_JVM_OPTIONS} {archive}")
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
