"""The quantile tree's branching, kept on disk (docs/performance.md, "Latency").

:func:`snapdp.data.statistics.math.quantile_tree.tree_spec` picks the branching b in 2..16 that
minimises the stated CDF error bound; that takes tens of milliseconds (fifteen weight
computations) in every fresh process that releases a quantile. The choice is a pure function of
one public number, the leaves needed, n = ⌈(upper − lower)/resolution⌉ (each candidate's depth
is the smallest with b**depth >= n), and of the code: this keeps b per n in a small JSON file,
and a later process builds the tree with that b (:func:`tree_spec` with ``branching``, which
computes the one weight it needs: the same tree, field for field).

* Where: beside the certificates (:func:`snapdp._certcache.cache_dir`), in ``trees``;
  ``SNAPDP_CACHE_DIR=off`` turns it off.
* Key: the SHA-256 of n and of :data:`CODE_VERSION` (the source of ``quantile_tree`` and of this
  module, and the numpy version the weights are computed with).
* Written atomically, readable by its owner only; read only when the folder and the file are
  the user's own and writable by nobody else, the file parses, its checksum, code version and n
  match, and b is a candidate whose tree fits (:data:`~.quantile_tree.MAX_LEAVES`). Anything
  else is ignored and overwritten.

Only declared bounds and the query's resolution reach this module: nothing read from the data is
a key or a value here, and whether an entry exists does not depend on the data.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import stat
import tempfile
from fractions import Fraction
from pathlib import Path

import numpy as np

from snapdp._certcache import cache_dir
from snapdp.data.statistics.math import quantile_tree
from snapdp.data.statistics.math.quantile_tree import BRANCHING_CANDIDATES, MAX_LEAVES, TreeSpec

__all__ = ["CODE_VERSION", "tree_spec", "trees_dir"]


def _code_version() -> str | None:
    """The SHA-256 of the modules the choice depends on and of numpy's version; None when a
    source cannot be read (then nothing is cached)."""
    digest = hashlib.sha256(b"snapdp-tree-branching-1")
    try:
        for module in (quantile_tree.__file__, __file__):
            digest.update(Path(module).read_bytes())
    except (OSError, TypeError):
        return None
    digest.update(np.__version__.encode())
    return digest.hexdigest()


CODE_VERSION = _code_version()


def trees_dir() -> Path | None:
    """The folder of the kept branchings, or None when the cache is off."""
    certificates = cache_dir()
    if certificates is None or CODE_VERSION is None:
        return None
    return certificates.parent / "trees"


def tree_spec(lower: Fraction, upper: Fraction, resolution: Fraction) -> TreeSpec:
    """``quantile_tree.tree_spec(lower, upper, resolution)``, its branching read from the disk
    when a checked entry exists, else chosen and kept (the same tree either way)."""
    needed = _needed(lower, upper, resolution)
    folder = trees_dir()
    if needed is None or folder is None:  # invalid parameters raise there, with their message
        return quantile_tree.tree_spec(lower, upper, resolution)
    name = _name(needed)
    kept = _read(folder / name, needed)
    if kept is not None:
        return quantile_tree.tree_spec(lower, upper, resolution, branching=kept)
    spec = quantile_tree.tree_spec(lower, upper, resolution)
    _write(folder, name, needed, spec.branching)
    return spec


def _needed(lower: Fraction, upper: Fraction, resolution: Fraction) -> int | None:
    """n = ⌈(upper − lower)/resolution⌉ (at least 1) for valid parameters, else None."""
    if not all(isinstance(x, Fraction) for x in (lower, upper, resolution)):
        return None
    if not lower < upper or resolution <= 0:
        return None
    needed = max(1, math.ceil((upper - lower) / resolution))
    return needed if needed <= MAX_LEAVES else None


@functools.lru_cache(maxsize=256)
def _name(needed: int) -> str:
    return hashlib.sha256(json.dumps([CODE_VERSION, needed]).encode()).hexdigest() + ".json"


def _depth(b: int, needed: int) -> int:
    depth = 1
    while b**depth < needed:
        depth += 1
    return depth


def _checksum(body: dict[str, object]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _private(path: Path) -> bool:
    """Owned by this user and writable by no one else (always true without POSIX modes)."""
    if not hasattr(os, "getuid"):
        return True
    info = path.stat()
    return info.st_uid == os.getuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _read(path: Path, needed: int) -> int | None:
    try:
        if not (_private(path.parent) and _private(path)):
            return None
        stored = json.loads(path.read_text(encoding="utf-8"))
        body = stored["body"]
        if stored["checksum"] != _checksum(body):
            return None
        if body["version"] != CODE_VERSION or body["needed"] != needed:
            return None
        b = body["branching"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if type(b) is not int or b not in BRANCHING_CANDIDATES:
        return None
    return b if b ** _depth(b, needed) <= MAX_LEAVES else None


def _write(folder: Path, name: str, needed: int, branching: int) -> None:
    body: dict[str, object] = {"version": CODE_VERSION, "needed": needed, "branching": branching}
    text = json.dumps({"body": body, "checksum": _checksum(body)}, sort_keys=True)
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _private(folder):
            return
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, folder / name)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        return
