"""Differential tests on the Spark engine, short version (see tests/unit/data/test_differential.py
and tests/differential.py): D against D' = D plus one awkward row, everything but the noisy
numbers compared. The long version: ``python benchmarks/differential.py --spark --examples N``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.differential import Case, Outcome, differences, run_case
from tests.unit.data.engines.conftest import default_planning

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark"), pytest.mark.slow]

SEED = 20_260_522
CASES = [
    Case(SEED, "python types", "pandas", "api", "spark"),
    Case(SEED, "invalid utf-8 key", "parquet", "api", "spark"),
    Case(SEED, "NUL", "csv no header", "cli", "spark"),
]
_CACHE: dict[object, Outcome] = {}


@pytest.fixture(scope="module", autouse=True)
def _spark_defaults(spark_session: Any) -> Iterator[None]:
    """This file runs on Spark's default planning and code generation (whole-stage code
    generation, adaptive execution, constraint propagation), which the other Spark tests turn
    off for speed (tests/unit/data/engines/conftest.py): the path users run stays checked."""
    with default_planning(spark_session):
        yield


@pytest.mark.parametrize("case", CASES, ids=str)
def test_d_and_d_plus_one_awkward_row_look_the_same_on_spark(
    case: Case, tmp_path: Path, spark_session: Any
) -> None:
    d, d2 = run_case(case, tmp_path, spark=spark_session, cache=_CACHE)
    assert not differences(d, d2), differences(d, d2)
    assert d.status in ("ok", (0, 0)), d
