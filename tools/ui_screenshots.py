"""The screenshots of docs/ui.md, remade from the plan each caption names, in headless Chromium.

    python tools/ui_screenshots.py [--chromium /usr/bin/chromium] [--seed 34]

Writes docs/figures/ui_plan.png (the plan screen of docs/examples/plan.toml) and
docs/figures/ui_run.png (the results of a run, from its first target, against a temporary
ledger, its noise seeded so that the figure is the same each time: NOT private, for the docs
only). Needs Playwright for Python (the `test` extra) and a Chromium.
tests/unit/ui/test_screenshots.py checks that each caption's plan exists and that the page
shows what the caption says.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from fractions import Fraction
from pathlib import Path
from typing import Any

from snapdp.ui.server import UiConfig, UiServer

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ROOT / "docs" / "figures"
#: The plan each figure shows (the captions of docs/ui.md name it) and the owner's budget.
PLAN = ROOT / "docs" / "examples" / "plan.toml"
TOTAL_EPSILON = Fraction(20)
SEED = 34
CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
WAIT_MS = 180_000


@contextmanager
def serving(plan: Path, total_epsilon: Fraction, seed: int | None) -> Iterator[UiServer]:
    """``snapdp ui PLAN --ledger L --total-epsilon T`` in a thread, L and the output temporary."""
    with tempfile.TemporaryDirectory() as tmp:
        server = UiServer(
            UiConfig(
                plan=plan,
                ledger=Path(tmp) / "budget.sqlite",
                output=Path(tmp) / "results",
                total_epsilon=total_epsilon,
                seed=seed,
            )
        )
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield server
        finally:
            server.shutdown()
            thread.join(timeout=30)


def open_page(browser: Any, server: UiServer) -> Any:
    """The page, planned."""
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1320, "height": 1100}, device_scale_factor=1)
    page.set_default_timeout(WAIT_MS)
    page.goto(server.url)
    expect(page.locator("#status")).to_have_text("planned · nothing spent", timeout=WAIT_MS)
    return page


def run_page(page: Any) -> None:
    """Review and run; wait for the results."""
    from playwright.sync_api import expect

    page.click("#to-run")
    page.click("#run")
    expect(page.locator("#results-card")).to_be_visible(timeout=WAIT_MS)


def main() -> None:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--chromium", default=CHROMIUM)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    with serving(PLAN, TOTAL_EPSILON, args.seed) as server, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=args.chromium, args=ARGS, headless=True)
        page = open_page(browser, server)
        page.wait_for_timeout(400)  # the meter's transition
        page.screenshot(path=str(FIGURES / "ui_plan.png"), full_page=True)
        run_page(page)
        # one screenful from the first result with a target: its verdict and plain-words notes
        page.evaluate("document.querySelectorAll('#results .result')[1].scrollIntoView()")
        page.screenshot(path=str(FIGURES / "ui_run.png"))
        browser.close()


if __name__ == "__main__":
    main()
