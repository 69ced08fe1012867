"""The quantile tree's branching kept on disk (docs/performance.md, "Latency"): the same tree as
the search, field for field; a kept entry spares the search; an entry that does not check out is
ignored and rewritten; ``SNAPDP_CACHE_DIR=off`` keeps nothing."""

from __future__ import annotations

import json
import os
from fractions import Fraction
from pathlib import Path

import pytest

from snapdp.data.statistics import tree_cache
from snapdp.data.statistics.math import quantile_tree
from snapdp.errors import ParameterError

F = Fraction
CASES = [
    (F(0), F(100), F(100, 1024)),  # n = 1024
    (F(0), F(100), F(1)),  # the latency benchmark's median age: n = 100
    (F(-3, 7), F(5, 3), F(1, 9)),  # n = 19, not a power of anything
    (F(0), F(1), F(2)),  # n = 1
    (F(0), F(4096), F(1)),  # n = MAX_LEAVES
    (F(0), F(500000), F(500000, 1024)),
]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SNAPDP_CACHE_DIR", str(tmp_path))
    return tmp_path / "trees"


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.json")) if folder.exists() else []


@pytest.mark.parametrize(("lower", "upper", "resolution"), CASES)
def test_a_kept_branching_builds_the_same_tree(
    cache: Path, lower: Fraction, upper: Fraction, resolution: Fraction
) -> None:
    direct = quantile_tree.tree_spec(lower, upper, resolution)
    first = tree_cache.tree_spec(lower, upper, resolution)
    assert len(_entries(cache)) == 1
    second = tree_cache.tree_spec(lower, upper, resolution)
    assert first == direct and second == direct
    assert repr(second.weight) == repr(direct.weight)


def test_a_kept_branching_spares_the_search(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lower, upper, resolution = CASES[0]
    direct = tree_cache.tree_spec(lower, upper, resolution)

    def no_search(b: int, depth: int) -> float:
        raise AssertionError("the branching was searched again")

    monkeypatch.setattr(quantile_tree, "_score", no_search)
    assert tree_cache.tree_spec(lower, upper, resolution) == direct
    # another range with the same number of leaves shares the entry
    assert tree_cache.tree_spec(F(-50), F(50), F(100, 1024)).branching == direct.branching


def _rewrite(path: Path, **change: object) -> None:
    stored = json.loads(path.read_text(encoding="utf-8"))
    stored["body"].update(change)
    stored["checksum"] = tree_cache._checksum(stored["body"])
    path.write_text(json.dumps(stored), encoding="utf-8")


@pytest.mark.parametrize(
    "forge",
    [
        {"branching": 17},  # not a candidate
        {"branching": 16, "needed": 4095},  # another n
        {"branching": True},  # not an int
        {"version": "0" * 64},  # other code
    ],
)
def test_an_entry_that_does_not_check_out_is_rewritten(
    cache: Path, forge: dict[str, object]
) -> None:
    lower, upper, resolution = CASES[4]
    direct = quantile_tree.tree_spec(lower, upper, resolution)
    tree_cache.tree_spec(lower, upper, resolution)
    (path,) = _entries(cache)
    _rewrite(path, **forge)
    assert tree_cache.tree_spec(lower, upper, resolution) == direct
    assert json.loads(path.read_text(encoding="utf-8"))["body"]["branching"] == direct.branching


def test_a_garbled_or_shared_entry_is_ignored(cache: Path) -> None:
    lower, upper, resolution = CASES[1]
    direct = quantile_tree.tree_spec(lower, upper, resolution)
    tree_cache.tree_spec(lower, upper, resolution)
    (path,) = _entries(cache)
    path.write_text("{not json", encoding="utf-8")
    assert tree_cache.tree_spec(lower, upper, resolution) == direct
    stored = json.loads(path.read_text(encoding="utf-8"))
    assert stored["body"]["branching"] == direct.branching
    if hasattr(os, "getuid"):  # a file others may write is not read
        other = 3 if direct.branching != 3 else 4
        _rewrite(path, branching=other)
        path.chmod(0o666)
        assert tree_cache.tree_spec(lower, upper, resolution) == direct


def test_the_cache_off_keeps_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SNAPDP_CACHE_DIR", "off")
    monkeypatch.chdir(tmp_path)
    assert tree_cache.trees_dir() is None
    lower, upper, resolution = CASES[2]
    assert tree_cache.tree_spec(lower, upper, resolution) == quantile_tree.tree_spec(
        lower, upper, resolution
    )
    assert list(tmp_path.rglob("*.json")) == []


def test_invalid_parameters_raise_as_the_search_does(cache: Path) -> None:
    for args in [(F(1), F(1), F(1)), (F(0), F(1), F(0)), (F(0), F(10000), F(1))]:
        with pytest.raises(ParameterError) as searched:
            quantile_tree.tree_spec(*args)
        with pytest.raises(ParameterError) as kept:
            tree_cache.tree_spec(*args)
        assert str(kept.value) == str(searched.value)
    assert _entries(cache) == []
