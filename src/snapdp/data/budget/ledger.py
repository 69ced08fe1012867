"""A persistent privacy-budget ledger in SQLite (DESIGN §8.5; docs/data.md, "Budgets and the
ledger").

Guarantees, for every process sharing one ledger file:

* **Exact arithmetic.** ε is an exact rational end to end: the ledger stores it as text ``"p/q"``
  (``"1/10"`` for ``--epsilon 0.1``) and sums fractions, so ten spends of 1/10 use exactly 1.
* **Per-dataset budgets.** One file holds a budget per *dataset*, a name the data owner gives
  (by default the source's resolved path), never derived from the query or its bounds. A
  :class:`Ledger` object is bound to one dataset's budget.
* **No overspending.** A spend runs in one ``BEGIN IMMEDIATE`` transaction: it takes SQLite's write
  lock, reads and validates the whole history, refuses (rolls back, records nothing) if the new
  spend would take the dataset past its total, else inserts the row and commits.
* **Refusal before noise.** :meth:`Ledger.check` opens the file for writing, takes the lock,
  validates every row and probes a write, then rolls back: a read-only, locked, foreign or damaged
  ledger is refused before the caller draws any noise.
* **Integrity.** Every row is validated on every read (ε a positive ``p/q``, δ in [0, 1], totals
  positive, no dataset past its total) and the spends form a SHA-256 chain (each row's digest
  covers the previous one; the last is kept in ``meta``), so a row edited, inserted or deleted
  with a SQLite tool is detected. The chain has no secret key: it detects edits, not a forger who
  recomputes every digest.
* **Crash safety, no stray files.** SQLite's journal makes a commit atomic. A new ledger file is
  built beside the target under a temporary name and appears (``os.link``, which never replaces a
  file) only with its first committed spend; a refusal leaves no file behind.
* **Reservations** (DESIGN §8.7; docs/plans.md, "The ledger"). A plan run reserves its cap in
  one entry (:meth:`Ledger.reserve`, a spend of the cap marked ``"reservation": true``) before any
  noise is drawn, and returns the unused part in the same entry when it ends
  (:meth:`Ledger.settle`: a row of ``settlements`` holding the ε and δ actually spent, chained to
  the entry's digest). Until settled, the whole cap counts as spent, so a crash between the two
  leaves the cap spent, never less; deleting a settlement also only ever raises what is spent. A
  snapdp that predates settlements refuses a file holding them (unknown table).
* **Old files keep working.** A ledger written by snapdp 0.1 (one budget, ε as REAL) is read as is
  and migrated in place, inside the transaction of its first new spend. Its total stays a cap on
  the whole file (it was one budget), each recorded label becomes a dataset, and a dataset it never
  saw gets that total.
"""

from __future__ import annotations

import json
import os
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from fractions import Fraction
from pathlib import Path
from typing import Any, TypeVar

from msgspec import Struct

from snapdp._rational import format_rational, shown_number, storage_text
from snapdp._validation import check_epsilon, check_positive_finite, check_unicode
from snapdp.data.budget import delta as _delta
from snapdp.data.budget.store import (
    _DEFAULT_TIMEOUT,
    _SCHEMA,
    _SETTLEMENTS,
    DEFAULT_DATASET,
    DatasetBudget,
    LedgerEntry,
    _check_path,
    _digest,
    _init_meta,
    _insert_budget,
    _ledger_error,
    _now,
    _open,
    _probe_folder,
    _read_snapshot,
    _read_state,
    _State,
    _upgrade,
    _where,
)
from snapdp.data.model.workload import check_delta
from snapdp.errors import LedgerError, ParameterError, PrivacyBudgetError

__all__ = [
    "DEFAULT_DATASET",
    "DatasetBudget",
    "Ledger",
    "LedgerEntry",
    "LedgerReport",
    "read_ledger",
]

# Test hooks: called just before / just after the spend commits (tests kill the process there).
_before_commit: Callable[[], None] | None = None
_after_commit: Callable[[], None] | None = None

