"""δ on the page (issue 35): a query grouping by a column without declared keys shows the δ field,
takes an exact δ (``1e-6``, ``1/1000000``), refuses a bad one beside the field in one line, and a
run shows the groups chosen from the data with "(ε, δ)-DP" and the owner's δ budget beside ε's.
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
total_epsilon = 4

[columns]
age = { type = "integer", lower = 0, upper = 100 }
sex = { type = "integer", keys = [0, 1] }

[[query]]
statistic = "count"
by = ["sex"]
epsilon = 1
"""


@pytest.fixture
def page(browser: Any, start_server: Any, tmp_path: Path) -> Iterator[Any]:
    # 400 rows: ages 20..69, eight people each, enough to pass the threshold at ε = 3
    with opened_page(
        browser,
        start_server,
        tmp_path,
        PLAN,
        rows=400,
        total_epsilon=Fraction(4),
        total_delta=Fraction(1, 10**5),  # the owner's δ budget (--total-delta)
        seed=7,  # seeded noise for a test: NOT private
    ) as pg:
        yield pg


def test_delta_typed_previewed_and_run_shows_groups_from_the_data(page: Any) -> None:
    from playwright.sync_api import expect

    delta_field = page.locator("#delta-field")
    expect(delta_field).to_be_hidden()  # every grouping column has declared keys
    field(page, "query[1].by").fill("age")
    field(page, "query[1].value").fill("3")
    expect(delta_field).to_be_visible()  # age has no keys: its groups would come from the data
    error = page.locator(".field-error.inline")
    expect(error).to_have_text(  # no δ yet: refused on the δ field, saying what to add
        "query 1 groups by `age`, which has no declared keys: its groups would come from the "
        "data; give δ (such as 1e-6) to choose them privately, or declare its keys or bins "
        '(docs/ui.md, "Groups from the data")'
    )
    expect(field(page, "data.delta")).to_have_class("invalid")
    expect(page.locator("#to-run")).to_be_disabled()

    field(page, "data.delta").fill("2")
    expect(error).to_have_count(1)
    expect(error).to_have_text("`delta` must be below 1, such as 1e-6, not 2")
    expect(field(page, "data.delta")).to_have_class("invalid")

    field(page, "data.delta").fill("1/1000000")
    planned(page)
    expect(error).to_have_count(0)
    expect(page.locator("#total-delta")).to_contain_text("(ε, δ)-DP: δ = 1e-6")
    expect(page.locator('[data-note="from-data"]')).to_contain_text("groups of age")
    expect(page.locator("#ledger-line")).to_contain_text("δ budget 1e-5, spent 0")

    page.click("#to-run")
    expect(page.locator("#run-total")).to_have_text(
        "ε = 3 and δ = 1e-6 for the groups chosen from the data: (ε, δ)-DP"
    )
    page.click("#run")
    expect(page.locator("#results-card")).to_be_visible(timeout=TIMEOUT_MS)
    result = page.locator("#results .result")
    expect(result.locator("h3")).to_have_text("count by age")
    guarantee = result.locator('[data-guarantee="epsilon-delta"]')
    expect(guarantee).to_contain_text("(ε, δ)-DP: ε = 3, δ = ")
    expect(guarantee).to_contain_text("groups of age chosen from the data")
    ages = [int(a) for a in result.locator("tbody tr td:first-child").all_inner_texts()]
    assert ages and set(ages) <= set(range(20, 70))  # only ages in the data, chosen privately
    expect(result.locator('[data-note="selection"]')).to_contain_text("chosen from the data")
    expect(page.locator("#results-meta")).to_contain_text("δ spent: ")
    expect(page.locator("#run-ledger")).to_contain_text("δ budget 1e-5, spent ")
