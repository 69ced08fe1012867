"""A real Spark standalone cluster on 127.0.0.1 (issue 16 item 3): one master and one worker
started from the installed pyspark, a driver in its own process submitting releases with the
noise drawn on the executors; the exact aggregates equal the reference engine's bit for bit; an
executor JVM killed mid-job is survived (each cell released once), a job that keeps failing ends
in a clean error with no partial result. Every process is started in its own process group and
stopped by PID in a finalizer, so no JVM is left whatever happens."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from tests.data_oracle import OracleEngine
from tests.unit.data.engines._cluster_cases import (
    PARAMS,
    TEST_JVM_OPTIONS,
    csv_text,
    jvm_archive_options,
    plans,
)

import snapdp
from snapdp._records import as_dict
from snapdp.mechanism import SnappingMechanism

pytestmark = [pytest.mark.spark, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
STARTUP_TIMEOUT = 90.0


def _spark_class() -> Path:
    pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (the spark extra)")
    if shutil.which("java") is None:
        pytest.skip("no Java runtime on PATH: the Spark cluster test needs Java 17")
    path = Path(pyspark.__file__).parent / "bin" / "spark-class"
    if not path.is_file():
        pytest.skip(f"pyspark has no {path}: cannot start a standalone cluster")
    return path


def _wait_for(log: Path, pattern: str, proc: subprocess.Popen[bytes]) -> re.Match[str]:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        match = re.search(pattern, log.read_text(errors="replace"))
        if match:
            return match
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    raise AssertionError(f"{log.name}: no {pattern!r}:\n{log.read_text(errors='replace')[-3000:]}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop a process and its group (the worker's executors) by PID; SIGKILL after 10 s."""
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            os.killpg(proc.pid, 0)  # children of the group may linger a moment
        except (subprocess.TimeoutExpired, ProcessLookupError):
            if proc.poll() is not None:
                return


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    """A standalone master URL and the environment for drivers and executors."""
    spark_class = _spark_class()
    work = tmp_path_factory.mktemp("cluster")
    env = dict(os.environ)
    env["PYSPARK_PYTHON"] = sys.executable  # executors take their Python only from here
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    env["PYTHONPATH"] = os.pathsep.join([str(Path(snapdp.__file__).parents[1]), str(HERE)])
    env["SPARK_WORKER_DIR"] = str(work / "worker")
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    # the master's and the worker's JVMs; Spark's classes from the local session's archive
    env["SPARK_DAEMON_JAVA_OPTS"] = f"{TEST_JVM_OPTIONS} {jvm_archive_options(dump=False)}"
    procs: list[subprocess.Popen[bytes]] = []

    def start(name: str, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
        log = work / f"{name}.log"
        with log.open("wb") as f:
            proc = subprocess.Popen(
                [str(spark_class), *args], stdout=f, stderr=subprocess.STDOUT, env=env,
                start_new_session=True,
            )  # fmt: skip
        procs.append(proc)
        return proc, log

    try:
        master, mlog = start(
            "master", "org.apache.spark.deploy.master.Master",
            "--host", "127.0.0.1", "--port", "0", "--webui-port", "0",
        )  # fmt: skip
        url = _wait_for(mlog, r"Starting Spark master at (spark://127\.0\.0\.1:\d+)", master)[1]
        worker, wlog = start(
            "worker", "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
            "--cores", "2", "--memory", "2g", "--webui-port", "0",
        )  # fmt: skip
        _wait_for(wlog, r"Successfully registered with master", worker)
        yield url, env
    finally:
        for proc in reversed(procs):
            _stop(proc)


def test_releases_on_a_standalone_cluster(
    cluster: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    url, env = cluster
    data = tmp_path / "t.csv"
    data.write_text(csv_text())
    driver = subprocess.Popen(
        [sys.executable, str(HERE / "_spark_cluster_driver.py"), url, str(data), str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True,
    )  # fmt: skip
    try:
        stdout, stderr = driver.communicate(timeout=240)
    finally:
        _stop(driver)
    lines = [x for x in stdout.decode().splitlines() if x.startswith("RESULT ")]
    assert driver.returncode == 0 and lines, stderr.decode()[-4000:]
    out = json.loads(lines[-1][len("RESULT ") :])

    oracle = OracleEngine(data)
    for name, plan in plans():
        assert out["aggregates"][name] == as_dict(oracle.aggregate(plan)), name
    try:
        from snapdp.data.engines.duckdb.engine import DuckDBEngine  # type: ignore[import-not-found]
    except ImportError:  # not merged yet: the reference engine is the common oracle
        pass
    else:
        for name, plan in plans():
            assert out["aggregates"][name] == as_dict(DuckDBEngine(data).aggregate(plan)), name

    exact = oracle.aggregate(plans()[0][1])
    accuracy = SnappingMechanism(*PARAMS).accuracy(1e-9)  # type: ignore[arg-type]
    assert out["location"] == "executors"
    # one noisy value per cell, near the exact aggregate, although an executor died mid-job
    assert np.all(np.abs(np.array(out["survived"]["rows"]) - np.array(exact.rows)) <= accuracy)
    clamped = np.clip(np.array(exact.sums[0], dtype=float), -1000, 5000)
    assert np.all(np.abs(np.array(out["survived"]["sum"]) - clamped) <= accuracy)
    assert out["killed"] is True  # an executor JVM really died during the second release
    assert out["failure"].startswith("the Spark job failed") and "injected" not in out["failure"]
