"""The ledger's SQLite file: its formats (v1 of snapdp 0.1, v2), reading and validating them,
the hash chain, the migration, the writes and the file errors (docs/data.md, "Budgets and the
ledger").

:mod:`snapdp.data.budget.ledger` is the API over it (check, spend, reserve, settle).
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path
from typing import Any
from urllib.parse import quote

from msgspec import Struct, field
from msgspec.structs import replace

from snapdp._rational import format_rational, parse_rational, storage_text
from snapdp.errors import LedgerError, ParameterError

DEFAULT_DATASET = "default"
_FORMAT = "snapdp-ledger"
_VERSION = "2"
_DEFAULT_TIMEOUT = 60.0
_OURS = {"meta", "budgets", "spends", "settlements", "sqlite_sequence", "delta_budgets"}
_OURS_V1 = {"meta", "spends", "sqlite_sequence"}
_SETTLEMENTS = (
    "CREATE TABLE IF NOT EXISTS settlements (spend INTEGER PRIMARY KEY, time TEXT NOT NULL, "
    "epsilon TEXT NOT NULL, delta TEXT NOT NULL, digest TEXT NOT NULL)"
)
_SCHEMA = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE budgets (dataset TEXT PRIMARY KEY, total_epsilon TEXT NOT NULL, "
    "created TEXT NOT NULL, digest TEXT NOT NULL)",
    "CREATE TABLE spends (id INTEGER PRIMARY KEY AUTOINCREMENT, time TEXT NOT NULL, "
    "epsilon TEXT NOT NULL, delta TEXT NOT NULL, what TEXT NOT NULL, dataset TEXT NOT NULL, "
    "label TEXT NOT NULL, query TEXT NOT NULL, digest TEXT NOT NULL)",
    _SETTLEMENTS,
)


class LedgerEntry(Struct, frozen=True):
    """One recorded spend: ε exact (what counts as spent), δ an upper bound, the dataset's name
    and the source's label. A reservation (a plan run) also has ``reserved``, its cap, and
    ``settled``: False while the run has not returned the unused part (ε is then the cap)."""

    id: int
    time: str
    epsilon: Fraction
    delta: float
    what: str
    dataset: str
    label: str
    query: dict[str, Any]
    reserved: Fraction | None = None
    settled: bool = True

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready form: ε as the user's decimal (``"0.1"``) and as ``"p/q"``."""
        return {
            "id": self.id,
            "time": self.time,
            "epsilon": format_rational(self.epsilon),
            "epsilon_exact": storage_text(self.epsilon),
            "delta": self.delta,
            "what": self.what,
            "dataset": self.dataset,
            "label": self.label,
            "query": self.query,
            "reserved": None if self.reserved is None else format_rational(self.reserved),
            "settled": self.settled,
        }


class DatasetBudget(Struct, frozen=True):
    """One dataset's budget: its total, what its releases spent, what remains (all exact)."""

    dataset: str
    total_epsilon: Fraction
    spent: Fraction
    remaining: Fraction
    releases: int


class _State(Struct):
    """A ledger as read from its file: version 0 (empty), 1 (snapdp 0.1) or 2 (current)."""

    version: int
    created: str = ""
    cap: Fraction | None = None
    budgets: dict[str, Fraction] = field(default_factory=dict)
    entries: list[LedgerEntry] = field(default_factory=list)
    head: str = ""
    digests: dict[int, str] = field(default_factory=dict)
    sums: dict[str, Fraction] = field(default_factory=dict)
    total_spent: Fraction = Fraction(0)

    def add(self, entry: LedgerEntry) -> None:
        self.entries.append(entry)
        self.sums[entry.dataset] = self.sums.get(entry.dataset, Fraction(0)) + entry.epsilon
        self.total_spent += entry.epsilon

    def spent(self, dataset: str | None) -> Fraction:
        """The exact ε spent on ``dataset`` (on every dataset if None)."""
        return self.total_spent if dataset is None else self.sums.get(dataset, Fraction(0))

    def remaining(self, dataset: str, total: Fraction) -> Fraction:
        left = total - self.spent(dataset)
        if self.cap is not None:
            left = min(left, self.cap - self.spent(None))
        return max(left, Fraction(0))


