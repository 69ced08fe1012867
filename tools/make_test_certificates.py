"""Regenerate tests/data/certificates-tests.json: the rescaling certificates the test suite
computes beyond the shipped ones (src/snapdp/certificates.json), for this code version.

    PYTHONPATH=src python3 tools/make_test_certificates.py
    PYTHONPATH=src python3 tools/make_test_certificates.py --collect [PYTEST ARGS…]

Without ``--collect`` it recomputes the parameters the store lists (run it after any change to
the modules that ``snapdp._certcache.CODE_VERSION`` hashes: tests/unit/test_test_certificates.py
fails until then, and a stale entry is never seeded). With ``--collect`` it first runs pytest
(default: the README's ``-n 2`` over tests/) with a cache folder of its own, seeded with the
store's current entries only, and adds every certificate the tests computed there; run it when
tests come to ask for new parameters (until then those tests compute them in every run: slower,
never wrong). To drop entries no test asks for any more, delete the file and collect afresh.

The tests seed the store into their session's cache folder (tests/certificate_store.py), where
the library reads each entry with its usual checks. Entries are the shipped file's
(:func:`snapdp._certcache.entry`); the shipped ones and the tests that check the cache itself
(which use folders of their own) are not in it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from fractions import Fraction
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "certificates-tests.json"
COLLECT = ["tests", "-q", "-p", "no:cacheprovider", "-n", "2"]


def main(argv: list[str]) -> None:
    folder = Path(tempfile.mkdtemp(prefix="snapdp-test-certs-"))
    os.environ["SNAPDP_CACHE_DIR"] = str(folder)
    from snapdp import _certcache

    version = _certcache.CODE_VERSION
    found: dict[tuple[str, ...], dict[str, Any]] = {}
    if argv[:1] == ["--collect"]:
        sys.path.insert(0, str(ROOT))
        from tests import certificate_store

        certificate_store.seed(OUT)  # the current entries: the run computes only new ones
        _run_tests(folder, argv[1:] or COLLECT)
        for path in sorted((folder / "certificates").glob("*.json")):
            body = json.loads(path.read_text(encoding="utf-8"))["body"]
            if body["version"] == version:
                kept = ("version", "args", "certificate")
                found[tuple(body["args"])] = {k: body[k] for k in kept}
    for old in _listed():
        key = tuple(old["args"])
        if key not in found:
            found[key] = old if old.get("version") == version else _entry(list(key))
    shipped = _certcache._shipped()
    ordered = [found[k] for k in sorted(found) if k not in shipped and _readable(found[k])]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"entries": ordered}, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{len(ordered)} certificates → {OUT.relative_to(ROOT)}")


def _readable(entry: dict[str, Any]) -> bool:
    """The library's checks on reading an entry pass (a certificate they reject, e.g. a certified
    one with no shifts, is recomputed in every process whatever is stored)."""
    from snapdp import _certcache

    return _certcache._first_checked([entry["certificate"]], entry["args"]) is not None


def _listed() -> list[dict[str, Any]]:
    """The store's entries, of any code version (their parameters are kept)."""
    try:
        return list(json.loads(OUT.read_text(encoding="utf-8"))["entries"])
    except (OSError, ValueError, KeyError):
        return []


def _entry(args: list[str]) -> dict[str, Any]:
    from snapdp import _certcache

    print("computing", *args, flush=True)
    return _certcache.entry(args, _certcache._compute(*(Fraction(a) for a in args)))


def _run_tests(folder: Path, args: list[str]) -> None:
    """Run pytest with ``folder`` as the cache (tests/conftest.py then seeds nothing itself); its
    failures are its own business, the certificates it computed are collected all the same."""
    env = dict(os.environ, SNAPDP_CACHE_DIR=str(folder))
    env["SNAPDP_TEST_CERTIFICATE_LOCKS"] = str(folder / "locks")
    subprocess.run([sys.executable, "-m", "pytest", *args], cwd=ROOT, env=env, check=False)


if __name__ == "__main__":
    main(sys.argv[1:])
