"""The browser half of the `snapdp ui` tests: the system Chromium (never a downloaded one) and a
page opened on a server started with a plan. The ``browser`` fixture itself lives in conftest.py
(one Chromium per test process); tests import the helpers from here."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.unit.ui._helpers import Client, write_people
from tools.ui_screenshots import ARGS

CHROMIUM = os.environ.get("SNAPDP_CHROMIUM", "/usr/bin/chromium")
__all__ = ["ARGS", "CHROMIUM", "TIMEOUT_MS", "field", "opened_page", "planned"]
TIMEOUT_MS = 90_000  # a wait for the planner, not a timing assertion


def planned(pg: Any) -> None:
    """Wait until the page has planned its document and spent nothing."""
    from playwright.sync_api import expect

    expect(pg.locator("#status")).to_have_text("planned · nothing spent", timeout=TIMEOUT_MS)


def field(pg: Any, name: str) -> Any:
    """The form control of one document field (``data-field`` attribute)."""
    return pg.locator(f'[data-field="{name}"]')


@contextmanager
def opened_page(
    browser: Any,
    start_server: Callable[..., Client],
    tmp_path: Path,
    plan: str,
    *,
    rows: int = 40,
    console_errors: bool = False,
    **server: Any,
) -> Iterator[Any]:
    """A page on a server over ``people.csv`` (``rows`` rows) and ``plan``, planned and ready.

    ``server`` holds the UiConfig fields beside plan, ledger and output (the owner's total ε,
    δ, a seed). On leaving, the page must have raised no script error (and, with
    ``console_errors``, logged no console error other than a refused request)."""
    write_people(tmp_path / "people.csv", rows)
    (tmp_path / "plan.toml").write_text(plan, encoding="utf-8")
    client = start_server(
        plan=tmp_path / "plan.toml",
        ledger=tmp_path / "ledger.sqlite",
        output=tmp_path / "out",
        **server,
    )
    context = browser.new_context(accept_downloads=True, viewport={"width": 1360, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    if console_errors:
        pg.on(
            "console",
            lambda m: (
                errors.append(m.text)
                if m.type == "error"
                and not m.text.startswith("Failed to load resource")  # a 4xx answer
                else None
            ),
        )
    pg.goto(client.server.url)
    planned(pg)
    pg.client = client
    yield pg
    context.close()
    assert errors == []
