"""Shared fixtures: the PUMS samples live in ``<repo>/../shared/data``, beside the repository."""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# numpy's BLAS on one thread in the test processes and everything they start, as the snapdp
# command runs it (snapdp._blas): OpenBLAS's idle threads spin, and on two cores shared by two
# xdist workers that spinning takes CPU from the other worker. Set before numpy is imported here;
# the workers inherit it. tests/unit/test_blas_threads.py clears it for its own processes.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pytest
from hypothesis import settings

from tests import certificate_store

# Property tests run the same examples on every run (a fixed seed derived from each test), so a CI
# failure is reproducible and no run is flaky; a loaded machine gets no per-example deadline.
settings.register_profile("snapdp", derandomize=True, deadline=None, print_blob=True)
settings.load_profile("snapdp")

REPO_ROOT = Path(__file__).resolve().parents[1]
# Certificates cached on disk go to a fresh folder per test process, not the user's cache, seeded
# with the certificates the tests need beyond the shipped ones (tests/certificate_store.py); the
# folder goes when the process ends. Tests of the cache itself point
# SNAPDP_CACHE_DIR at their own empty folder, so they still compute.
# The xdist workers inherit both variables (they start after this file is read), so they share
# the folder and the certificate locks below.
LOCKS = "SNAPDP_TEST_CERTIFICATE_LOCKS"
if "SNAPDP_CACHE_DIR" not in os.environ:
    _cache = tempfile.mkdtemp(prefix="snapdp-cache-")
    atexit.register(shutil.rmtree, _cache, True)
    os.environ["SNAPDP_CACHE_DIR"] = _cache
    os.environ[LOCKS] = os.path.join(_cache, "locks")
    certificate_store.seed()

