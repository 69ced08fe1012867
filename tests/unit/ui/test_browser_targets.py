"""The page states per query whether its target was met, shows what a two-phase target would
spend and reach for the group sizes the user sets, and explains ε (issue 34, items 1, 4, 5).
Playwright with the system Chromium, as tests/unit/ui/test_browser.py."""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from tests.unit.ui._browser import TIMEOUT_MS, field, opened_page, planned

PLAN = """[data]
source = "people.csv"
total_epsilon = 10

[columns]
age = { type = "integer", lower = 0, upper = 100 }
sex = { type = "integer", keys = [0, 1] }

[[query]]
statistic = "count"
accuracy = 50

[[query]]
statistic = "mean"
column = "age"
accuracy = 0.1
"""


@pytest.fixture
def page(browser: Any, start_server: Any, tmp_path: Path) -> Iterator[Any]:
    with opened_page(
        browser,
        start_server,
        tmp_path,
        PLAN,
        total_epsilon=Fraction(10),
    ) as pg:
        yield pg


def test_a_met_and_a_missed_target_are_both_stated(page: Any) -> None:
    """Was: the results showed numbers with no verdict (`showResults` ignored `target_met`)."""
    from playwright.sync_api import expect

    page.click("#to-run")
    page.click("#run")
    expect(page.locator("#results-card")).to_be_visible(timeout=TIMEOUT_MS)
    verdicts = page.locator("#results .result .verdict")
    expect(verdicts).to_have_count(2)
    expect(verdicts.nth(0)).to_have_attribute("data-verdict", "met")
    expect(verdicts.nth(0)).to_contain_text("target met")
    expect(verdicts.nth(1)).to_have_attribute("data-verdict", "missed")
    expect(verdicts.nth(1)).to_contain_text("target missed")


def test_two_phase_targets_show_spend_and_reach_per_group_size(page: Any) -> None:
    """Was: the ε column showed the leftover budget, the ± column repeated "target ±X" and the
    total read "at most 10 of 10"."""
    from playwright.sync_api import expect

    eps = page.locator('tr[data-query="1"] [data-out="epsilon"]')
    expect(eps).to_contain_text("≤")
    sizes = page.locator('tr[data-flags="1"] .size')
    expect(sizes).to_have_count(3)
    expect(sizes.nth(0)).to_contain_text("groups of 100")
    expect(page.locator("#total-used")).to_contain_text("up to")
    expect(page.locator("#total-used")).not_to_contain_text("at most")
    page.locator("#group-sizes").fill("50, 5000000")
    expect(sizes).to_have_count(2)
    expect(sizes.nth(1)).to_contain_text("groups of 5,000,000")
    expect(sizes.nth(1)).to_contain_text("✓")
    # a target no realistic group meets is said to be out of reach, plainly
    field(page, "query[2].value").fill("0.0001")
    page.locator("#group-sizes").fill("100, 1000")
    expect(page.locator('tr[data-flags="1"] .out-of-reach')).to_contain_text("out of reach")
    # the review screen keeps "at most" for what a two-phase query may spend
    field(page, "query[2].value").fill("0.1")
    planned(page)
    page.click("#to-run")
    expect(page.locator("#run-total")).to_contain_text("at most")


def test_epsilon_is_explained_and_a_large_one_is_flagged(page: Any) -> None:
    from playwright.sync_api import expect

    expect(page.locator(".explain")).to_contain_text("more likely than had that person not been")
    band = page.locator("#eps-band")
    expect(band).to_have_class("band weak")
    field(page, "data.total_epsilon").fill("1")
    expect(band).to_have_class("band strong")
    help_page = page.context.request.get(page.url.split("#")[0].rstrip("/") + "/help")
    assert help_page.status == 200 and "docs/ui.md" in help_page.text()
