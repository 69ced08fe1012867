"""A persistent cache of the rescaling's per-shift certificates (docs/mechanism.md, "Certificates
on disk").

A certificate is a pure function of public parameters (ε, Δ, bounds and the rescaled (ε_r, Δ_r))
and of the code that computes it, and takes 0.05–4 s; this keeps each one in a small JSON file so
that the next process reuses it; the common ones also ship with the package (:data:`SHIPPED`,
made by ``tools/make_certificates.py``, checked the same way but for the ownership test, and used
only by the code version that made them). Nothing here depends on data.

* Where: ``$SNAPDP_CACHE_DIR`` if set (``off`` disables the cache), else the platform's user
  cache folder (``$XDG_CACHE_HOME`` or ``~/.cache`` on Linux, ``~/Library/Caches`` on macOS,
  ``%LOCALAPPDATA%`` on Windows), in ``snapdp/certificates``.
* Key: the SHA-256 of the exact parameters and of :data:`CODE_VERSION` (a hash of the source of
  every module the certificate's value depends on, and of the gmpy2/MPFR versions), so an
  entry written by other code is never found.
* Written atomically (a private temporary file, then a rename), readable by its owner only.
* Read only after checks: the folder and the file belong to the current user and are not
  writable by anyone else (POSIX), the file parses, its stored parameters and code version equal
  the ones asked for exactly, its SHA-256 checksum matches its content, its δ equals the one
  recomputed from the parameters, and a certified entry's slack, slack bound and per-shift
  excesses agree with the verdict. Anything else is ignored, recomputed and overwritten; a cache
  that cannot be written is silently skipped.

What a forged entry could do is in docs/mechanism.md: it must be written by the user's own
account, which could equally change the installed code.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

import gmpy2

from snapdp._exact import mpq
from snapdp.parameters import compute_parameters
from snapdp.shift import SLACK_BOUND, ShiftCertificate, ShiftLoss, _shift_certificate

__all__ = ["CODE_VERSION", "SHIPPED", "cache_dir", "certificate", "entry"]

SHIPPED = "certificates.json"
"""Package data: certificates for common parameters, made by ``tools/make_certificates.py``."""

_MODULES = ("_exact", "distribution", "ieee", "parameters", "shift", "snapping", "_certcache")


def _code_version() -> str | None:
    """The SHA-256 of the certifying modules' source and of gmpy2/MPFR's versions; None when a
    source file cannot be read (then nothing is cached or shipped: every certificate is
    computed)."""
    digest = hashlib.sha256()
    here = Path(__file__).parent
    try:
        for name in _MODULES:
            digest.update(name.encode())
            digest.update((here / f"{name}.py").read_bytes())
    except OSError:
        return None
    digest.update(str(gmpy2.version()).encode())
    digest.update(str(gmpy2.mpfr_version()).encode())
    return digest.hexdigest()


CODE_VERSION = _code_version()


def cache_dir() -> Path | None:
    """The certificates' folder, or None when the cache is off (``SNAPDP_CACHE_DIR=off``, or
    the code version is unknown)."""
    if CODE_VERSION is None:
        return None
    env = os.environ.get("SNAPDP_CACHE_DIR")
    if env is not None:
        if env.strip().lower() in ("", "off", "0", "none"):
            return None
        return Path(env) / "certificates"
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    elif os.name == "nt":
        base = Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "snapdp" / "certificates"


def certificate(
    eps: Fraction, sens: Fraction, lo: Fraction, hi: Fraction, sens_r: Fraction, eps_r: Fraction
) -> ShiftCertificate:
    """The rescaling's certificate (``_shift_certificate(eps, sens, lo, hi, sens_r, None, eps_r,
    False)``): from the certificates shipped with the package (:data:`SHIPPED`, made by
    ``tools/make_certificates.py``) or the disk cache when a checked entry exists, else computed
    and stored."""
    args = [str(x) for x in (eps, sens, lo, hi, sens_r, eps_r)]
    shipped = _shipped().get(tuple(args))
    if shipped is not None:
        return shipped
    folder = cache_dir()
    name = hashlib.sha256(json.dumps([CODE_VERSION, *args]).encode()).hexdigest() + ".json"
    if folder is not None:
        found = _read(folder / name, args)
        if found is not None:
            return found
    cert = _compute(eps, sens, lo, hi, sens_r, eps_r)
    if folder is not None:
        _write(folder, name, args, cert)
    return cert


@functools.lru_cache(maxsize=1)
def _shipped() -> Mapping[tuple[str, ...], ShiftCertificate]:
    """The shipped certificates of this code version, each checked like a disk entry when it is
    first asked for (a certificate made by other code, or inconsistent, is left out): a process
    checks the few it uses, not all of them (:class:`_Shipped`)."""
    if CODE_VERSION is None:
        return _Shipped({})
    try:
        data = json.loads((Path(__file__).parent / SHIPPED).read_text(encoding="utf-8"))
        entries = list(data["entries"])
    except (OSError, ValueError, KeyError, TypeError):
        return _Shipped({})
    raw: dict[tuple[str, ...], list[Any]] = {}
    for entry in entries:
        try:
            if entry["version"] == CODE_VERSION:
                raw.setdefault(tuple(entry["args"]), []).append(entry["certificate"])
        except (KeyError, TypeError):
            continue
    return _Shipped(raw)


class _Shipped(Mapping[tuple[str, ...], ShiftCertificate]):
    """The shipped entries of this code version by their parameters; an entry is parsed and
    checked (:func:`_matches`) the first time it is looked up, and only a checked one is found
    (iterating or counting checks them all). Of several entries for the same parameters the
    last one that checks counts, as when they were all checked at once."""

    def __init__(self, raw: dict[tuple[str, ...], list[Any]]) -> None:
        self._raw = raw
        self._checked: dict[tuple[str, ...], ShiftCertificate | None] = {}

    def _lookup(self, key: tuple[str, ...]) -> ShiftCertificate | None:
        if key not in self._checked:
            self._checked[key] = _first_checked(reversed(self._raw.get(key, [])), list(key))
        return self._checked[key]

    def __getitem__(self, key: tuple[str, ...]) -> ShiftCertificate:
        cert = self._lookup(key) if key in self._raw else None
        if cert is None:
            raise KeyError(key)
        return cert

    def __iter__(self) -> Iterator[tuple[str, ...]]:
        return iter([k for k in self._raw if self._lookup(k) is not None])

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _first_checked(found: Iterable[Any], args: list[str]) -> ShiftCertificate | None:
    for stored in found:
        try:
            cert = _from_json(stored)
            if _matches(cert, args):
                return cert
        except (ValueError, KeyError, TypeError, ZeroDivisionError):
            continue
    return None


def entry(args: list[str], cert: ShiftCertificate) -> dict[str, Any]:
    """One shipped entry (``tools/make_certificates.py``)."""
    return {"version": CODE_VERSION, "args": args, "certificate": _to_json(cert)}


@functools.lru_cache(maxsize=256)
def _compute(
    eps: Fraction, sens: Fraction, lo: Fraction, hi: Fraction, sens_r: Fraction, eps_r: Fraction
) -> ShiftCertificate:
    return _shift_certificate(eps, sens, lo, hi, sens_r, None, eps_r, False)


# -- the file format ---------------------------------------------------------------------------
def _to_json(cert: ShiftCertificate) -> dict[str, Any]:
    return {
        "epsilon": str(cert.epsilon),
        "sensitivity": str(cert.sensitivity),
        "lower": str(cert.lower),
        "upper": str(cert.upper),
        "mechanism_sensitivity": str(cert.mechanism_sensitivity),
        "shifts": [
            [str(s.shift), s.loss.hex(), str(s.linear), s.excess.hex(), str(s.position)]
            for s in cert.shifts
        ],
        "pairs": cert.pairs,
        "exhaustive": cert.exhaustive,
        "slack": str(cert.slack),
        "slack_bound": str(cert.slack_bound),
        "delta": str(cert.delta),
        "certified": cert.certified,
        "note": cert.note,
        "mechanism_epsilon": str(cert.mechanism_epsilon),
    }


def _from_json(d: dict[str, Any]) -> ShiftCertificate:
    return ShiftCertificate(
        Fraction(d["epsilon"]),
        Fraction(d["sensitivity"]),
        Fraction(d["lower"]),
        Fraction(d["upper"]),
        Fraction(d["mechanism_sensitivity"]),
        tuple(
            ShiftLoss(Fraction(a), float.fromhex(b), Fraction(c), float.fromhex(e), Fraction(f))
            for a, b, c, e, f in d["shifts"]
        ),
        int(d["pairs"]),
        bool(d["exhaustive"]),
        Fraction(d["slack"]),
        Fraction(d["slack_bound"]),
        Fraction(d["delta"]),
        bool(d["certified"]),
        None if d["note"] is None else str(d["note"]),
        Fraction(d["mechanism_epsilon"]),
    )


def _checksum(body: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _private(path: Path) -> bool:
    """Owned by this user and writable by no one else (always true where POSIX modes don't
    apply)."""
    if not hasattr(os, "getuid"):
        return True
    info = path.stat()
    return info.st_uid == os.getuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def read_entry(path: Path) -> dict[str, Any] | None:
    """The body of a cache entry (``{"body": …, "checksum": …}``) when the folder and the file are
    the user's own and writable by nobody else, the file parses and its checksum matches; else
    None. Shared by every cache beside the certificates (``snapdp._logcache``)."""
    try:
        if not (_private(path.parent) and _private(path)):
            return None
        stored = json.loads(path.read_text(encoding="utf-8"))
        body = stored["body"]
        if not isinstance(body, dict) or stored["checksum"] != _checksum(body):
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return body


def write_entry(folder: Path, name: str, body: dict[str, Any]) -> None:
    """Write ``body`` with its checksum to ``folder``/``name`` atomically, readable by its owner
    only; nothing when the folder is not the user's own or cannot be written."""
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


