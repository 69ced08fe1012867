"""The test suite's certificate store (tests/certificate_store.py): current for this code
version, seeded as the library's own cache entries (found by its lookup and checks, nothing
computed), and a stale entry is never seeded."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
from tests import certificate_store

from snapdp import _certcache


def test_the_test_certificate_store_is_current() -> None:
    stored = certificate_store.entries()
    assert stored, f"{certificate_store.STORE} is missing: run tools/make_test_certificates.py"
    stale = [e["args"] for e in stored if e.get("version") != _certcache.CODE_VERSION]
    assert not stale, f"{certificate_store.STALE} ({len(stale)} of {len(stored)} entries)"


def test_a_seeded_certificate_is_read_from_the_cache_not_computed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SNAPDP_CACHE_DIR", str(tmp_path))
    stored = certificate_store.entries()
    assert certificate_store.seed() == len(stored), certificate_store.STALE

    def compute(*args: object) -> object:
        raise AssertionError(f"computed, not read from the cache: {args}")

    monkeypatch.setattr(_certcache, "_compute", compute)
    for entry in stored:
        got = _certcache.certificate(*(Fraction(a) for a in entry["args"]))
        assert got == _certcache._from_json(entry["certificate"])


def test_a_stale_entry_is_not_seeded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SNAPDP_CACHE_DIR", str(tmp_path / "cache"))
    store = tmp_path / "store.json"
    entry = certificate_store.entries()[0]
    store.write_text(json.dumps({"entries": [{**entry, "version": "other code"}]}))
    assert certificate_store.seed(store) == 0
    assert not (tmp_path / "cache").exists()