# -- reading and validating ------------------------------------------------------------------
def _read_state(con: sqlite3.Connection, where: str) -> _State:
    """Read the whole ledger and validate every row; LedgerError names what is wrong."""
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")} - {
        "_snapdp_write_probe"
    }
    if not tables:
        return _State(version=0)
    meta: dict[str, str] = {}
    if "meta" in tables:
        meta = {str(k): str(v) for k, v in con.execute("SELECT key, value FROM meta")}
    if meta.get("format") == _FORMAT and tables <= _OURS:
        if meta.get("version") != _VERSION:
            raise LedgerError(
                f"{where} has format version {meta.get('version')!r}, written by a newer snapdp: "
                "upgrade snapdp to use it"
            )
        return _read_v2(con, meta, where)
    if tables <= _OURS_V1 and "spends" in tables and "total_epsilon" in meta:
        return _read_v1(con, meta, where)
    raise LedgerError(
        f"{where} is an SQLite database but not a snapdp ledger (tables: "
        f"{', '.join(sorted(tables))}); it was left unchanged: choose another --ledger file"
    )


def _read_snapshot(con: sqlite3.Connection, where: str) -> _State:
    """:func:`_read_state` inside one read transaction (a consistent snapshot)."""
    con.execute("BEGIN")
    try:
        return _read_state(con, where)
    finally:
        con.execute("ROLLBACK")


def _damaged(where: str, what: str) -> LedgerError:
    return LedgerError(
        f"{where} is damaged or was edited ({what}); nothing was read from it or written to it: "
        "restore it from a backup (see docs/data.md)"
    )


def _read_v2(con: sqlite3.Connection, meta: dict[str, str], where: str) -> _State:
    created = meta.get("created", "")
    state = _State(version=2, created=created, head=_genesis(created))
    if "cap" in meta:
        cap = parse_rational(meta["cap"])
        if cap is None or cap <= 0:
            raise _damaged(where, f"the file's total ε is {meta['cap']!r}")
        state.cap = cap
    for dataset, total_text, made, digest in con.execute(
        "SELECT dataset, total_epsilon, created, digest FROM budgets ORDER BY rowid"
    ):
        total = parse_rational(total_text)
        if total is None or total <= 0:
            raise _damaged(where, f"dataset {dataset!r} has total ε {total_text!r}")
        if digest != _digest("budget", [str(dataset), str(total_text), str(made)]):
            raise _damaged(where, f"the total of dataset {dataset!r} was changed")
        state.budgets[str(dataset)] = total
    entries: list[LedgerEntry] = []
    for row in con.execute(
        "SELECT id, time, epsilon, delta, what, dataset, label, query, digest FROM spends "
        "ORDER BY id"
    ):
        row_id, fields, digest = row[0], [row[i] for i in range(1, 8)], row[8]
        if not all(isinstance(f, str) for f in fields):
            raise _damaged(where, f"spend #{row_id} has a value of the wrong type")
        entry = _entry(row_id, fields[0], parse_rational(fields[1]), fields, where)
        if digest != _digest(state.head, fields):
            raise _damaged(where, f"spend #{row_id} does not match the recorded history")
        state.head = str(digest)
        state.digests[entry.id] = state.head
        if entry.query.get("reservation") is True:
            entry = replace(entry, reserved=entry.epsilon, settled=False)
        entries.append(entry)
    if meta.get("head") != state.head:
        raise _damaged(where, "the last recorded spend is missing")
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "settlements" in tables:
        entries = _settled(con, entries, state.digests, where)
    for entry in entries:
        state.add(entry)
    _check_totals(state, where)
    return state


def _entry(
    row_id: object, time: str, eps: Fraction | None, fields: list[str], where: str
) -> LedgerEntry:
    """One spend row, validated: ε a positive exact rational, δ a number in [0, 1]."""
    if eps is None or eps <= 0:
        raise _damaged(where, f"spend #{row_id} has ε = {fields[1]!r}")
    try:
        delta = float(fields[2])
    except ValueError:
        delta = math.nan
    if not 0 <= delta <= 1:
        raise _damaged(where, f"spend #{row_id} has δ = {fields[2]!r}")
    try:
        query = json.loads(fields[6])
    except ValueError:
        query = None
    if not isinstance(query, dict):
        raise _damaged(where, f"spend #{row_id} has an unreadable query")
    return LedgerEntry(int(str(row_id)), time, eps, delta, fields[3], fields[4], fields[5], query)


