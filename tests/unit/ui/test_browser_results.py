"""The results screen in a browser (issue 34 item 6, issue 32 item 2): plain-words notes with a
docs link and the exact statement folded under "details"; the progress line; the `grid value`
checkbox of a count. Playwright with the system Chromium, as tests/unit/ui/test_browser.py."""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from tests.unit.ui._browser import TIMEOUT_MS, field, opened_page, planned

PLAN = """[data]
source = "people.csv"
privacy_unit = "pid"
max_rows_per_unit = 1
total_epsilon = 3

[columns]
pid = { type = "integer" }
age = { type = "integer", lower = 0, upper = 100 }
sex = { type = "integer", keys = [0, 1] }

[[query]]
statistic = "count"
by = ["sex"]
epsilon = 1

[[query]]
statistic = "mean"
column = "age"
epsilon = 2
"""


@pytest.fixture
def page(browser: Any, start_server: Any, tmp_path: Path) -> Iterator[Any]:
    with opened_page(
        browser,
        start_server,
        tmp_path,
        PLAN,
        total_epsilon=Fraction(3),
    ) as pg:
        yield pg


def _run(page: Any) -> None:
    from playwright.sync_api import expect

    page.click("#to-run")
    page.click("#run")
    expect(page.locator("#results-card")).to_be_visible(timeout=TIMEOUT_MS)


def test_notes_are_in_plain_words_with_docs_links_and_details(page: Any) -> None:
    """Was: the notes were the release's technical statements, folded as "technical notes"."""
    from playwright.sync_api import expect

    _run(page)
    first = page.locator("#results .result").nth(0)
    notes = first.locator(".notes li")
    expect(notes.first).to_be_visible()
    shown = notes.all_inner_texts()
    kinds = [notes.nth(i).get_attribute("data-note") for i in range(notes.count())]
    assert "protects" in kinds and "groups" in kinds and "other" not in kinds
    assert any("Privacy protects each pid" in t for t in shown)
    for text in shown:
        assert "DESIGN" not in text and "seed" not in text and "neighbours:" not in text
        assert "More: docs/" in text
    links = first.locator(".notes a.doc")
    hrefs = links.evaluate_all("ns => ns.map(n => n.getAttribute('href'))")
    assert hrefs and all(h.startswith("/help#") for h in hrefs)
    fold = first.locator("details")
    expect(fold.locator("summary")).to_have_text("details")
    expect(fold).to_contain_text("neighbours: add or remove one pid")


def test_progress_line_reads_step_of_steps(page: Any) -> None:
    """A run over a second shows how far it got. The run here is fast: the line is read from
    the progress the finished run left, polled as for a slow one."""
    from playwright.sync_api import expect

    _run(page)
    page.evaluate("watchProgress(runNonce)")
    line = page.locator("#run-progress")
    expect(line).to_have_text("step 4 of 4 · done", timeout=TIMEOUT_MS)
    text = page.evaluate("progressText({done: 2, total: 6, label: 'phase two of mean(age)'})")
    assert text == "running · step 3 of 6 · phase two of mean(age)"


def test_grid_value_checkbox_is_for_counts(page: Any) -> None:
    """Was: `grid_counts` existed in plan files and flags only, not on the page."""
    from playwright.sync_api import expect

    box = field(page, "query[1].grid_counts")
    expect(box).to_be_visible()
    expect(field(page, "query[2].grid_counts")).to_be_hidden()
    box.check()
    planned(page)
    assert page.evaluate("doc.queries[0].grid_counts") == "true"
    field(page, "query[1].statistic").select_option("sum")
    expect(box).to_be_hidden()
