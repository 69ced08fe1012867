"""Shared fixtures: the PUMS files live in ``<repo>/../shared/data`` (not in the repo)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def pums() -> Path:
    """The folder of PUMS CSVs; the test is skipped, saying why, when it is absent."""
    if not (SHARED_DATA / "PUMS.csv").is_file():
        pytest.skip(f"PUMS data folder absent: expected {SHARED_DATA} (beside the repository)")
    return SHARED_DATA