def _settled(
    con: sqlite3.Connection, entries: list[LedgerEntry], digests: dict[int, str], where: str
) -> list[LedgerEntry]:
    """The entries with each settlement applied (validated: chained to its reservation's digest,
    0 ≤ ε ≤ the cap, δ in [0, 1])."""
    by_id = {e.id: i for i, e in enumerate(entries)}
    out = list(entries)
    for row in con.execute("SELECT spend, time, epsilon, delta, digest FROM settlements"):
        spend, time, eps_text, delta_text, digest = row
        i = by_id.get(spend) if isinstance(spend, int) else None
        fields = [str(spend), str(time), str(eps_text), str(delta_text)]
        if i is None or out[i].reserved is None:
            raise _damaged(where, f"a settlement names #{spend}, which is not a reservation")
        reserved = out[i].reserved
        assert reserved is not None
        eps = parse_rational(eps_text)
        try:
            delta = float(delta_text)
        except ValueError:
            delta = math.nan
        if eps is None or not 0 <= eps <= reserved or not 0 <= delta <= 1:
            raise _damaged(where, f"the settlement of #{spend} is out of range")
        if digest != _digest(digests[spend], fields):
            raise _damaged(where, f"the settlement of #{spend} does not match its reservation")
        out[i] = replace(out[i], epsilon=eps, delta=delta, settled=True)
    return out


def _check_totals(state: _State, where: str) -> None:
    for entry in state.entries:
        if entry.dataset not in state.budgets:
            raise _damaged(where, f"spend #{entry.id} is on unknown dataset {entry.dataset!r}")
    for name, total in state.budgets.items():
        if state.spent(name) > total:
            raise _damaged(where, f"dataset {name!r} has spent more than its total ε")
    if state.cap is not None and state.spent(None) > state.cap:
        raise _damaged(where, "the spends exceed the file's total ε")


def _read_v1(con: sqlite3.Connection, meta: dict[str, str], where: str) -> _State:
    """A snapdp 0.1 ledger: one total (a double's repr) for the file; ε as REAL."""
    total = _v1_number(meta["total_epsilon"])
    if total is None or total <= 0:
        raise _damaged(where, f"the total ε is {meta['total_epsilon']!r}")
    state = _State(version=1, created=meta.get("created", ""), cap=total)
    for row in con.execute(
        "SELECT id, time, epsilon, delta, what, dataset, query FROM spends ORDER BY id"
    ):
        row_id, time, eps_raw, delta_raw, what, label, query = row
        eps = _v1_number(eps_raw)
        fields = [
            str(time),
            "" if eps is None else storage_text(eps),
            str(delta_raw),
            str(what),
            str(label),
            str(label),
            str(query),
        ]
        entry = _entry(row_id, str(time), eps, fields, where)
        state.budgets.setdefault(entry.dataset, total)
        state.add(entry)
    _check_totals(state, where)
    return state


def _v1_number(x: object) -> Fraction | None:
    """A REAL (or its text) of a 0.1 ledger at its exact binary value; None if not finite."""
    try:
        value = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return Fraction(value) if math.isfinite(value) else None


# -- writing -----------------------------------------------------------------------------------
def _init_meta(con: sqlite3.Connection) -> None:
    created = _now()
    con.executemany(
        "INSERT INTO meta VALUES (?, ?)",
        [
            ("format", _FORMAT),
            ("version", _VERSION),
            ("created", created),
            ("head", _genesis(created)),
        ],
    )


def _insert_budget(con: sqlite3.Connection, dataset: str, total: Fraction) -> None:
    made = _now()
    text = storage_text(total)
    con.execute(
        "INSERT INTO budgets VALUES (?, ?, ?, ?)",
        (dataset, text, made, _digest("budget", [dataset, text, made])),
    )


