"""The SQLite ledger: exact refusal, concurrent processes, processes killed mid-release."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest
from tests.unit.data._engines import local_engine

from snapdp.data import Ledger, PrivateTable, Query
from snapdp.errors import ParameterError, PrivacyBudgetError

_CTX = mp.get_context("fork")


def test_refusal_records_nothing_and_arithmetic_is_exact(tmp_path: Path) -> None:
    path = tmp_path / "b.sqlite"
    book = Ledger(path, 1.0)
    for eps in (0.5, 0.25, 0.25):
        book.spend(eps, 0.0, "count", "t", {})
    assert book.spent() == 1 and book.remaining() == 0
    with pytest.raises(PrivacyBudgetError, match="exceeded"):
        book.spend(2.0**-60, 0.0, "count", "t", {})
    assert len(Ledger(path).entries()) == 3
    # 0.1 as a double is above 1/10: ten of them exceed 1.0, exactly, and the tenth is refused
    book2 = Ledger(tmp_path / "c.sqlite", 1.0)
    for _ in range(9):
        book2.spend(0.1, 0.0, "x", "t", {})
    with pytest.raises(PrivacyBudgetError):
        book2.spend(0.1, 0.0, "x", "t", {})
    assert book2.spent() == 9 * Fraction(0.1)


def test_a_budget_is_never_changed_and_a_new_ledger_needs_a_total(tmp_path: Path) -> None:
    Ledger(tmp_path / "b.sqlite", 2.0)
    with pytest.raises(ParameterError, match="never changed"):
        Ledger(tmp_path / "b.sqlite", 3.0)
    assert Ledger(tmp_path / "b.sqlite").total_epsilon == 2.0
    with pytest.raises(ParameterError, match="total_epsilon"):
        Ledger(tmp_path / "new.sqlite")
    (tmp_path / "junk.sqlite").write_bytes(b"not a database" * 100)
    with pytest.raises(ParameterError, match=r"not a snapdp ledger|cannot be opened"):
        Ledger(tmp_path / "junk.sqlite", 1.0)


def _spender(path: str, start: mp.synchronize.Event, tries: int, out: mp.Queue) -> None:
    book = Ledger(path)
    start.wait()
    ok = 0
    for _ in range(tries):
        try:
            book.spend(0.125, 0.0, "count", "t", {"pid": os.getpid()})
            ok += 1
        except PrivacyBudgetError:
            pass
    out.put(ok)


def test_parallel_processes_never_exceed_the_budget(tmp_path: Path) -> None:
    path = str(tmp_path / "b.sqlite")
    Ledger(path, 1.0)  # room for exactly 8 spends of 1/8
    start, out = _CTX.Event(), _CTX.Queue()
    procs = [_CTX.Process(target=_spender, args=(path, start, 6, out)) for _ in range(4)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    successes = sum(out.get(timeout=5) for _ in procs)
    book = Ledger(path)
    assert successes == 8 == len(book.entries())
    assert book.spent() == 1
    assert len({e.query["pid"] for e in book.entries()}) >= 1


def _release_then_die(path: str, csv: str, stage: str) -> None:
    from snapdp.data import ledger as ledger_module

    def die() -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    if stage == "before":
        ledger_module._before_commit = die
    else:
        ledger_module._after_commit = die
    table = PrivateTable(engine=local_engine(csv), ledger=path)
    table.release([Query("count")], 0.25)
    os._exit(3)  # never reached: the process is killed inside release()


@pytest.mark.parametrize(("stage", "recorded"), [("before", 0), ("after", 1)])
def test_a_process_killed_mid_release_keeps_each_spend_exactly_once(
    tmp_path: Path, stage: str, recorded: int
) -> None:
    path = str(tmp_path / "b.sqlite")
    csv = tmp_path / "t.csv"
    pd.DataFrame({"x": range(10)}).to_csv(csv, index=False)
    local_engine(csv)  # skips here, in the parent, when no engine is installed
    Ledger(path, 1.0).spend(0.5, 0.0, "earlier", "t", {})
    child = _CTX.Process(target=_release_then_die, args=(path, str(csv), stage))
    child.start()
    child.join(60)
    assert child.exitcode == -signal.SIGKILL
    book = Ledger(path)  # the hot journal of a killed writer is rolled back on open
    assert [e.what for e in book.entries()] == ["earlier"] + ["count"] * recorded
    book.spend(0.125, 0.0, "after the crash", "t", {})  # the ledger is not left locked
    assert book.spent() == Fraction(5, 8) + Fraction(recorded, 4)
