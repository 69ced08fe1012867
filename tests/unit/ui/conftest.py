"""Fixtures of the `snapdp ui` tests: a server on a free port in a thread."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from tests.unit.ui._helpers import Client

from snapdp.ui.server import UiConfig, UiServer


@pytest.fixture
def start_server() -> Iterator[Callable[..., Client]]:
    """``start_server(**UiConfig fields)`` → a client of a running server (stopped after)."""
    servers: list[tuple[UiServer, threading.Thread]] = []

    def start(**config: Any) -> Client:
        server = UiServer(UiConfig(**config))
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        servers.append((server, thread))
        return Client(server)

    yield start
    for server, thread in servers:
        server.shutdown()
        thread.join(timeout=10)