def _upgrade(con: sqlite3.Connection, state: _State) -> _State:
    """Turn an empty file (version 0) or a 0.1 ledger (version 1) into the current format, in the
    caller's transaction (so a crash or a refusal leaves the file as it was)."""
    if state.version == 1:
        con.execute("ALTER TABLE spends RENAME TO spends_v1")
        con.execute("ALTER TABLE meta RENAME TO meta_v1")
    for statement in _SCHEMA:
        con.execute(statement)
    _init_meta(con)
    if state.version == 1:
        assert state.cap is not None
        con.execute("UPDATE meta SET value = ? WHERE key = 'created'", (state.created,))
        con.execute("INSERT INTO meta VALUES ('cap', ?)", (storage_text(state.cap),))
        for name, total in state.budgets.items():
            _insert_budget(con, name, total)
        head = _genesis(state.created)
        for e in state.entries:
            fields = [
                e.time,
                storage_text(e.epsilon),
                repr(e.delta),
                e.what,
                e.dataset,
                e.label,
                json.dumps(e.query, sort_keys=True),
            ]
            head = _digest(head, fields)
            con.execute(
                "INSERT INTO spends (id, time, epsilon, delta, what, dataset, label, query, "
                "digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (e.id, *fields, head),
            )
        con.execute("UPDATE meta SET value = ? WHERE key = 'head'", (head,))
        con.execute("DROP TABLE spends_v1")
        con.execute("DROP TABLE meta_v1")
    return _read_state(con, "the upgraded ledger")


def _digest(previous: str, fields: list[str]) -> str:
    """SHA-256 over ``previous`` and ``fields``, each UTF-8 and prefixed by its length in bytes
    (an unambiguous encoding), as hex."""
    h = hashlib.sha256()
    for text in (previous, *fields):
        data = text.encode("utf-8")
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()


def _genesis(created: str) -> str:
    return _digest(_FORMAT, [created])


# -- files and errors --------------------------------------------------------------------------
def _where(path: Path) -> str:
    return f"ledger {str(path)!r}"


@contextmanager
def _open(path: Path, *, write: bool, timeout: float) -> Iterator[sqlite3.Connection]:
    """A connection to an existing ledger file (never creates one); sqlite3 errors become
    LedgerErrors. ``write=False`` opens it read-only."""
    # Even a read opens the file read-write (never creating it), so that SQLite can roll back the
    # journal of a writer that was killed; a file the user may not write is opened read-only.
    del write
    uri = f"file:{quote(str(path.resolve()))}?mode=rw"
    try:
        con = sqlite3.connect(uri, uri=True, timeout=timeout, isolation_level=None)
    except sqlite3.Error as exc:
        raise _ledger_error(exc, _where(path)) from None
    try:
        yield con
    except sqlite3.Error as exc:
        raise _ledger_error(exc, _where(path)) from None
    finally:
        con.close()


def _check_path(path: Path) -> None:
    """Refuse a path that cannot be a ledger file, before anything is opened."""
    if not path.parent.is_dir():
        raise ParameterError(
            f"ledger folder {str(path.parent)!r} does not exist: create it first",
            parameter="ledger",
        )
    if path.exists() and not path.is_file():
        raise ParameterError(
            f"ledger {str(path)!r} is not a regular file (a folder?): give a file name",
            parameter="ledger",
        )


def _probe_folder(path: Path) -> None:
    """Refuse now if a new ledger file cannot be created beside ``path``."""
    try:
        with tempfile.TemporaryFile(dir=path.parent, prefix=f".{path.name}."):
            pass
    except OSError as exc:
        raise LedgerError(
            f"ledger {str(path)!r} cannot be created: folder {str(path.parent)!r} is not "
            f"writable ({exc.strerror}); choose a folder you can write to",
            path=str(path),
        ) from None


def _ledger_error(exc: sqlite3.Error, where: str) -> LedgerError:
    """One line for an SQLite failure: what happened and what to do."""
    text = str(exc)
    low = text.lower()
    if "locked" in low or "busy" in low:
        return LedgerError(
            f"{where} is locked by another process and stayed locked past the timeout: try again "
            "when that release has finished"
        )
    if "readonly" in low or "read-only" in low or "unable to open" in low or "disk i/o" in low:
        return LedgerError(
            f"{where} cannot be written ({text}): check that you may write to the file and to "
            "its folder (SQLite keeps a journal file beside it)"
        )
    if "not a database" in low or "malformed" in low or "encrypted" in low:
        return LedgerError(
            f"{where} is not an SQLite database ({text}); it was left unchanged: choose another "
            "--ledger file"
        )
    return LedgerError(f"{where} cannot be used: {text}")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")