_T = TypeVar("_T")


class LedgerReport(Struct, frozen=True):
    """The whole ledger, validated: every dataset's budget and every spend, oldest first.

    ``cap`` is the total of a ledger migrated from snapdp 0.1 (one budget for the whole file),
    else None.
    """

    path: str
    created: str
    cap: Fraction | None
    datasets: list[DatasetBudget]
    entries: list[LedgerEntry]


class Ledger:
    """The budget of one dataset, ``total_epsilon``, in the SQLite ledger at ``path``.

    ``path=None`` keeps the ledger in memory (one Python session). ``total_epsilon`` (int, str,
    Fraction, Decimal or float, taken exactly: see :func:`snapdp._validation.check_epsilon`) is
    needed when the dataset has no budget yet; for an existing budget it may be omitted, and a
    different value is an error (a budget is never changed). ``dataset`` names the data whose
    budget this is (default ``"default"``; :class:`~snapdp.data.PrivateTable` passes the source's
    resolved path). ``timeout``: seconds to wait for another process's write lock before refusing.

    The file is not created here: it appears with the first committed spend.
    """

    def __init__(
        self,
        path: str | Path | None,
        total_epsilon: object = None,
        *,
        dataset: str | None = None,
        timeout: float = _DEFAULT_TIMEOUT,
        total_delta: object = None,
    ) -> None:
        self.total_delta = None if total_delta is None else check_delta("total_delta", total_delta)
        if dataset is None:
            dataset = DEFAULT_DATASET
        if not isinstance(dataset, str) or not dataset.strip():
            raise ParameterError(
                f"`dataset` must be a non-empty name, not {dataset!r}", parameter="dataset"
            )
        self.dataset = check_unicode(dataset, "`dataset`", "dataset")
        self.timeout = float(check_positive_finite("timeout", timeout))
        given = None if total_epsilon is None else check_epsilon("total_epsilon", total_epsilon)
        self.path = None if path is None else Path(path)
        self._memory: sqlite3.Connection | None = None
        if self.path is None:
            self._memory = sqlite3.connect(":memory:", isolation_level=None)
            for statement in _SCHEMA:
                self._memory.execute(statement)
            _init_meta(self._memory)
            state = _State(version=2)
        else:
            _check_path(self.path)
            state = self._read() if self.path.exists() else _State(version=0)
        self.total_epsilon: Fraction = self._total(state, given)

    # -- the budget --------------------------------------------------------------------------
    def _total(self, state: _State, given: Fraction | None) -> Fraction:
        known = state.budgets.get(self.dataset, state.cap)
        where = self._where()
        if known is None:
            if given is None:
                raise ParameterError(
                    f"`total_epsilon` is needed: dataset {self.dataset!r} has no budget in "
                    f"{where} yet",
                    parameter="total_epsilon",
                )
            return given
        if given is not None and given != known:
            raise ParameterError(
                f"`total_epsilon` is {format_rational(given)} but dataset {self.dataset!r} in "
                f"{where} has total ε = {format_rational(known)}; a budget is never changed",
                parameter="total_epsilon",
            )
        return known

    def _where(self) -> str:
        return "the in-memory ledger" if self.path is None else _where(self.path)

    # -- reading ---------------------------------------------------------------------------
    def _read(self) -> _State:
        with self._connection(write=False) as con:
            return _read_snapshot(con, self._where())

    def _current(self) -> _State:
        if self.path is not None and not self.path.exists():
            return _State(version=0)
        return self._read()

    def spent(self) -> Fraction:
        """The exact sum of the ε recorded on this dataset."""
        return self._current().spent(self.dataset)

    def remaining(self) -> Fraction:
        """total − spent, exactly (never negative; also within the cap of a migrated 0.1 file)."""
        return self._current().remaining(self.dataset, self.total_epsilon)

    def entries(self) -> list[LedgerEntry]:
        """Every spend recorded on this dataset, oldest first."""
        return [e for e in self._current().entries if e.dataset == self.dataset]

    # -- spending --------------------------------------------------------------------------
    def check(self, epsilon: object, *, selection_delta: float = 0.0) -> None:
        """Refuse now what :meth:`spend` would refuse, before the caller draws any noise.

        Raises PrivacyBudgetError if ``epsilon`` exceeds what remains; LedgerError if the ledger
        cannot be written (read-only file or folder, locked past ``timeout``), is not a snapdp
        ledger or is damaged. Writes nothing: the write probe is rolled back.
        """
        eps = check_epsilon("epsilon", epsilon)
        if self.path is not None and not self.path.exists():
            _probe_folder(self.path)
            state, known = _State(version=0), None
        else:
            state, known = self._transaction(
                lambda con, st: (st, _delta.read_total_delta(con, self.dataset)), probe=True
            )
        self._refuse_if_short(eps, state)
        self._delta_budget(known, state, selection_delta)

    def _delta_budget(self, known: Fraction | None, state: _State, needed: float) -> None:
        """The δ budget's refusals (:mod:`snapdp.data.budget.delta`); a one-off δ in memory."""
        if self.path is not None or self.total_delta is not None:
            _delta.refuse_delta(
                self.dataset, self._where(), known, self.total_delta, state.entries, needed
            )

    def spend(
        self,
        epsilon: object,
        delta: float,
        what: str,
        dataset_label: str,
        query: dict[str, Any],
        *,
        selection_delta: float = 0.0,
    ) -> int:
        """Record a spend atomically, or refuse it and record nothing (``selection_delta``: the
        part of δ the dataset's δ budget pays, :mod:`snapdp.data.budget.delta`).

        ``epsilon`` is taken exactly (:func:`~snapdp._validation.check_epsilon`); pass the
        rational the user gave, not a double near it. Raises PrivacyBudgetError if the dataset's
        budget cannot pay, LedgerError if the ledger cannot be used. Returns the new row's id; the
        row is committed when this returns.
        """
        eps = check_epsilon("epsilon", epsilon)
        if not (isinstance(delta, (int, float)) and 0 <= float(delta) <= 1):
            raise ParameterError(
                f"`delta` must be in [0, 1], not {shown_number(delta)}", parameter="delta"
            )
        try:
            query_text = json.dumps(query, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ParameterError(f"`query` must be JSON-ready: {exc}", parameter="query") from None

        def write(con: sqlite3.Connection, state: _State) -> int:
            self._refuse_if_short(eps, state)
            known = _delta.read_total_delta(con, self.dataset)
            self._delta_budget(known, state, selection_delta)
            if known is None and self.total_delta is not None:
                _delta.write_total_delta(con, self.dataset, self.total_delta)
            if self.dataset not in state.budgets:
                _insert_budget(con, self.dataset, self.total_epsilon)
            fields = [
                _now(),
                storage_text(eps),
                repr(float(delta)),
                str(what),
                self.dataset,
                str(dataset_label),
                query_text,
            ]
            digest = _digest(state.head, fields)
            cur = con.execute(
                "INSERT INTO spends (time, epsilon, delta, what, dataset, label, query, digest) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (*fields, digest),
            )
            con.execute("UPDATE meta SET value = ? WHERE key = 'head'", (digest,))
            return int(cur.lastrowid if cur.lastrowid is not None else -1)

        return self._transaction(write, probe=False)

    def set_budget(self) -> bool:
        """Record this dataset's budget, ``total_epsilon`` (and ``total_delta``), with no release
        (the owner's act: ``snapdp budget --total-epsilon``). False when the ledger already keeps
        this very budget; a different one is refused (a budget is never changed)."""

        def write(con: sqlite3.Connection, state: _State) -> bool:
            self._refuse_if_short(Fraction(0), state)
            new = _delta.set_total_delta(con, self.dataset, self._where(), self.total_delta)
            if self.dataset in state.budgets or state.cap is not None:
                return new
            _insert_budget(con, self.dataset, self.total_epsilon)
            return True

        return self._transaction(write, probe=False)

    def reserve(
        self,
        epsilon: object,
        delta: float,
        what: str,
        dataset_label: str,
        query: dict[str, Any],
    ) -> int:
        """Reserve ``epsilon`` (a plan's cap) in one committed entry before any noise is drawn;
        refused like :meth:`spend`. Until :meth:`settle` returns the unused part, the whole cap
        counts as spent. Returns the entry's id."""
        return self.spend(epsilon, delta, what, dataset_label, {**query, "reservation": True})

    def settle(self, entry: int, epsilon: object, delta: float) -> None:
        """Record what reservation ``entry`` actually spent (0 ≤ ``epsilon`` ≤ its cap, exact)
        and return the rest, in the same entry; once only."""
        if not isinstance(epsilon, (int, Fraction)) or isinstance(epsilon, bool):
            raise ParameterError(
                f"`epsilon` must be an exact rational, not {shown_number(epsilon)}",
                parameter="epsilon",
            )
        eps = Fraction(epsilon)
        if not (isinstance(delta, (int, float)) and 0 <= float(delta) <= 1):
            raise ParameterError(
                f"`delta` must be in [0, 1], not {shown_number(delta)}", parameter="delta"
            )

        def write(con: sqlite3.Connection, state: _State) -> None:
            con.execute(_SETTLEMENTS)
            found = [e for e in state.entries if e.id == entry and e.dataset == self.dataset]
            if not found or found[0].reserved is None or found[0].settled:
                raise LedgerError(
                    f"{self._where()}: entry #{entry} is not an open reservation of dataset "
                    f"{self.dataset!r}"
                )
            cap = found[0].reserved
            if not 0 <= eps <= cap:
                raise ParameterError(
                    f"a reservation spends between 0 and its cap {format_rational(cap)}, not "
                    f"{format_rational(eps)}",
                    parameter="epsilon",
                )
            fields = [str(entry), _now(), storage_text(eps), repr(float(delta))]
            con.execute(
                "INSERT INTO settlements (spend, time, epsilon, delta, digest) "
                "VALUES (?, ?, ?, ?, ?)",
                (entry, *fields[1:], _digest(state.digests[entry], fields)),
            )

        self._transaction(write, probe=False)

    def _refuse_if_short(self, eps: Fraction, state: _State) -> None:
        known = state.budgets.get(self.dataset)
        if known is not None and known != self.total_epsilon:
            raise ParameterError(
                f"dataset {self.dataset!r} in {self._where()} was created meanwhile with total "
                f"ε = {format_rational(known)}, not {format_rational(self.total_epsilon)}",
                parameter="total_epsilon",
            )
        remaining = state.remaining(self.dataset, self.total_epsilon)
        if eps > remaining:
            raise PrivacyBudgetError(
                f"privacy budget exceeded for dataset {self.dataset!r} in {self._where()}: this "
                f"release needs ε = {format_rational(eps)} but only {format_rational(remaining)} "
                f"of the total {format_rational(self.total_epsilon)} remains; nothing was "
                "released or recorded"
            )

    # -- transactions ------------------------------------------------------------------------
    def _transaction(self, body: Callable[[sqlite3.Connection, _State], _T], *, probe: bool) -> _T:
        """Run ``body`` in a write transaction on a validated, current-format ledger.

        ``probe``: roll back at the end (a check); else commit. A missing file is built under a
        temporary name and linked into place only after its first commit.
        """
        if self.path is not None and not self.path.exists() and not probe:
            created = self._create_with(body)
            if created is not None:
                return created[0]
        with self._connection(write=True) as con:
            try:
                con.execute("BEGIN IMMEDIATE")
                state = _read_state(con, self._where())
                if probe:
                    con.execute("CREATE TABLE _snapdp_write_probe (x)")  # rolled back below
                elif state.version != 2:
                    state = _upgrade(con, state)
                result = body(con, state)
                if probe:
                    con.execute("ROLLBACK")
                    return result
                if _before_commit is not None:
                    _before_commit()
                con.execute("COMMIT")
            except BaseException:
                if con.in_transaction:
                    con.execute("ROLLBACK")
                raise
        if _after_commit is not None:
            _after_commit()
        return result

    def _create_with(self, body: Callable[[sqlite3.Connection, _State], _T]) -> tuple[_T] | None:
        """Build a new ledger file holding ``body``'s write, then link it into place.

        Returns None if another process created the file first (the caller then writes to it).
        """
        assert self.path is not None
        folder = self.path.parent
        tmp = folder / f".{self.path.name}.{uuid.uuid4().hex}.tmp"
        try:
            con = sqlite3.connect(str(tmp), isolation_level=None, timeout=self.timeout)
        except sqlite3.Error as exc:
            raise _ledger_error(exc, self._where()) from None
        try:
            try:
                con.execute("BEGIN IMMEDIATE")
                for statement in _SCHEMA:
                    con.execute(statement)
                _init_meta(con)
                result = body(con, _read_state(con, self._where()))
                con.execute("COMMIT")
            except sqlite3.Error as exc:
                raise _ledger_error(exc, self._where()) from None
            finally:
                con.close()
            if _before_commit is not None:
                _before_commit()
            try:
                os.link(tmp, self.path)
            except FileExistsError:
                return None
            except OSError as exc:
                raise LedgerError(
                    f"{self._where()} cannot be created ({exc.strerror}): choose a file in a "
                    "folder you can write to",
                    path=str(self.path),
                ) from None
        finally:
            tmp.unlink(missing_ok=True)
        if _after_commit is not None:
            _after_commit()
        return (result,)

    @contextmanager
    def _connection(self, *, write: bool) -> Iterator[sqlite3.Connection]:
        """A connection to this ledger; every sqlite3 error becomes a LedgerError."""
        if self._memory is None:
            assert self.path is not None
            with _open(self.path, write=write, timeout=self.timeout) as con:
                yield con
            return
        try:
            yield self._memory
        except sqlite3.Error as exc:
            raise _ledger_error(exc, self._where()) from None

    @staticmethod
    def datasets(path: str | Path, *, timeout: float = _DEFAULT_TIMEOUT) -> list[DatasetBudget]:
        """Every dataset's budget in the ledger file at ``path`` (see :func:`read_ledger`)."""
        return read_ledger(path, timeout=timeout).datasets

    def close(self) -> None:
        """Release the in-memory database (a file ledger holds no open connection)."""
        if self._memory is not None:
            self._memory.close()

    def __repr__(self) -> str:
        where = ":memory:" if self.path is None else str(self.path)
        return (
            f"Ledger({where!r}, total_epsilon={format_rational(self.total_epsilon)!r}, "
            f"dataset={self.dataset!r})"
        )


def read_ledger(path: str | Path, *, timeout: float = _DEFAULT_TIMEOUT) -> LedgerReport:
    """Read and validate a whole ledger file: every dataset's budget and every spend.

    Raises ParameterError if the file does not exist, LedgerError if it is not a snapdp ledger or
    is damaged. Writes nothing.
    """
    p = Path(path)
    if not p.exists():
        raise ParameterError(
            f"ledger {str(p)!r} does not exist (not found): a ledger file is created by the "
            "first release that names it with --ledger",
            parameter="ledger",
        )
    _check_path(p)
    with _open(p, write=False, timeout=float(check_positive_finite("timeout", timeout))) as con:
        state = _read_snapshot(con, _where(p))
    datasets = [
        DatasetBudget(
            name,
            total,
            state.spent(name),
            state.remaining(name, total),
            sum(1 for e in state.entries if e.dataset == name),
        )
        for name, total in state.budgets.items()
    ]
    return LedgerReport(str(p), state.created, state.cap, datasets, state.entries)
