"""One planner states every ± (docs/plans.md, docs/ui.md): a plan with ``consistent = true``
shows the same ε and ± in `snapdp plan`, the library's preview and the page (in process and in a
real browser), and the page keeps ``consistent`` through load, export and run. The columns give
every row a cell (bins over all of int64, nulls imputed), so the three counts form one family
(docs/data.md, "Which counts")."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from tests.unit.ui._browser import TIMEOUT_MS
from tests.unit.ui._helpers import write_people

from snapdp.cli import main
from snapdp.data import Plan
from snapdp.ui import _workload_json as wj
from snapdp.ui._document_io import document_from_toml, document_toml

CONSISTENT = """[data]
source = "people.csv"
total_epsilon = 2
consistent = true

[columns]
age = { type = "integer", lower = 0, upper = 100 }
sex = { type = "integer", bins = [-1e19, 1, 1e19], nulls = 0 }
grp = { type = "integer", bins = [-1e19, 1, 2, 1e19], nulls = 0 }

[[query]]
statistic = "count"
epsilon = 0.5

[[query]]
statistic = "count"
by = "sex"
epsilon = 0.5

[[query]]
statistic = "count"
by = ["sex", "grp"]
epsilon = 0.5
"""


def _plan(tmp_path: Path) -> Path:
    lines = ["pid,age,sex,grp"] + [f"{i},{20 + i % 50},{i % 2},{i % 3}" for i in range(40)]
    (tmp_path / "people.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    path = tmp_path / "plan.toml"
    path.write_text(CONSISTENT, encoding="utf-8")
    return path


def _cli_accuracies(path: Path) -> list[float]:
    out = CliRunner().invoke(main, ["plan", str(path), "--json"])
    assert out.exit_code == 0, out.output
    return [q["accuracy"] for q in json.loads(out.output)["queries"]]


def test_plan_cli_library_and_page_state_the_same_consistent_pm(tmp_path: Path) -> None:
    path = _plan(tmp_path)
    library = [a.accuracy for a in Plan.load(path).preview().allocations]
    independent = Plan.load(path)
    independent.consistent = False
    alone = [a.accuracy for a in independent.preview().allocations]
    assert library != alone  # the consistent ± is the fit's, not an independent count's
    assert _cli_accuracies(path) == library
    doc = document_from_toml(CONSISTENT, str(tmp_path / "people.csv"))
    assert doc["data"]["consistent"] == "true"
    for draft in (True, False):
        plan, preview, _ = wj.plan_and_preview(doc, str(tmp_path / "people.csv"), tmp_path,
                                               draft=draft)  # fmt: skip
        assert plan.consistent is True
        shown = wj.preview_json(plan, preview)
        assert [q["accuracy"] for q in shown["queries"]] == library
        assert preview.assumptions == Plan.load(path).preview().assumptions


@pytest.mark.parametrize("mode", ["true", "nonnegative", "integer", ""])
def test_the_page_keeps_consistent_through_export(tmp_path: Path, mode: str) -> None:
    _plan(tmp_path)
    doc = document_from_toml(CONSISTENT, str(tmp_path / "people.csv"))
    doc["data"]["consistent"] = mode
    toml = document_toml(doc, str(tmp_path / "people.csv"))
    (tmp_path / "back.toml").write_text(toml, encoding="utf-8")
    want = {"true": True, "": False}.get(mode, mode)
    assert Plan.load(tmp_path / "back.toml").consistent == want


@pytest.fixture
def consistent_page(browser: Any, start_server: Any, tmp_path: Path) -> Iterator[Any]:
    path = _plan(tmp_path)
    write_people(tmp_path / "unused.csv")
    client = start_server(plan=path, ledger=tmp_path / "ledger.sqlite", output=tmp_path / "out")
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(TIMEOUT_MS)
    pg.goto(client.server.url)
    yield pg
    context.close()


def test_the_browser_shows_the_planners_consistent_pm(consistent_page: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    pg = consistent_page
    expect(pg.locator("#status")).to_have_text("planned · nothing spent", timeout=TIMEOUT_MS)
    want = _cli_accuracies(tmp_path / "plan.toml")
    assert len(set(want)) == 3  # total, margins and cells state different ±
    expect(pg.locator('[data-field="data.consistent"]')).to_have_value("true")
    for i, acc in enumerate(want):  # the page's ±: six significant digits, as showAcc writes
        cell = pg.locator(f'tr[data-query="{i}"] [data-out="accuracy"]')
        expect(cell).to_have_text(f"±{acc:.6g}")
