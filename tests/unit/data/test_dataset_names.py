"""The dataset a release spends under (docs/data.md, "A budget per dataset"; issue 21 item 7).

A file's budget is named by its resolved path; an in-memory source (a DataFrame, an Arrow table)
has no name of its own, so with a ledger file it must be named (``dataset=``, CLI ``--dataset``):
two different DataFrames must never share one budget by accident. The demo table is ``demo``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from click.testing import CliRunner
from tests.data_oracle import OracleEngine

from snapdp.cli import main
from snapdp.data import Column, Ledger, Plan, PrivateTable, Query, Schema, read_ledger
from snapdp.errors import ParameterError

SCHEMA = Schema((Column("g", "integer", keys=(0, 1)),))
COUNT = [Query("count", by=("g",))]


def _frame(n: int) -> pd.DataFrame:
    return pd.DataFrame({"g": [i % 2 for i in range(n)]})


@pytest.mark.parametrize(
    "source",
    [_frame(10), pa.table({"g": [0, 1]})],
    ids=["pandas", "arrow"],
)
def test_an_in_memory_source_needs_a_dataset_name_with_a_ledger_file(
    tmp_path: Path, source: object
) -> None:
    with pytest.raises(ParameterError, match="`dataset` is needed") as info:
        PrivateTable(source, SCHEMA, ledger=tmp_path / "b.sqlite", total_epsilon=1)
    assert info.value.parameter == "dataset"
    assert not (tmp_path / "b.sqlite").exists()


def test_an_engine_over_a_frame_needs_a_dataset_name_too(tmp_path: Path) -> None:
    with pytest.raises(ParameterError, match="`dataset` is needed"):
        PrivateTable(
            schema=SCHEMA,
            engine=OracleEngine(_frame(10)),  # type: ignore[arg-type]
            ledger=tmp_path / "b.sqlite",
            total_epsilon=1,
        )


def test_two_named_frames_keep_two_budgets(tmp_path: Path) -> None:
    book = tmp_path / "b.sqlite"
    for name, n in (("a", 10), ("b", 20)):
        table = PrivateTable(
            _frame(n), SCHEMA, ledger=book, total_epsilon=1, dataset=name,
            rng=np.random.default_rng(0),
        )  # fmt: skip
        table.release(COUNT, 1)  # the whole budget of each: no sharing
    report = read_ledger(book)
    assert sorted((d.dataset, d.spent) for d in report.datasets) == [("a", 1), ("b", 1)]


def test_without_a_ledger_file_no_name_is_needed() -> None:
    table = PrivateTable(_frame(10), SCHEMA, total_epsilon=1, rng=np.random.default_rng(0))
    table.release(COUNT, 1)
    shared = Ledger(None, 2, dataset="mine")
    table = PrivateTable(_frame(10), SCHEMA, ledger=shared, rng=np.random.default_rng(0))
    table.release(COUNT, 1)
    assert shared.spent() == 1


def test_a_file_is_named_by_its_resolved_path(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("g\n0\n1\n", encoding="utf-8")
    table = PrivateTable(
        str(path),
        SCHEMA,
        ledger=tmp_path / "b.sqlite",
        total_epsilon=1,
        engine=OracleEngine(path),  # type: ignore[arg-type]
    )
    assert table.dataset == str(path.resolve())
    table = PrivateTable(
        schema=SCHEMA,
        ledger=tmp_path / "b.sqlite",
        total_epsilon=1,
        engine=OracleEngine(path),  # type: ignore[arg-type]
    )
    assert table.dataset == str(path.resolve())


def test_the_demo_table_is_named_demo(tmp_path: Path) -> None:
    book = str(tmp_path / "b.sqlite")
    result = CliRunner().invoke(
        main,
        [
            "release",
            "--epsilon",
            "1",
            "--count",
            "--ledger",
            book,
            "--total-epsilon",
            "2",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert [d.dataset for d in read_ledger(book).datasets] == ["demo"]
    assert json.loads(result.output)["results"]


PLAN = """[data]
source = "d.csv"
total_epsilon = 3

[columns]
g = { type = "integer", keys = [0, 1] }

[[query]]
statistic = "count"
by = ["g"]
epsilon = 1
"""


def test_a_plan_run_on_a_frame_engine_needs_a_dataset_name(tmp_path: Path) -> None:
    (tmp_path / "d.csv").write_text("g\n0\n1\n", encoding="utf-8")
    (tmp_path / "plan.toml").write_text(PLAN, encoding="utf-8")
    plan = Plan.load(tmp_path / "plan.toml")
    engine = OracleEngine(_frame(10))
    with pytest.raises(ParameterError, match="`dataset` is needed"):
        plan.run(ledger=tmp_path / "b.sqlite", engine=engine)  # type: ignore[arg-type]
    assert not (tmp_path / "b.sqlite").exists()
    run = plan.run(ledger=tmp_path / "b.sqlite", engine=engine, dataset="frame", total_epsilon=1)  # type: ignore[arg-type]
    assert [d.dataset for d in read_ledger(tmp_path / "b.sqlite").datasets] == ["frame"]
    assert run.results
