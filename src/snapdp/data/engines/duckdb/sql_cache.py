"""Rendered DuckDB queries kept on disk, for CSV sources (docs/performance.md, "Latency").

Rendering a plan's query needs sqlglot, whose import alone is about a tenth of a fresh
``snapdp run``. For a plan without a privacy unit and without keys read from the data, the text
is a pure function of public inputs: the plan (built from the declaration and the query), the
types of the columns it reads — for a CSV source the engine's own constant, text, whatever the
file holds — and the relation it reads from. This keeps the text with the relation left out: it
is rendered once over a placeholder name (``_snapdp_relation_`` and 32 hex digits of the key's
hash, which a declared name would have to contain while being part of that key), stored with
that name, and the real relation (the engine's view of the file) is put in its place when read;
the placeholder is a :class:`sqlglot.exp.Var`, written verbatim, so the text equals the one
rendered directly.

* Where: beside the certificates (:func:`snapdp._certcache.cache_dir`), in ``sql``;
  ``SNAPDP_CACHE_DIR=off`` turns it off.
* Key: the SHA-256 of the plan's ``repr`` (every field of the frozen dataclasses), the column
  families and :func:`code_version` (the source of every module under ``snapdp.data.engines``
  and ``snapdp.data.model`` and of the top-level ``snapdp`` modules, and sqlglot's version
  file).
* Written atomically, readable by its owner only; read only when the folder and the file are
  the user's own and writable by nobody else, the file parses, its checksum, code version and
  key text match and the placeholder is in the text. Anything else is ignored and overwritten.

Nothing read from the data is a key or a value here (the relation and every key read from the
data stay out; a plan with a unit is never kept: its key is fresh per release), and whether an
entry exists does not depend on the data.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from snapdp._certcache import cache_dir

__all__ = ["code_version", "rendered", "sql_dir"]

_PACKAGE = Path(__file__).resolve().parents[3]  # src/snapdp


@functools.cache
def code_version() -> str | None:
    """The SHA-256 of the rendering code and of sqlglot's version file (read, not imported);
    None when one cannot be read (then nothing is kept)."""
    digest = hashlib.sha256(b"snapdp-duckdb-sql-1")
    try:
        files = sorted((_PACKAGE / "data" / "engines").rglob("*.py"))
        files += sorted((_PACKAGE / "data" / "model").rglob("*.py"))
        files += sorted(_PACKAGE.glob("*.py"))  # errors, _rational, _validation, ieee, …
        spec = importlib.util.find_spec("sqlglot")
        if spec is None or spec.origin is None:
            return None
        files.append(Path(spec.origin).parent / "_version.py")
        for path in files:
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    except (OSError, ValueError, ImportError):
        return None
    return digest.hexdigest()


def sql_dir() -> Path | None:
    """The folder of kept queries, or None when the cache is off."""
    certificates = cache_dir()
    if certificates is None or code_version() is None:
        return None
    return certificates.parent / "sql"


def rendered(
    key: str, relation: str, render: Callable[[str], tuple[str, list[str]]]
) -> tuple[str, tuple[str, ...]]:
    """The query ``render(relation)`` returns, and its layout: from the disk when a checked entry
    for ``key`` exists, else rendered over a placeholder relation, kept, and completed."""
    folder = sql_dir()
    if folder is None:
        direct, formats = render(relation)
        return direct, tuple(formats)
    name = hashlib.sha256(json.dumps([code_version(), key]).encode()).hexdigest() + ".json"
    kept = _read(folder / name, key)
    if kept is None:
        token = "_snapdp_relation_" + hashlib.sha256(key.encode()).hexdigest()[:32]
        text, parts = render(token)
        kept = (text, token, tuple(parts))
        if token in text:
            _write(folder, name, key, kept)
    template, placeholder, layout = kept
    return template.replace(placeholder, relation), layout


def _checksum(body: dict[str, object]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _private(path: Path) -> bool:
    """Owned by this user and writable by no one else (always true without POSIX modes)."""
    if not hasattr(os, "getuid"):
        return True
    info = path.stat()
    return info.st_uid == os.getuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _read(path: Path, key: str) -> tuple[str, str, tuple[str, ...]] | None:
    try:
        if not (_private(path.parent) and _private(path)):
            return None
        stored = json.loads(path.read_text(encoding="utf-8"))
        body = stored["body"]
        if stored["checksum"] != _checksum(body):
            return None
        if body["version"] != code_version() or body["key"] != key:
            return None
        template, token, layout = body["sql"], body["placeholder"], body["layout"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not (isinstance(template, str) and isinstance(token, str) and isinstance(layout, list)):
        return None
    if not token.startswith("_snapdp_relation_") or token not in template:
        return None
    if not all(isinstance(x, str) for x in layout):
        return None
    return template, token, tuple(layout)


def _write(folder: Path, name: str, key: str, kept: tuple[str, str, tuple[str, ...]]) -> None:
    template, token, layout = kept
    body: dict[str, object] = {
        "version": code_version(),
        "key": key,
        "sql": template,
        "placeholder": token,
        "layout": list(layout),
    }
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