def _read(path: Path, args: list[str]) -> ShiftCertificate | None:
    body = read_entry(path)
    if body is None or body.get("version") != CODE_VERSION or body.get("args") != args:
        return None
    try:
        cert = _from_json(body["certificate"])
    except (ValueError, KeyError, TypeError, ZeroDivisionError):
        return None
    return cert if _matches(cert, args) else None


def _matches(cert: ShiftCertificate, args: list[str]) -> bool:
    """The certificate is the one asked for (its own fields repeat the parameters), and what can
    be recomputed cheaply agrees: δ, and how slack, bound and verdict relate."""
    expect = [str(x) for x in (cert.epsilon, cert.sensitivity, cert.lower, cert.upper)]
    expect += [str(cert.mechanism_sensitivity), str(cert.mechanism_epsilon)]
    return expect == args and _consistent(cert)


def _consistent(cert: ShiftCertificate) -> bool:
    try:
        params = compute_parameters(
            cert.mechanism_epsilon, cert.mechanism_sensitivity, cert.lower, cert.upper
        )
    except ValueError:
        return not cert.certified
    delta = mpq(params.delta)
    if cert.delta != Fraction(int(delta.numerator), int(delta.denominator)):
        return False
    if not cert.certified:
        return True
    bound = cert.slack if cert.exhaustive else max(cert.slack, SLACK_BOUND)
    return (
        cert.note is None
        and 0 <= cert.slack <= SLACK_BOUND
        and cert.slack_bound == bound
        and len(cert.shifts) > 0
        and all(s.excess <= float(SLACK_BOUND) for s in cert.shifts)
    )


def _write(folder: Path, name: str, args: list[str], cert: ShiftCertificate) -> None:
    write_entry(
        folder, name, {"version": CODE_VERSION, "args": args, "certificate": _to_json(cert)}
    )
