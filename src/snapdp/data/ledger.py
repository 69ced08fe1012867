"""A persistent privacy-budget ledger in SQLite (DESIGN §8).

Guarantees, for every process sharing one ledger file:

* **No overspending.** A spend runs in one ``BEGIN IMMEDIATE`` transaction: it takes SQLite's
  write lock, sums what is spent, refuses (rolls back, records nothing) if the new spend would take
  the total past the budget, else inserts the spend row and commits. Two processes cannot both pass
  the check on the same remaining budget: the second waits for the first's lock, then sees its row.
* **Spend before show.** The data API commits the spend before it returns any noisy value.
* **Crash safety.** SQLite's journal makes the commit atomic: a process killed before the commit
  leaves no row; a process killed after it leaves exactly one.
* **Exact arithmetic.** ε values are stored as doubles and summed as exact fractions, so the
  budget check has no rounding error.

The ledger records what was released (the statistics and their parameters, as JSON), on which
data (a label), when (UTC), with which ε and δ.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path
from typing import Any

from snapdp._validation import check_positive_finite
from snapdp.errors import ParameterError, PrivacyBudgetError

__all__ = ["Ledger", "LedgerEntry"]

# Test hooks: called just before / just after the spend commits (tests kill the process there).
_before_commit: Callable[[], None] | None = None
_after_commit: Callable[[], None] | None = None

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS spends (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time TEXT NOT NULL,
    epsilon REAL NOT NULL,
    delta REAL NOT NULL,
    what TEXT NOT NULL,
    dataset TEXT NOT NULL,
    query TEXT NOT NULL
);
"""


@dataclass(frozen=True)
class LedgerEntry:
    """One recorded spend."""

    id: int
    time: str
    epsilon: float
    delta: float
    what: str
    dataset: str
    query: dict[str, Any]


class Ledger:
    """A privacy budget of ``total_epsilon``, stored in SQLite at ``path`` (or in memory).

    ``path=None`` keeps the ledger in memory (for one Python session only). Opening an existing
    ledger file with ``total_epsilon=None`` uses the total it was created with; giving a different
    total is an error (a budget is not changed silently).
    """

    def __init__(self, path: str | Path | None, total_epsilon: object = None) -> None:
        self.path = None if path is None else Path(path)
        target = ":memory:" if self.path is None else str(self.path)
        if self.path is not None and not self.path.parent.is_dir():
            raise ParameterError(f"`ledger` directory does not exist: {str(self.path.parent)!r}")
        try:
            self._con = sqlite3.connect(target, timeout=60.0, isolation_level=None)
            self._con.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise ParameterError(f"`ledger` {target!r} cannot be opened: {exc}") from None
        try:
            for statement in _SCHEMA.strip().split(";\n"):
                if statement.strip():
                    self._con.execute(statement)
            row = self._con.execute("SELECT value FROM meta WHERE key = 'total_epsilon'").fetchone()
            if row is None:
                if total_epsilon is None:
                    raise ParameterError(
                        f"`total_epsilon` is needed to create the new ledger {target!r}"
                    )
                total = float(check_positive_finite("total_epsilon", total_epsilon))
                self._con.execute(
                    "INSERT INTO meta VALUES ('total_epsilon', ?), ('created', ?)",
                    (repr(total), _now()),
                )
            else:
                total = float(row[0])
                if total_epsilon is not None:
                    given = float(check_positive_finite("total_epsilon", total_epsilon))
                    if given != total:
                        raise ParameterError(
                            f"`total_epsilon` is {given!r} but the ledger {target!r} was created "
                            f"with total ε = {total!r}; a budget is never changed"
                        )
            self._con.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            self._rollback()
            raise ParameterError(f"`ledger` {target!r} is not a snapdp ledger: {exc}") from None
        except BaseException:
            self._rollback()
            raise
        self.total_epsilon: float = total

    def _rollback(self) -> None:
        if self._con.in_transaction:
            self._con.execute("ROLLBACK")

    # -- reading ---------------------------------------------------------------------------
    def spent(self) -> Fraction:
        """The exact sum of the recorded ε."""
        return sum(
            (Fraction(r[0]) for r in self._con.execute("SELECT epsilon FROM spends")),
            Fraction(0),
        )

    def remaining(self) -> Fraction:
        """total − spent, exactly (never negative)."""
        return max(Fraction(self.total_epsilon) - self.spent(), Fraction(0))

    def entries(self) -> list[LedgerEntry]:
        """Every recorded spend, oldest first."""
        rows = self._con.execute(
            "SELECT id, time, epsilon, delta, what, dataset, query FROM spends ORDER BY id"
        ).fetchall()
        return [
            LedgerEntry(int(r[0]), r[1], float(r[2]), float(r[3]), r[4], r[5], json.loads(r[6]))
            for r in rows
        ]

    # -- spending --------------------------------------------------------------------------
    def check(self, epsilon: Fraction) -> None:
        """Raise PrivacyBudgetError if ``epsilon`` exceeds what remains now (no lock, no write)."""
        remaining = self.remaining()
        if epsilon > remaining:
            raise PrivacyBudgetError(_refusal(epsilon, remaining, self.total_epsilon))

    def spend(
        self, epsilon: float, delta: float, what: str, dataset: str, query: dict[str, Any]
    ) -> int:
        """Record a spend atomically, or refuse it (PrivacyBudgetError) and record nothing.

        Returns the id of the new row. The row is committed when this returns.
        """
        eps = Fraction(float(check_positive_finite("epsilon", epsilon)))
        con = self._con
        con.execute("BEGIN IMMEDIATE")
        try:
            spent = sum(
                (Fraction(r[0]) for r in con.execute("SELECT epsilon FROM spends")), Fraction(0)
            )
            remaining = Fraction(self.total_epsilon) - spent
            if eps > remaining:
                raise PrivacyBudgetError(
                    _refusal(eps, max(remaining, Fraction(0)), self.total_epsilon)
                )
            cur = con.execute(
                "INSERT INTO spends (time, epsilon, delta, what, dataset, query) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (
                    _now(),
                    float(eps),
                    float(delta),
                    what,
                    dataset,
                    json.dumps(query, sort_keys=True),
                ),
            )
            row_id = cur.lastrowid
            if _before_commit is not None:
                _before_commit()
            con.execute("COMMIT")
        except BaseException:
            self._rollback()
            raise
        if _after_commit is not None:
            _after_commit()
        return int(row_id if row_id is not None else -1)

    def close(self) -> None:
        """Close the connection (spends are already committed)."""
        self._con.close()

    def __repr__(self) -> str:
        where = ":memory:" if self.path is None else str(self.path)
        return f"Ledger({where!r}, total_epsilon={self.total_epsilon!r})"


def _refusal(eps: Fraction, remaining: Fraction, total: float) -> str:
    return (
        f"privacy budget exceeded: this release needs ε = {float(eps):.6g} but only "
        f"{float(remaining):.6g} of the total {total:.6g} remains; nothing was released or recorded"
    )


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")