# SNAPDP_SHARED_DATA points a git worktree (whose parent has no shared/) at the PUMS folder.
SHARED_DATA = Path(os.environ.get("SNAPDP_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


# The order xdist hands out work under `pytest -n 2 --dist loadgroup` (pyproject.toml:
# --no-loadscope-reorder, so this order is the one it keeps): the longest units first, so that no
# long one is left for the end while the other worker idles. A unit is a group (every test of it
# runs on one worker, one after the other) or, outside the groups, a single test; each entry
# below is a group's name or a file (its tests), ordered by the longest unit it holds in the
# junit report of a full run on 2026-11-27 (seconds in the comments); the rest follow in
# collection order. The Spark group holds one JVM for every Spark test
# (tests/unit/data/engines/conftest.py).
ORDER = (
    "spark",  # 350 s (the two groups of that run, now one)
    "tests/unit/data/engines/test_spark_cluster.py",  # 57 s: its own master, worker, driver
    "quantile_coverage_at_scale",  # 46 s: one module-scoped release of every configuration
    "tests/unit/verify/test_certify_random.py",  # 26 s
    "doc_examples",  # 23 s
    "tests/unit/data/test_exponential_quantiles.py",  # 22 s
    "tests/unit/data/test_groups_from_data_units.py",  # 22 s
    "tests/unit/data/test_quantile_values.py",  # 21 s
    "browser",  # 16 s
    "tests/statistical/test_release_coverage.py",  # 14 s
    "browser_targets",  # 13 s
    "coverage_at_scale",  # 12 s
    "browser_results",  # 12 s
    "tests/unit/data/test_sample_spread_accuracy.py",  # 10 s
    "tests/unit/data/test_quantile_stoploss.py",  # 8 s
    "tree_branching",  # 7 s
    "tests/unit/ui/test_browser_delta.py",  # 6 s
    "plan_combination",  # 6 s
    "tests/unit/data/test_sample_variance.py",  # 6 s
    "tests/unit/data/plan/test_plan_promise.py",  # 5 s
    "tests/unit/test_ieee.py",  # 5 s
)
# Files whose tests run as one group, on one worker. Under `--dist loadgroup` xdist hands out
# the other tests one by one, so a file's tests land on both workers and each worker pays again
# for what they share: a module-scoped fixture (the releases of the two coverage-at-scale files,
# ~30 s and ~15 s; the spread releases; the analysis report; one Chromium per module in the
# browser files), a process's cache (the quantile tree's branching search; the release over D
# that test_differential.py's cases share, one per source and front end), or the certificates
# of the same mechanisms when both workers certify them at once (the certificate cache on disk
# is shared, but only once written).
GROUP_OF_FILE = {
    "tests/unit/data/plan/test_plan_combination.py": "plan_combination",
    "tests/statistical/test_quantile_coverage_at_scale.py": "quantile_coverage_at_scale",
    "tests/statistical/test_coverage_at_scale.py": "coverage_at_scale",
    "tests/unit/data/test_tree_branching.py": "tree_branching",
    "tests/unit/data/test_spread_at_the_bounds.py": "spread_at_the_bounds",
    "tests/unit/data/test_release_neighbours.py": "release_neighbours",
    "tests/unit/analysis/test_analysis_report.py": "analysis_report",
    "tests/unit/ui/test_browser.py": "browser",
    "tests/unit/ui/test_browser_results.py": "browser_results",
    "tests/unit/ui/test_browser_targets.py": "browser_targets",
    "tests/unit/data/test_differential.py": "differential",
}


def _relative(item: pytest.Item) -> str:
    return item.path.relative_to(REPO_ROOT).as_posix()


def _first_rank(item: pytest.Item) -> int:
    for mark in item.iter_markers("xdist_group"):
        name = mark.args[0] if mark.args else mark.kwargs.get("name")
        if name in ORDER:
            return ORDER.index(name)
    path = _relative(item)
    return ORDER.index(path) if path in ORDER else len(ORDER)


def pytest_itemcollected(item: pytest.Item) -> None:
    """The group of ``GROUP_OF_FILE`` (here, before xdist reads the groups)."""
    group = GROUP_OF_FILE.get(_relative(item))
    if group is not None and not any(item.iter_markers("xdist_group")):
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The order above (after tests/unit/data/engines/conftest.py has put every test using
    ``spark_session`` in a group); a stable sort, so collection order within each rank."""
    items.sort(key=_first_rank)


@pytest.fixture(scope="session")
def pums() -> Path:
    """The folder of PUMS CSVs; the test is skipped, saying why, when it is absent."""
    if not (SHARED_DATA / "PUMS.csv").is_file():
        pytest.skip(f"PUMS data folder absent: expected {SHARED_DATA} (beside the repository)")
    return SHARED_DATA


@pytest.fixture(scope="session", autouse=True)
def _one_worker_certifies_each_mechanism() -> Iterator[None]:
    """Two xdist workers that need the same rescaling certificate at once (the same ε and
    bounds in tests that run side by side) took turns computing it: the disk cache holds it only
    once written. Here the second waits on a lock per certificate, then reads it from the cache.
    What the library computes is unchanged; only who computes it."""
    folder = os.environ.get(LOCKS)
    try:
        import fcntl
    except ImportError:  # not POSIX: no locks, each worker certifies for itself
        folder = None
    if folder is None:
        yield
        return
    from snapdp import _certcache

    real = _certcache.certificate
    os.makedirs(folder, exist_ok=True)

    def certificate(*args: Any, **kwargs: Any) -> Any:
        name = hashlib.sha256(repr((args, sorted(kwargs.items()))).encode()).hexdigest()
        with open(os.path.join(folder, name), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            return real(*args, **kwargs)

    _certcache.certificate = certificate
    yield
    _certcache.certificate = real


# Tests of certification itself: each of their modules gets an empty cache folder of its own, so
# the certificates they ask for are computed there as in a user's first run, never read from
# the session's folder and its seeded store (the cache's own tests use folders of their own).
CERTIFYING = (
    "tests/unit/verify/",
    "tests/unit/test_rescaling.py",
    "tests/unit/data/test_calibration.py",
)


@pytest.fixture(scope="module", autouse=True)
def _certification_tests_compute(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    path = request.node.path.relative_to(REPO_ROOT).as_posix()
    if not path.startswith(CERTIFYING):
        yield
        return
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SNAPDP_CACHE_DIR", str(tmp_path_factory.mktemp("certifying-cache")))
        yield


@pytest.fixture(autouse=True)
def _fresh_mechanism_parameters(request: pytest.FixtureRequest) -> Iterator[None]:
    """``snapdp.mechanism`` keeps each exact parameter set's rescaling and parameters for the
    process. A test that monkeypatches what they are computed from (γ, the certificates) must
    neither see parameters kept before nor leave its own behind, and a test of certification
    must certify: both start and end with none kept."""
    path = request.node.path.relative_to(REPO_ROOT).as_posix()
    if "monkeypatch" not in request.fixturenames and not path.startswith(CERTIFYING):
        yield
        return
    from snapdp import mechanism

    mechanism._parameters.cache_clear()
    yield
    mechanism._parameters.cache_clear()
