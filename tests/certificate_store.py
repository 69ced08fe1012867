"""The test suite's own certificate store (tests/data/certificates-tests.json): the rescaling
certificates the tests compute beyond those shipped with the package, made by
``tools/make_test_certificates.py`` and seeded into each test session's fresh cache folder
(tests/conftest.py). An entry is the shipped file's (``snapdp._certcache.entry``: code version,
parameters, certificate); seeded, it is the library's own cache entry, read with the library's
usual checks. tests/unit/test_test_certificates.py fails when the store is stale."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

STORE = Path(__file__).resolve().parent / "data" / "certificates-tests.json"
STALE = f"{STORE.name} is stale: run PYTHONPATH=src python3 tools/make_test_certificates.py"


def entries(store: Path = STORE) -> list[dict[str, Any]]:
    """Every entry of the store, of whatever code version (none when the file is absent)."""
    if not store.is_file():
        return []
    return list(json.loads(store.read_text(encoding="utf-8"))["entries"])


def seed(store: Path = STORE) -> int:
    """Write the store's entries of this code version into the certificates' cache folder
    (``snapdp._certcache.cache_dir()``), each under the name and in the form the library gives
    one it computed itself; entries of other code versions are left out (the library would not
    find them either). The number written."""
    from snapdp import _certcache

    version = _certcache.CODE_VERSION
    folder = _certcache.cache_dir()
    if version is None or folder is None:
        return 0
    written = 0
    for entry in entries(store):
        if entry.get("version") != version:
            continue
        name = hashlib.sha256(json.dumps([version, *entry["args"]]).encode()).hexdigest()
        _certcache.write_entry(folder, name + ".json", entry)
        written += 1
    return written
