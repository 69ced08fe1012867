"""The driver program of the standalone-cluster test (run in its own process: one SparkContext
per process, and the other Spark tests hold a local one). Usage:
``python _spark_cluster_driver.py MASTER_URL CSV_PATH MARKER_DIR``; prints one JSON line.

It computes the exact aggregates of the shared cases on the cluster, draws executor noise, and
checks the two failure paths: an executor JVM killed during the noise job (Spark re-runs the lost
tasks: one value per cell, once), and a task that fails on every attempt (a clean RuntimeError,
no partial result; on a one-key count, the smallest release with a noise stage).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Callable, Iterator
from typing import Any

from pyspark.sql import SparkSession

import snapdp.data.engines.spark.executor as spark_module
from snapdp._records import as_dict
from snapdp.data.engines.base import AggregatePlan, NoiseRequest
from snapdp.data.engines.spark.engine import SparkEngine


def _kill_executor_once(marker: str) -> Callable[[Any], Any]:
    """Wrap the executor-noise function: the first task to run kills its executor's JVM."""
    original = spark_module.executor_noise

    def wrapped(specs: Any) -> Callable[[Iterator[Any]], Iterator[Any]]:
        inner = original(specs)

        def run(batches: Iterator[Any]) -> Iterator[Any]:
            try:
                fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                yield from inner(batches)
                return
            os.close(fd)
            pid = os.getppid()
            while pid > 1:  # walk up to the executor JVM and kill it mid-task
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if b"CoarseGrainedExecutorBackend" in f.read():
                        os.kill(pid, signal.SIGKILL)
                        break
                with open(f"/proc/{pid}/stat") as f:
                    pid = int(f.read().rsplit(")", 1)[1].split()[1])
            yield from inner(batches)

        return run

    return wrapped


def _always_fail(specs: Any) -> Callable[[Iterator[Any]], Iterator[Any]]:
    def run(batches: Iterator[Any]) -> Iterator[Any]:
        raise OSError("injected task failure")
        yield  # pragma: no cover

    return run


def main() -> None:
    master, csv_path, marker_dir = sys.argv[1:4]
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _cluster_cases import (  # type: ignore[import-not-found]
        PARAMS,
        TEST_JVM_OPTIONS,
        jvm_archive_options,
        plans,
    )

    options = f"{TEST_JVM_OPTIONS} {jvm_archive_options(dump=False)}"  # AppCDS, if there is one

    session = (
        SparkSession.builder.master(master)
        .appName("snapdp-cluster-test")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.extraJavaOptions", options)
        .config("spark.executor.extraJavaOptions", options)
        .config("spark.executor.memory", "1g")
        .config("spark.executor.cores", "2")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.task.maxFailures", "2")
        # Interpreted expressions and no constraint propagation, as in the local test session
        # (less driver CPU per plan); how Spark schedules, adaptive execution included, is
        # Spark's default. Code generation is checked by the default-planning tests.
        .config("spark.sql.constraintPropagation.enabled", "false")
        .config("spark.sql.codegen.wholeStage", "false")
        .config("spark.sql.codegen.factoryMode", "NO_CODEGEN")
        .config("spark.executorEnv.PYTHONPATH", os.environ.get("PYTHONPATH", ""))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    out: dict[str, Any] = {}
    try:
        engine = SparkEngine(
            csv_path, spark=session, executor_noise_threshold=1, noise_partitions=2
        )
        out["aggregates"] = {name: as_dict(engine.aggregate(plan)) for name, plan in plans()}
        plan = plans()[0][1]
        requests = [NoiseRequest("rows", "rows", PARAMS), NoiseRequest("sum", "sum0", PARAMS)]
        spark_module.executor_noise = _kill_executor_once(os.path.join(marker_dir, "killed"))  # type: ignore[assignment]
        survived = engine.noisy_aggregate(plan, requests)
        out["survived"] = {k: v.tolist() for k, v in survived.items()}
        out["location"] = engine.last_noise_location
        out["killed"] = os.path.exists(os.path.join(marker_dir, "killed"))
        spark_module.executor_noise = _always_fail  # type: ignore[assignment]
        try:  # the smallest plan: what fails is the noise stage, whatever the aggregates
            engine.noisy_aggregate(AggregatePlan(plan.groupings[:1]), requests[:1])
            out["failure"] = "returned"
        except RuntimeError as exc:
            out["failure"] = str(exc)
    finally:
        session.stop()
    print("RESULT " + json.dumps(out, default=str))


if __name__ == "__main__":
    main()
