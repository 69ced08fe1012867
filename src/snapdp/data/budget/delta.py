"""The δ budget of a dataset (docs/plans.md, "δ"): what the key selections of groups from the
data may spend in all (docs/sql.md, "Groups from the data").

Only the data owner sets it (``--total-delta`` beside ``--total-epsilon``); it is kept in the
ledger file's ``delta_budgets`` table and never changed. A release whose selections need δ is
refused, before any data is read, when the dataset has no δ budget or the δ recorded on it (every
entry's δ, the snapping mechanisms' own included) plus the new δ would exceed it. Without a
ledger file, the release's δ is its own one-off budget.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Sequence
from fractions import Fraction

from snapdp._rational import format_rational, storage_text
from snapdp.data.budget.store import LedgerEntry
from snapdp.errors import ParameterError, PrivacyBudgetError

__all__ = ["read_total_delta", "refuse_delta", "set_total_delta", "write_total_delta"]

_TABLE = (
    "CREATE TABLE IF NOT EXISTS delta_budgets (dataset TEXT PRIMARY KEY, total_delta TEXT NOT NULL)"
)
_HOW = "docs/plans.md, 'δ'"


def read_total_delta(con: sqlite3.Connection, dataset: str) -> Fraction | None:
    """The δ budget kept for ``dataset`` (None: none)."""
    found = con.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'delta_budgets'"
    ).fetchone()
    if found is None:
        return None
    row = con.execute(
        "SELECT total_delta FROM delta_budgets WHERE dataset = ?", (dataset,)
    ).fetchone()
    return None if row is None else Fraction(str(row[0]))


def write_total_delta(con: sqlite3.Connection, dataset: str, total: Fraction) -> None:
    """Keep ``total`` as ``dataset``'s δ budget (in the caller's transaction)."""
    con.execute(_TABLE)
    con.execute("INSERT INTO delta_budgets VALUES (?, ?)", (dataset, storage_text(total)))


def set_total_delta(
    con: sqlite3.Connection, dataset: str, where: str, given: Fraction | None
) -> bool:
    """Keep the owner's δ budget ``given`` (``snapdp budget --total-delta``); True when newly
    kept, False when absent or already this; a different one is refused."""
    if given is None:
        return False
    known = read_total_delta(con, dataset)
    refuse_delta(dataset, where, known, given, (), 0.0)
    if known is None:
        write_total_delta(con, dataset, given)
    return known is None


def refuse_delta(
    dataset: str,
    where: str,
    known: Fraction | None,
    given: Fraction | None,
    entries: Sequence[LedgerEntry],
    needed: float,
) -> Fraction | None:
    """The δ budget that pays ``needed`` (the stored one, else the owner's ``given``); refuses
    one that differs from the stored one, a missing one and one that cannot pay."""
    if known is not None and given is not None and given != known:
        raise ParameterError(
            f"`--total-delta` is {format_rational(given)} but dataset {dataset!r} in {where} has "
            f"total δ = {format_rational(known)}; a budget is never changed",
            parameter="total_delta",
        )
    total = known if known is not None else given
    if needed <= 0:
        return total
    if total is None:
        raise PrivacyBudgetError(
            f"dataset {dataset!r} in {where} has no δ budget, and groups from the data need one: "
            f"its owner sets it with `snapdp budget --total-delta` ({_HOW}); nothing was released"
        )
    spent = math.fsum(e.delta for e in entries if e.dataset == dataset)
    if spent + needed > total:
        raise PrivacyBudgetError(
            f"δ budget exceeded for dataset {dataset!r} in {where}: this release needs δ = "
            f"{needed:.3g} but {max(0.0, float(total) - spent):.3g} of the total δ "
            f"{format_rational(total)} remains; nothing was released or recorded"
        )
    return total
