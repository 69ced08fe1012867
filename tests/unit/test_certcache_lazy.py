"""The shipped certificates are checked when a process first asks for one (issue 32, a fresh
`snapdp run`): a run that uses three of them parses and checks three, not every entry of
src/snapdp/certificates.json; what is found is what the all-at-once check found (a forged or
stale entry is still never used)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from snapdp import _certcache
from snapdp.rescaling import rescaling_for


def _args(upper: int) -> list[str]:
    r = rescaling_for(Fraction(1), Fraction(1), Fraction(0), Fraction(upper))
    assert r.applied and r.certified
    return [str(x) for x in (r.epsilon - r.slack, r.sensitivity, 0, upper)] + [
        str(r.mechanism_sensitivity),
        str(r.mechanism_epsilon),
    ]


@pytest.fixture
def shipped(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[list[list[str]]]:
    """A shipped file of two good entries, one forged and one of other code; yields the
    arguments of each entry parsed (``_from_json``), in order."""
    good = [_args(100), _args(1000)]
    entries = [_certcache.entry(a, _certcache._compute(*(Fraction(x) for x in a))) for a in good]
    forged = json.loads(json.dumps(entries[1]))
    forged["certificate"]["delta"] = "1/1000"
    stale = {**entries[0], "version": "other code"}
    path = tmp_path / "shipped.json"
    path.write_text(json.dumps({"entries": [*entries, forged, stale]}), encoding="utf-8")
    monkeypatch.setattr(_certcache, "SHIPPED", str(path))
    monkeypatch.setenv("SNAPDP_CACHE_DIR", "off")
    parsed: list[list[str]] = []
    real = _certcache._from_json

    def from_json(d: dict[str, Any]) -> Any:
        cert = real(d)
        parsed.append([str(cert.epsilon), str(cert.upper)])
        return cert

    monkeypatch.setattr(_certcache, "_from_json", from_json)
    _certcache._shipped.cache_clear()
    yield parsed
    _certcache._shipped.cache_clear()


def test_one_lookup_checks_one_entry(shipped: list[list[str]]) -> None:
    args = _args(100)
    cert = _certcache.certificate(*(Fraction(x) for x in args))
    assert cert == _certcache._compute(*(Fraction(x) for x in args))
    assert [u for _, u in shipped] == ["100"]  # only the entry asked for was parsed


def test_a_forged_entry_after_a_good_one_is_not_used(shipped: list[list[str]]) -> None:
    """Of two entries for the same parameters the last one that checks counts: the forged δ
    (last) fails its check, so the good one is used, as when every entry was checked at once."""
    args = [Fraction(x) for x in _args(1000)]
    assert _certcache._shipped()[tuple(_args(1000))] == _certcache._compute(*args)
    assert len(_certcache._shipped()) == 2  # counting checks them all: the stale one is out
