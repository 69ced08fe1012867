"""The Spark session the engine starts itself has the console progress bar off: the bar's
appearance and task counts follow the data (docs/data.md, "Running on a cluster"). No JVM: the
session classes are stand-ins that record what the engine asks of them."""

from __future__ import annotations

from typing import Any

import pytest

# as the Spark tests' session: skipped, saying why, without the spark extra (the README's
# second set-up command installs only the test extra)
pyspark_sql = pytest.importorskip(
    "pyspark.sql", reason="pyspark is not installed (the spark extra)"
)
SparkSession = pyspark_sql.SparkSession

from snapdp.data.engines.spark import engine as spark_engine  # noqa: E402


class _Builder:
    def __init__(self) -> None:
        self.settings: dict[str, str] = {}

    def config(self, key: str, value: str) -> _Builder:
        self.settings[key] = value
        return self

    def getOrCreate(self) -> str:
        return "started session"


class _Session:
    builder = _Builder()


def test_a_session_snapdp_starts_has_no_console_progress_bar() -> None:
    assert spark_engine._new_session(_Session) == "started session"
    assert _Session.builder.settings == {"spark.ui.showConsoleProgress": "false"}


def test_the_engine_starts_its_session_that_way(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[Any] = []
    read: list[Any] = []

    def new_session(cls: Any) -> str:
        started.append(cls)
        return "started session"

    def read_path(session: Any, *args: Any) -> tuple[object, str]:
        read.append(session)
        return object(), "label"

    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))
    monkeypatch.setattr(spark_engine, "_new_session", new_session)
    monkeypatch.setattr(spark_engine, "read_path", read_path)
    spark_engine.SparkEngine("people.csv")
    assert started == [SparkSession] and read == ["started session"]
    # a session given (or active) is used as it is
    spark_engine.SparkEngine("people.csv", spark="given session")
    assert started == [SparkSession] and read == ["started session", "given session"]
