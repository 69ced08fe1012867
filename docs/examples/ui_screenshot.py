"""The screenshots of docs/ui.md: `snapdp ui` on docs/examples/plan.toml, in headless Chromium.

    python docs/examples/ui_screenshot.py [SOURCE] [--chromium /usr/bin/chromium]

Writes docs/figures/ui_plan.png (the plan screen) and docs/figures/ui_run.png (the results of a
run against a temporary ledger). Needs Playwright for Python (the `test` extra) and a Chromium.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
from fractions import Fraction
from pathlib import Path

from playwright.sync_api import expect, sync_playwright

from snapdp.ui.server import UiConfig, UiServer

HERE = Path(__file__).resolve().parent
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "source",
        nargs="?",
        default=str(HERE / "PUMS_dup.csv"),
        help="the plan's data (default: docs/examples/PUMS_dup.csv, the plan's own source)",
    )
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    figures = HERE.parent / "figures"
    with tempfile.TemporaryDirectory() as tmp:
        server = UiServer(
            UiConfig(
                plan=HERE / "plan.toml",
                source=args.source,
                ledger=Path(tmp) / "budget.sqlite",
                output=Path(tmp) / "results",
                total_epsilon=Fraction(20),  # the data owner's budget: the page only spends
            )
        )
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=args.chromium, args=ARGS)
                page = browser.new_page(
                    viewport={"width": 1320, "height": 1100}, device_scale_factor=1
                )
                page.set_default_timeout(180_000)
                page.goto(server.url)
                expect(page.locator("#status")).to_have_text(
                    "planned · nothing spent", timeout=180_000
                )
                page.wait_for_timeout(400)  # the meter's transition
                page.screenshot(path=str(figures / "ui_plan.png"), full_page=True)
                page.click("#to-run")
                page.click("#run")
                expect(page.locator("#results-card")).to_be_visible(timeout=180_000)
                page.screenshot(path=str(figures / "ui_run.png"))  # the first screenful
                browser.close()
        finally:
            server.shutdown()


if __name__ == "__main__":
    main()
