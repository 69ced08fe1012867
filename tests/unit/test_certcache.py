"""The certificates' disk cache (docs/mechanism.md, "Certificates on disk").

A stored certificate is returned equal to the computed one; a corrupt, foreign (other
parameters, other code version), tampered-checksum or group-writable entry is ignored and
recomputed; ``SNAPDP_CACHE_DIR=off`` writes nothing; no temporary file is left behind.
"""

from __future__ import annotations

import json
import os
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from snapdp import _certcache
from snapdp.rescaling import rescaling_for
from snapdp.shift import _shift_certificate

ARGS: tuple[Fraction, ...] | None = None


def _args() -> tuple[Fraction, ...]:
    global ARGS
    if ARGS is None:
        r = rescaling_for(Fraction(1), Fraction(1), Fraction(0), Fraction(100))
        assert r.applied and r.certified
        ARGS = (
            r.epsilon - r.slack,
            r.sensitivity,
            Fraction(0),
            Fraction(100),
            r.mechanism_sensitivity,
            r.mechanism_epsilon,
        )
    return ARGS


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[int]:
    monkeypatch.setenv("SNAPDP_CACHE_DIR", str(tmp_path))
    calls: list[int] = []
    real = _certcache._compute

    def compute(*a: Any) -> Any:
        calls.append(1)
        return real(*a)

    monkeypatch.setattr(_certcache, "_compute", compute)
    return calls


def _files(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "certificates").iterdir())


def test_stored_and_reused(counted: list[int], tmp_path: Path) -> None:
    first = _certcache.certificate(*_args())
    assert first.certified and len(counted) == 1
    (entry,) = _files(tmp_path)
    assert not entry.name.startswith(".tmp")
    if hasattr(os, "getuid"):
        assert entry.stat().st_mode & 0o077 == 0
    again = _certcache.certificate(*_args())
    assert again == first and len(counted) == 1  # read from disk, not recomputed


def _tamper(entry: Path, change: Any) -> None:
    stored = json.loads(entry.read_text())
    change(stored)
    entry.write_text(json.dumps(stored))


@pytest.mark.parametrize(
    "change",
    [
        lambda s: s["body"]["certificate"].update(certified=False),  # checksum no longer matches
        lambda s: s["body"].update(version="other code"),
        lambda s: s.update(body={"x": 1}, checksum=_certcache._checksum({"x": 1})),
        lambda s: s["body"].__setitem__("args", ["1"] * 6),
    ],
)
def test_corrupt_or_foreign_entries_are_recomputed(
    counted: list[int], tmp_path: Path, change: Any
) -> None:
    first = _certcache.certificate(*_args())
    (entry,) = _files(tmp_path)
    _tamper(entry, change)
    assert _certcache.certificate(*_args()) == first
    assert len(counted) == 2
    assert _certcache.certificate(*_args()) == first  # rewritten: read again
    assert len(counted) == 2


def test_garbage_and_group_writable_entries_are_ignored(counted: list[int], tmp_path: Path) -> None:
    first = _certcache.certificate(*_args())
    (entry,) = _files(tmp_path)
    entry.write_bytes(b"\x00not json")
    assert _certcache.certificate(*_args()) == first and len(counted) == 2
    if hasattr(os, "getuid"):
        entry.chmod(0o666)
        assert _certcache.certificate(*_args()) == first and len(counted) == 3


def test_cache_off_writes_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SNAPDP_CACHE_DIR", "off")
    assert _certcache.cache_dir() is None
    monkeypatch.chdir(tmp_path)
    _certcache.certificate(*_args())
    assert list(tmp_path.iterdir()) == []


def test_default_folder_is_the_user_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SNAPDP_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere")
    folder = _certcache.cache_dir()
    assert folder is not None and folder.parts[-2:] == ("snapdp", "certificates")


def test_an_entry_that_contradicts_itself_is_recomputed(counted: list[int], tmp_path: Path) -> None:
    """A well-formed entry with a valid checksum whose δ or slack disagrees with what can be
    recomputed cheaply is not trusted."""
    first = _certcache.certificate(*_args())
    (entry,) = _files(tmp_path)

    def forge(**fields: Any) -> None:
        stored = json.loads(entry.read_text())
        stored["body"]["certificate"].update(fields)
        stored["checksum"] = _certcache._checksum(stored["body"])
        entry.write_text(json.dumps(stored))

    for fields in ({"delta": "1/1000"}, {"slack": "1/1000"}, {"slack_bound": "0"}):
        forge(**fields)
        assert _certcache.certificate(*_args()) == first
    assert len(counted) == 4


def test_shipped_certificates_equal_recomputed_ones(counted: list[int]) -> None:
    """The package's certificates (tools/make_certificates.py) are used without computing, and
    are what the verifier computes. Fails when the certifying code changed since they were made
    (a run then ignores them and computes every certificate: regenerate them)."""
    shipped = _certcache._shipped()
    assert shipped, "src/snapdp/certificates.json is stale: run tools/make_certificates.py"
    args = (Fraction(1) - Fraction(1, 1 << 49), Fraction(1), Fraction(0), Fraction(1 << 40))
    r = rescaling_for(Fraction(1), 1, 0, 1 << 40)
    key = [str(x) for x in (*args, r.mechanism_sensitivity, r.mechanism_epsilon)]
    assert tuple(key) in shipped
    got = _certcache.certificate(*(Fraction(k) for k in key))
    assert len(counted) == 0  # shipped: nothing computed
    eps, sens, lo, hi, sens_r, eps_r = (Fraction(k) for k in key)
    assert got == _shift_certificate(eps, sens, lo, hi, sens_r, None, eps_r, False)


def test_shipped_entries_of_other_code_or_inconsistent_are_ignored(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cert = _certcache._compute(*_args())
    good = _certcache.entry([str(a) for a in _args()], cert)
    stale = {**good, "version": "other code"}
    forged = json.loads(json.dumps(good))
    forged["certificate"]["delta"] = "1/1000"
    for entries, expect in (([good], 1), ([stale], 0), ([forged], 0), (["junk"], 0)):
        path = tmp_path / "shipped.json"
        path.write_text(json.dumps({"entries": entries}))
        monkeypatch.setattr(_certcache, "SHIPPED", str(path))
        _certcache._shipped.cache_clear()
        assert len(_certcache._shipped()) == expect
    _certcache._shipped.cache_clear()
