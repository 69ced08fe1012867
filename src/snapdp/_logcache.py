"""The log premise's reference values, kept on disk (docs/fast-path.md, "F3 — the noise in
doubles").

:func:`snapdp.fast_plan.log_premise_holds` compares np.log and math.log with the true logarithm
on a fixed probe of a few thousand doubles, once per process; its reference is ln u in MPFR at
200 bits rounded to the nearest double, which takes ~30 ms of every fresh process (and drawing
the probe imports ``numpy.random``). The probe and those doubles are pure functions of the code
(the probe's seed), of numpy's generator and of gmpy2/MPFR: this keeps both in a small JSON
file (each list as the base64 of its little-endian doubles), so that a later process reads them
instead (the check itself, on the running numpy and
libm, is made in every process as before; an argument the doubles do not clear is still decided
by MPFR at 200 bits).

* Where: beside the certificates (:func:`snapdp._certcache.cache_dir`), in ``logs``;
  ``SNAPDP_CACHE_DIR=off`` turns it off.
* Key: the SHA-256 of :data:`CODE_VERSION` (the source of ``fast_plan`` and of this module,
  and the gmpy2/MPFR and numpy versions).
* Written atomically, readable by its owner only; read only when the folder and the file are
  the user's own and writable by nobody else, the file parses, its checksum and code version
  match, and the probe and its references hash to :data:`CONTENT_DIGEST`, pinned here. Anything
  else is ignored and overwritten.

Nothing read from data reaches this module. The pinned digest makes an entry a pure cache: its
contents are the one probe and reference this code computes, so an entry someone else wrote (a
shorter probe, references copied from a bad np.log) is never used. A numpy whose generator drew
another probe would compute values that do not match the digest; they are then used in that
process but never kept (tests/unit/fast/test_log_cache.py checks the digest).
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import gmpy2
import numpy as np

from snapdp import _certcache

__all__ = ["CODE_VERSION", "CONTENT_DIGEST", "content_digest", "logs_dir", "premise_reference"]

#: The SHA-256 of the probe and its reference doubles (:func:`content_digest`) as
#: ``snapdp.fast_plan`` computes them; update it when the probe changes (a test says so).
CONTENT_DIGEST = "7fb67fb21f5705e40df96842dd10ede9f70e7c1e0a9e74741630569734d0ecd7"


def _code_version() -> str | None:
    """The SHA-256 of the modules the values depend on and of gmpy2/MPFR's versions; None when a
    source cannot be read (then nothing is kept)."""
    digest = hashlib.sha256(b"snapdp-log-premise-1")
    here = Path(__file__).parent
    try:
        for name in ("fast_plan", "_logcache"):
            digest.update((here / f"{name}.py").read_bytes())
    except OSError:
        return None
    digest.update(str(gmpy2.version()).encode())
    digest.update(str(gmpy2.mpfr_version()).encode())
    digest.update(np.__version__.encode())  # the probe's ordinary U* come from numpy's PCG64
    return digest.hexdigest()


CODE_VERSION = _code_version()


def logs_dir() -> Path | None:
    """The folder of the kept values, or None when the cache is off."""
    certificates = _certcache.cache_dir()
    if certificates is None or CODE_VERSION is None:
        return None
    return certificates.parent / "logs"


def premise_reference(
    compute: Callable[[], tuple[list[float], list[float]]],
) -> tuple[list[float], list[float]]:
    """``compute()``: the probe (its doubles u) and the nearest double to ln u for each, read
    from the disk when a checked entry for this code exists, else computed and kept."""
    folder = logs_dir()
    if folder is None:
        return compute()
    key = hashlib.sha256(json.dumps([CODE_VERSION, "premise"]).encode()).hexdigest()
    path = folder / f"{key}.json"
    kept = _read(path, key)
    if kept is not None:
        return kept
    probe, nearest = compute()
    if content_digest(probe, nearest) == CONTENT_DIGEST:
        _write(folder, path, key, probe, nearest)
    return probe, nearest


def content_digest(probe: list[float], nearest: list[float]) -> str:
    """The SHA-256 of the probe and its references: their count, then each list's doubles as
    little-endian IEEE 754 bytes (:func:`_doubles`)."""
    return _bytes_digest(_doubles(probe), _doubles(nearest))


def _doubles(values: list[float]) -> bytes:
    """The doubles as little-endian IEEE 754 bytes, 8 per value (their form on disk)."""
    return np.asarray(values, dtype="<f8").tobytes()


def _bytes_digest(probe: bytes, nearest: bytes) -> str:
    """:func:`content_digest` of the doubles these bytes hold."""
    digest = hashlib.sha256(len(probe).to_bytes(8, "little"))
    digest.update(probe)
    digest.update(nearest)
    return digest.hexdigest()


def _read(path: Path, key: str) -> tuple[list[float], list[float]] | None:
    body = _certcache.read_entry(path)  # the certificates' own checks (docs/mechanism.md)
    if body is None or body.get("version") != CODE_VERSION or body.get("key") != key:
        return None
    # The pinned digest is checked on the doubles' bytes themselves, so what is read is exactly
    # the pinned doubles (bytes, not text: parsing ~9,000 hexadecimal doubles took ~7 ms of a
    # fresh process).
    try:
        probe = base64.b64decode(body["probe"], validate=True)
        nearest = base64.b64decode(body["nearest"], validate=True)
    except (ValueError, KeyError, TypeError):  # binascii.Error is a ValueError
        return None
    if not probe or len(probe) != len(nearest) or len(probe) % 8:
        return None
    if _bytes_digest(probe, nearest) != CONTENT_DIGEST:
        return None
    us = np.frombuffer(probe, dtype="<f8")
    logs = np.frombuffer(nearest, dtype="<f8")
    if not (bool(np.all((us > 0) & (us < 1))) and bool(np.all(np.isfinite(logs)))):
        return None
    return us.tolist(), logs.tolist()


def _write(folder: Path, path: Path, key: str, probe: list[float], nearest: list[float]) -> None:
    body: dict[str, object] = {
        "version": CODE_VERSION,
        "key": key,
        "probe": base64.b64encode(_doubles(probe)).decode("ascii"),
        "nearest": base64.b64encode(_doubles(nearest)).decode("ascii"),
    }
    _certcache.write_entry(folder, path.name, body)
