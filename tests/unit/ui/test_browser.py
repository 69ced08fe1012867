"""Real-browser flows of `snapdp ui` (docs/ui.md): Playwright for Python driving the system
Chromium (never a downloaded one). Skipped, saying why, without Playwright or /usr/bin/chromium;
.ci/run installs Chromium with apt."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from tests.unit.ui._browser import TIMEOUT_MS, field, opened_page, planned

from snapdp.data import Plan
from snapdp.data.budget.ledger import Ledger
from snapdp.data.frontends.toml_writer import plan_to_toml

PLAN = """[data]
source = "people.csv"
total_epsilon = 1

[columns]
age = { type = "integer", lower = 0, upper = 100 }
sex = { type = "integer", keys = [0, 1] }

[[query]]
statistic = "count"
epsilon = 0.5

[[query]]
statistic = "count"
by = "sex"
weight = 1
"""


@pytest.fixture
def page(browser: Any, start_server: Any, tmp_path: Path) -> Iterator[Any]:
    # the owner's budget: the page only spends (docs/ui.md)
    with opened_page(
        browser, start_server, tmp_path, PLAN, console_errors=True, total_epsilon=Fraction(1)
    ) as pg:
        yield pg


def _eps(pg: Any, row: int) -> Any:
    return pg.locator(f'tr[data-query="{row}"] [data-out="epsilon"]')


def test_a_target_gets_the_exact_epsilon(page: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    field(page, "query[1].how").select_option("accuracy")
    field(page, "query[1].value").fill("10")
    plan = Plan.load(tmp_path / "plan.toml")
    text = plan_to_toml(plan).replace("epsilon = 0.5", "accuracy = 10", 1)
    (tmp_path / "target.toml").write_text(text)
    want = Plan.load(tmp_path / "target.toml").preview().as_dict()["queries"][0]["epsilon"]
    assert "/" not in want  # a target's ε is a short decimal, shown exactly
    expect(_eps(page, 0)).to_have_text(want)
    expect(_eps(page, 0)).not_to_have_class("out stale")
    planned(page)


def test_the_total_moves_the_weighted_query(page: Any) -> None:
    from playwright.sync_api import expect

    expect(_eps(page, 1)).to_have_text("0.5")
    field(page, "data.total_epsilon").fill("2")
    expect(_eps(page, 1)).to_have_text("1.5")
    field(page, "data.total_epsilon").fill("3")
    expect(_eps(page, 1)).to_have_text("2.5")
    expect(page.locator("#total-used")).to_have_text("3")


def test_bad_bounds_show_an_inline_error(page: Any) -> None:
    from playwright.sync_api import expect

    field(page, "columns[0].lower").fill("100")
    error = page.locator(".field-error.inline")
    expect(error).to_have_count(1)
    expect(error).to_contain_text("column 'age'")
    invalid = page.locator("input.invalid")
    expect(invalid).to_have_count(1)
    assert invalid.get_attribute("data-field") in ("columns[0].lower", "columns[0].upper")
    expect(page.locator("#to-run")).to_be_disabled()
    field(page, "columns[0].lower").fill("0")
    expect(error).to_have_count(0)
    planned(page)


def _same(a: str, b: str) -> bool:
    pa, pb = [x.strip() for x in a.split(",")], [x.strip() for x in b.split(",")]
    if len(pa) != len(pb):
        return False
    for x, y in zip(pa, pb, strict=True):
        try:
            if Fraction(Decimal(x)) != Fraction(Decimal(y)):
                return False
        except InvalidOperation:
            if x != y:
                return False
    return True


def _fields(pg: Any) -> dict[str, str]:
    out: dict[str, str] = pg.eval_on_selector_all(
        "#plan-screen [data-field]",
        "nodes => Object.fromEntries(nodes.map(n => [n.dataset.field, n.value]))",
    )
    return out


def test_export_reload_load_gives_the_same_plan(page: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    field(page, "data.total_epsilon").fill("2.50")
    field(page, "query[1].value").fill("0.10")
    field(page, "data.confidence").fill("0.9")
    planned(page)
    before = _fields(page)
    eps_before = [_eps(page, i).inner_text() for i in range(2)]
    with page.expect_download() as download:
        page.click("#export")
    saved = tmp_path / "exported.toml"
    download.value.save_as(saved)
    text = saved.read_text()
    assert "total_epsilon = 2.50\n" in text and "epsilon = 0.10\n" in text
    page.reload()
    planned(page)
    assert field(page, "data.total_epsilon").input_value() == "1"
    page.set_input_files("#load", str(saved))
    expect(field(page, "data.total_epsilon")).to_have_value("2.5")
    planned(page)
    after = _fields(page)
    assert after.keys() == before.keys()
    assert all(_same(before[k], after[k]) for k in before), (before, after)
    assert [_eps(page, i).inner_text() for i in range(2)] == eps_before


def test_run_once_then_refused(page: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    ledger = tmp_path / "ledger.sqlite"
    dataset = str((tmp_path / "people.csv").resolve())
    page.click("#to-run")
    expect(page.locator("#run-total")).to_have_text("ε = 1")
    page.click("#run")
    expect(page.locator("#results-card")).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.locator("#results .result h3")).to_have_text(["count", "count by sex"])
    expect(page.locator("#run")).to_be_disabled()  # this run's nonce is used
    assert len(Ledger(ledger, None, dataset=dataset).entries()) == 1
    href = page.locator("#results-links a", has_text="report.html").get_attribute("href")
    report = page.context.request.get(page.url.split("#")[0].rstrip("/") + href)
    assert report.status == 200 and "<html" in report.text().lower()
    # back on the plan: the ledger would refuse a second run, so "Review and run" is off
    # (the server's own refusals, budget and nonce, are tested over HTTP: test_server.py)
    page.click("#back")
    planned(page)
    expect(page.locator("#ledger-line")).to_contain_text("would be refused")
    expect(page.locator("#to-run")).to_be_disabled()
    assert len(Ledger(ledger, None, dataset=dataset).entries()) == 1


def test_only_the_latest_answer_counts(page: Any) -> None:
    """An older preview that answers after a newer one is dropped; "planning…" shows meanwhile."""
    import threading

    from playwright.sync_api import expect

    server = page.client.server
    started, release, answered = threading.Event(), threading.Event(), threading.Event()
    plan = server.preview

    def held(body: dict[str, Any]) -> Any:
        if body["document"]["data"]["total_epsilon"] == "2":
            started.set()
            release.wait(60)
            try:
                return plan(body)
            finally:
                answered.set()
        return plan(body)

    server.preview = held
    field(page, "data.total_epsilon").fill("2")
    assert started.wait(60)
    expect(page.locator("#status")).to_have_text("planning…")
    field(page, "data.total_epsilon").fill("3")
    expect(_eps(page, 1)).to_have_text("2.5")
    planned(page)
    release.set()
    assert answered.wait(60)
    page.wait_for_timeout(300)  # time for a stale answer to be (wrongly) shown
    expect(_eps(page, 1)).to_have_text("2.5")
    expect(page.locator("#total-used")).to_have_text("3")
