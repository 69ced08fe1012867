"""Shared fixtures: the location of ../shared/data (PUMS samples) relative to the repository."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


@pytest.fixture
def shared_data() -> Path:
    """The folder of PUMS samples; skips the test with a message when it is absent."""
    if not (SHARED_DATA / "PUMS.csv").is_file():
        pytest.skip(f"shared data folder not found at {SHARED_DATA} (PUMS samples absent)")
    return SHARED_DATA
