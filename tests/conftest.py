"""Shared fixtures: the PUMS samples live in ``<repo>/../shared/data``, beside the repository."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests run the same examples on every run (a fixed seed derived from each test), so a CI
# failure is reproducible and no run is flaky; a loaded machine gets no per-example deadline.
settings.register_profile("snapdp", derandomize=True, deadline=None, print_blob=True)
settings.load_profile("snapdp")

# Certificates cached on disk go to a fresh folder per test process, not the user's cache;
# the folder goes when the process ends.
if "SNAPDP_CACHE_DIR" not in os.environ:
    _cache = tempfile.mkdtemp(prefix="snapdp-cache-")
    atexit.register(shutil.rmtree, _cache, True)
    os.environ["SNAPDP_CACHE_DIR"] = _cache

REPO_ROOT = Path(__file__).resolve().parents[1]
# SNAPDP_SHARED_DATA points a git worktree (whose parent has no shared/) at the PUMS folder.
SHARED_DATA = Path(os.environ.get("SNAPDP_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


# The longest units of work under `pytest -n 2 --dist loadgroup` (one JVM each for the two Spark
# groups), started first, one per worker; everything else follows in collection order and fills
# in (pyproject.toml: --no-loadscope-reorder, so this order is the one xdist hands out).
FIRST_GROUPS = ("spark", "spark_csv", "doc_examples")


def _first_rank(item: pytest.Item) -> int:
    for mark in item.iter_markers("xdist_group"):
        name = mark.args[0] if mark.args else mark.kwargs.get("name")
        if name in FIRST_GROUPS:
            return FIRST_GROUPS.index(name)
    return len(FIRST_GROUPS)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The groups of FIRST_GROUPS first (after tests/unit/data/engines/conftest.py has put every
    test using ``spark_session`` in a group), otherwise the collection order."""
    items.sort(key=_first_rank)


@pytest.fixture(scope="session")
def pums() -> Path:
    """The folder of PUMS CSVs; the test is skipped, saying why, when it is absent."""
    if not (SHARED_DATA / "PUMS.csv").is_file():
        pytest.skip(f"PUMS data folder absent: expected {SHARED_DATA} (beside the repository)")
    return SHARED_DATA
