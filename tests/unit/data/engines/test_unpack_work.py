"""DuckDB's engine unpacks every cell of a plan the same way, whether the data hold rows in it
or not (review of DESIGN §8.1: the loop ran once per cell that occurs, so its work showed which
keys are present). Compared by the Python lines ``aggregate`` runs, not by wall time. Not
covered: DuckDB returns one row per cell that occurs, and indexing those rows is one dict insert
per returned row (docs/data.md, "Run time")."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from snapdp.data.engines.base import AggregatePlan, ValueColumn
from snapdp.data.engines.duckdb.engine import DuckDBEngine
from snapdp.data.model.schema import Column, CsvOptions

_ENGINE = "engines/duckdb/engine.py"


def _lines(engine: DuckDBEngine, plan: AggregatePlan) -> Counter[tuple[str, int]]:
    seen: Counter[tuple[str, int]] = Counter()

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line" and frame.f_code.co_name == "aggregate":
            seen[(frame.f_code.co_name, frame.f_lineno)] += 1
        return local

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename.replace("\\", "/").endswith(_ENGINE) else None

    sys.settrace(tracer)
    try:
        engine.aggregate(plan)
    finally:
        sys.settrace(None)
    return seen


@pytest.mark.parametrize("squares", [False, True])
def test_a_key_without_rows_takes_the_same_unpacking_work(tmp_path: Path, squares: bool) -> None:
    sex = Column("sex", "integer", keys=(0, 1, 2))
    age = ValueColumn(Column("age", "integer", lower=0, upper=100), 0, 0, 100, None, squares)
    plan = AggregatePlan((sex,), (age,))
    every = tmp_path / "every.csv"
    every.write_text("sex,age\n" + "".join(f"{i % 3},{20 + i}\n" for i in range(30)))
    missing = tmp_path / "missing.csv"  # key 2 holds no row
    missing.write_text("sex,age\n" + "".join(f"{i % 2},{20 + i}\n" for i in range(30)))
    engines = [DuckDBEngine(str(p), csv=CsvOptions()) for p in (every, missing)]
    assert engines[1].aggregate(plan).rows[2] == 0  # the case is what it claims
    work = [_lines(e, plan) for e in engines]
    assert work[0] == work[1]
