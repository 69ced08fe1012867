"""The screenshots of docs/ui.md match their captions (issue 34 item 3): each caption names a plan
that exists, and the page loaded with that plan (and run, with the seed of
tools/ui_screenshots.py, which remakes the figures) shows the values the caption claims — as
text, not pixels. Playwright with the system Chromium, as tests/unit/ui/test_browser.py."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from tools.ui_screenshots import SEED, open_page, run_page, serving

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "ui.md"
_FIGURE = re.compile(r"!\[[^\]]*\]\((figures/[\w.]+\.png)\)\n\n\*(.+?)\*\n", re.S)
_CLAIM = re.compile(
    r"query (\d+) (ε|±|verdict) “([^”]*)”|total “([^”]*)” “([^”]*)”|spent “([^”]*)”"
)


@dataclass
class Caption:
    figure: str
    plan: Path
    total: Fraction
    claims: list[tuple[str, ...]] = field(default_factory=list)


def captions() -> list[Caption]:
    """Each figure of docs/ui.md with its caption's plan, total ε and claims."""
    out = []
    for figure, text in _FIGURE.findall(DOC.read_text(encoding="utf-8")):
        text = " ".join(text.split())
        plan = re.search(r"plan `([^`]+\.toml)`", text)
        total = re.search(r"--total-epsilon (\d+)", text)
        assert plan and total, f"{figure}: the caption names no plan or total ε"
        claims = [tuple(c) for c in _CLAIM.findall(text)]
        out.append(Caption(figure, ROOT / plan[1], Fraction(total[1]), claims))
    return out


def test_every_figure_has_a_caption_with_claims() -> None:
    found = captions()
    assert {c.figure for c in found} == set(re.findall(r"\]\((figures/[\w.]+)\)", DOC.read_text()))
    for c in found:
        assert c.plan.is_file(), f"{c.figure}: {c.plan} does not exist"
        assert (ROOT / "docs" / c.figure).is_file()
        assert c.claims, f"{c.figure}: the caption claims nothing the test can check"


def _check(page: Any, claim: tuple[str, ...], figure: str) -> None:
    n, what, text, total, cap, spent = claim
    if total or cap:
        assert page.locator("#total-used").inner_text() == total, figure
        assert page.locator("#total-cap").inner_text() == cap, figure
    elif spent:
        assert page.locator("#results-meta").inner_text().startswith(spent), figure
    elif what == "verdict":
        verdict = page.locator("#results .result").nth(int(n) - 1).locator(".verdict")
        assert verdict.inner_text() == text, figure
    else:
        out = "epsilon" if what == "ε" else "accuracy"
        cell = page.locator(f'tr[data-query="{int(n) - 1}"] [data-out="{out}"]')
        assert cell.inner_text() == text, f"{figure}: query {n} {what}"


def _is_run(claim: tuple[str, ...]) -> bool:
    return bool(claim[5]) or claim[1] == "verdict"


@pytest.mark.parametrize("caption", captions(), ids=lambda c: c.figure)
def test_the_page_shows_what_the_caption_says(browser: Any, caption: Caption) -> None:
    """Was: docs/ui.md's screenshots showed another plan than their captions named."""
    with serving(caption.plan, caption.total, SEED) as server:
        page = open_page(browser, server)
        for claim in (c for c in caption.claims if not _is_run(c)):
            _check(page, claim, caption.figure)
        run_claims = [c for c in caption.claims if _is_run(c)]
        if run_claims:
            run_page(page)
            for claim in run_claims:
                _check(page, claim, caption.figure)
        page.close()
