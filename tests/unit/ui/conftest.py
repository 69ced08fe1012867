"""Fixtures of the `snapdp ui` tests: a server on a free port in a thread, and the system
Chromium driven by Playwright (skipped, saying why, without Playwright or Chromium; .ci/run
installs Chromium with apt)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.unit.ui._browser import ARGS, CHROMIUM, TIMEOUT_MS
from tests.unit.ui._helpers import Client

from snapdp.ui.server import UiConfig, UiServer


@pytest.fixture
def start_server() -> Iterator[Callable[..., Client]]:
    """``start_server(**UiConfig fields)`` → a client of a running server (stopped after).

    The thread runs the server's loop as :meth:`UiServer.serve_forever` does, but checks for
    shutdown every 10 ms rather than every 200 ms: each test waited ~0.1 s per server to stop,
    about half the wall time of test_server.py and test_differential_api.py."""
    servers: list[tuple[UiServer, threading.Thread]] = []

    def start(**config: Any) -> Client:
        server = UiServer(UiConfig(**config))
        thread = threading.Thread(target=server.httpd.serve_forever, args=(0.01,), daemon=True)
        thread.start()
        servers.append((server, thread))
        return Client(server)

    yield start
    for server, thread in servers:
        server.shutdown()
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless system Chromium per test module (module scope: Playwright's sync API holds
    an event loop while it runs, which other tests of the process must not meet)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium; .ci/run does)")
    sync_api.expect.set_options(timeout=TIMEOUT_MS)  # waits for a shared machine's planner
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()
