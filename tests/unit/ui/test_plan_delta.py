"""A plan with groups from the data (a `delta`) goes through the plan-file writer and the page:
`snapdp ui PLAN` failed at start for any such plan ("the plan-file writer does not know
`delta`")."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
from click.testing import CliRunner

from snapdp.cli import main
from snapdp.data import Plan
from snapdp.data.frontends.toml_writer import plan_to_toml
from snapdp.ui._document import FieldError
from snapdp.ui._document_io import document_from_plan, document_from_toml, document_toml

PLAN = """[data]
source = "{source}"
total_epsilon = 3
{data_delta}

[columns]
age = {{ type = "integer", lower = 0, upper = 100 }}
race = {{ type = "integer" }}

[[query]]
statistic = "count"
by = ["race"]
epsilon = 1

[[query]]
statistic = "mean"
column = "age"
epsilon = 1
{query_delta}
"""


def _plan(tmp_path: Path, data_delta: str = "", query_delta: str = "") -> Path:
    data = tmp_path / "t.csv"
    data.write_text("age,race\n" + "30,1\n40,2\n" * 10, encoding="utf-8")
    path = tmp_path / "plan.toml"
    text = PLAN.format(source=data.as_posix(), data_delta=data_delta, query_delta=query_delta)
    path.write_text(text, encoding="utf-8")
    return path


def test_the_writer_keeps_each_querys_delta(tmp_path: Path) -> None:
    plan = Plan.load(_plan(tmp_path, "delta = 1e-6", "delta = 2e-7"))
    assert [pq.delta for pq in plan.queries] == [Fraction(1, 10**6), Fraction(2, 10**7)]
    again = tmp_path / "again.toml"
    again.write_text(plan_to_toml(plan), encoding="utf-8")
    assert Plan.load(again).queries == plan.queries


def test_the_page_keeps_one_delta_for_every_query(tmp_path: Path) -> None:
    path = _plan(tmp_path, "delta = 1e-6")
    plan = Plan.load(path)
    doc = json.loads(json.dumps(document_from_plan(plan)))
    assert doc["data"]["delta"] == "0.000001"
    assert document_from_toml(path.read_text(encoding="utf-8"), plan.source) == doc
    back = tmp_path / "back.toml"
    back.write_text(document_toml(doc, plan.source), encoding="utf-8")
    assert Plan.load(back).queries == plan.queries


def test_the_page_refuses_different_deltas_in_one_line(tmp_path: Path) -> None:
    plan = Plan.load(_plan(tmp_path, "delta = 1e-6", "delta = 2e-7"))
    with pytest.raises(FieldError, match="one δ for every query") as caught:
        document_from_plan(plan)
    assert caught.value.field == "data.delta"


def test_snapdp_ui_starts_with_such_a_plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from snapdp.ui import server as ui_server

    monkeypatch.setattr(ui_server.UiServer, "serve_forever", lambda self: None)
    path = _plan(tmp_path, "delta = 1e-6")
    out = CliRunner().invoke(main, ["ui", str(path), "--no-browser", "--port", "0"])
    assert out.exit_code == 0, out.output
    different = _plan(tmp_path, "delta = 1e-6", "delta = 2e-7")
    out = CliRunner().invoke(main, ["ui", str(different), "--no-browser", "--port", "0"])
    assert out.exit_code != 0 and "one δ for every query" in out.output
    assert "Traceback" not in out.output and len(out.output.strip().splitlines()) == 1
