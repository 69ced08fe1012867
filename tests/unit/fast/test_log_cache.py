"""The log premise's reference doubles kept on disk (issue 32, docs/fast-path.md, "F3 — the
noise in doubles"): a later process reads them instead of computing ~4,600 logarithms in MPFR;
they are the computed doubles bit for bit, the verdict is the same, and a changed or foreign
entry is ignored."""

from __future__ import annotations

import base64
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from snapdp import _certcache, _logcache, fast_plan


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SNAPDP_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(fast_plan, "_LOG_CHECKED", None)
    return tmp_path / "logs"


def _no_mpfr_logs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = fast_plan._true_logs

    def counted(us: np.ndarray) -> list[object]:
        calls.append(len(us))
        return real(us)

    monkeypatch.setattr(fast_plan, "_true_logs", counted)
    return calls


def test_a_later_check_reads_the_kept_doubles(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _no_mpfr_logs(monkeypatch)
    assert fast_plan.log_premise_holds()
    assert len(calls) == 1 and len(list(cache.glob("*.json"))) == 1
    monkeypatch.setattr(fast_plan, "_LOG_CHECKED", None)  # as a fresh process
    assert fast_plan.log_premise_holds()
    assert len(calls) == 1  # no MPFR logarithm of the probe the second time


def test_the_kept_doubles_are_the_computed_ones(cache: Path) -> None:
    us = fast_plan._log_probe()
    want = (us.tolist(), [float(t) for t in fast_plan._true_logs(us)])
    fresh = _logcache.premise_reference(fast_plan._premise_reference)
    kept = _logcache.premise_reference(lambda: pytest.fail("recomputed"))
    for got in (fresh, kept):
        assert [[v.hex() for v in part] for part in got] == [[v.hex() for v in p] for p in want]


def test_a_later_check_draws_no_probe(cache: Path) -> None:
    assert fast_plan.log_premise_holds()
    code = (
        "import sys\n"
        "from snapdp import fast_plan\n"
        "assert fast_plan.log_premise_holds()\n"
        "print('numpy.random' in sys.modules)\n"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = (
        str(Path(fast_plan.__file__).parents[1]) + os.pathsep + env.get("PYTHONPATH", "")
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("ulps", [0, 8, 16, 17, 64])
def test_the_check_from_kept_doubles_is_the_old_check(ulps: int) -> None:
    us = fast_plan._log_probe()[::5]
    true = fast_plan._true_logs(us)
    nearest = np.array([float(t) for t in true])
    asked: list[int] = []

    def exact(i: int) -> object:
        asked.append(i)
        return true[i]

    rng = np.random.default_rng(ulps)
    logs = np.log(us) * (1 + rng.integers(-ulps, ulps + 1, us.size) * 2.0**-52)
    assert fast_plan._premise_check(nearest, logs, exact) == fast_plan._within_premise(true, logs)
    assert ulps > 8 or not asked  # what the doubles clear is never asked of MPFR


def test_a_bad_log_still_fails_with_kept_doubles(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert fast_plan.log_premise_holds()
    monkeypatch.setattr(fast_plan, "_LOG_CHECKED", None)
    real = math.log
    monkeypatch.setattr(math, "log", lambda u: real(u) * (1 + 2.0**-40))
    with pytest.warns(RuntimeWarning, match="less accurate"):
        assert not fast_plan.log_premise_holds()


def _b64(values: object) -> str:
    return base64.b64encode(np.asarray(values, dtype="<f8").tobytes()).decode("ascii")


@pytest.mark.parametrize(
    "harm", ["value", "probe", "short", "copied", "not base64", "checksum", "version", "mode"]
)
def test_a_changed_or_foreign_entry_is_ignored(cache: Path, harm: str) -> None:
    want = fast_plan._premise_reference()
    _logcache.premise_reference(lambda: want)
    (entry,) = cache.glob("*.json")
    stored = json.loads(entry.read_text(encoding="utf-8"))
    body = stored["body"]
    assert body["probe"] == _b64(want[0]) and body["nearest"] == _b64(want[1])
    if harm == "value":  # a forged value with its checksum left as it was
        body["nearest"] = _b64([want[1][0] * 2, *want[1][1:]])
    elif harm == "probe":  # a probe cut short, its checksum recomputed
        body["probe"] = _b64(want[0][:1])
        stored["checksum"] = _certcache._checksum(body)
    elif harm == "short":  # a one-point probe with its true reference, checksum recomputed
        body["probe"] = _b64([0.5])
        body["nearest"] = _b64([math.log(0.5)])
        stored["checksum"] = _certcache._checksum(body)
    elif harm == "copied":  # references copied from a libm 32 ulps off, checksum recomputed
        body["nearest"] = _b64(np.log(np.array(want[0])) * (1 + 2.0**-47))
        stored["checksum"] = _certcache._checksum(body)
    elif harm == "not base64":  # a character base64 does not use, checksum recomputed
        body["probe"] = "*" + body["probe"][1:]
        stored["checksum"] = _certcache._checksum(body)
    elif harm == "checksum":
        stored["checksum"] = "0" * 64
    elif harm == "version":
        body["version"] = "other code"
        stored["checksum"] = _certcache._checksum(body)
    entry.write_text(json.dumps(stored), encoding="utf-8")
    if harm == "mode":
        if not hasattr(os, "getuid"):
            pytest.skip("POSIX modes only")
        entry.chmod(0o666)
    recomputed: list[int] = []

    def compute() -> tuple[list[float], list[float]]:
        recomputed.append(1)
        return want

    assert _logcache.premise_reference(compute) == want
    assert recomputed == [1]


def test_the_cache_off_computes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SNAPDP_CACHE_DIR", "off")
    assert _logcache.logs_dir() is None
    got = _logcache.premise_reference(lambda: ([0.5], [math.log(0.5)]))
    assert got == ([0.5], [math.log(0.5)])


def test_the_pinned_digest_is_the_computed_probe_and_references() -> None:
    """If the probe changes, update _logcache.CONTENT_DIGEST to this digest (else nothing is
    kept: every process computes the references, as before the cache)."""
    probe, nearest = fast_plan._premise_reference()
    assert _logcache.content_digest(probe, nearest) == _logcache.CONTENT_DIGEST


def test_values_other_than_the_pinned_ones_are_never_kept(cache: Path) -> None:
    _logcache.premise_reference(lambda: ([0.5], [math.log(0.5)]))
    assert not cache.exists() or not list(cache.glob("*.json"))
