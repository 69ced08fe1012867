"""The SQLite ledger: exact accounting, per-dataset budgets, every failure mode on real files,
concurrent processes, processes killed mid-release, and ledgers written by snapdp 0.1."""

from __future__ import annotations

import multiprocessing as mp
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest

from snapdp.data import Column, Ledger, PrivateTable, Query, Schema
from snapdp.data.budget.ledger import read_ledger
from snapdp.errors import LedgerError, ParameterError, PrivacyBudgetError
from snapdp.mechanism import SnappingMechanism

_CTX = mp.get_context("fork")
_IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# -- exact accounting --------------------------------------------------------------------------
def test_ten_spends_of_a_tenth_fill_a_total_of_one_exactly(tmp_path: Path) -> None:
    path = tmp_path / "b.sqlite"
    book = Ledger(path, "1")
    for _ in range(10):
        book.check("0.1")
        book.spend("0.1", 0.0, "count", "t", {})
    assert book.spent() == 1 and book.remaining() == 0
    with pytest.raises(PrivacyBudgetError, match=r"needs ε = 0\.1 but only 0 of the total 1"):
        book.check("0.1")
    with pytest.raises(PrivacyBudgetError, match="exceeded"):
        book.spend(Fraction(1, 10**30), 0.0, "count", "t", {})
    again = Ledger(path)
    assert again.total_epsilon == 1 and len(again.entries()) == 10
    assert {e.epsilon for e in again.entries()} == {Fraction(1, 10)}
    # the stored text is the exact rational, not a double
    with sqlite3.connect(path) as con:
        assert {r[0] for r in con.execute("SELECT epsilon FROM spends")} == {"1/10"}


def test_a_float_is_taken_at_its_binary_value(tmp_path: Path) -> None:
    book = Ledger(tmp_path / "c.sqlite", 1.0)  # 0.1 as a double is above 1/10: nine fit
    for _ in range(9):
        book.spend(0.1, 0.0, "x", "t", {})
    with pytest.raises(PrivacyBudgetError):
        book.spend(0.1, 0.0, "x", "t", {})
    assert book.spent() == 9 * Fraction(0.1)


def test_a_budget_is_never_changed_and_a_new_dataset_needs_a_total(tmp_path: Path) -> None:
    path = tmp_path / "b.sqlite"
    Ledger(path, 2).spend(1, 0.0, "x", "t", {})
    with pytest.raises(ParameterError, match="never changed") as info:
        Ledger(path, 3)
    assert info.value.parameter == "total_epsilon"
    assert Ledger(path).total_epsilon == 2 == Ledger(path, "2.0").total_epsilon
    with pytest.raises(ParameterError, match="total_epsilon` is needed"):
        Ledger(path, dataset="other")
    with pytest.raises(ParameterError, match="total_epsilon` is needed"):
        Ledger(tmp_path / "new.sqlite")


# -- per-dataset budgets -----------------------------------------------------------------------
def test_datasets_have_separate_budgets_in_one_file(tmp_path: Path) -> None:
    path = tmp_path / "b.sqlite"
    a = Ledger(path, 1, dataset="a")
    b = Ledger(path, "0.5", dataset="b")
    a.spend("0.75", 0.0, "x", "A", {})
    b.spend("0.5", 0.0, "y", "B", {})
    with pytest.raises(PrivacyBudgetError, match="dataset 'b'"):
        b.check("0.01")
    a.spend("0.25", 0.0, "x", "A", {})
    report = read_ledger(path)
    rows = [(d.dataset, d.total_epsilon, d.spent, d.remaining, d.releases) for d in report.datasets]
    assert Ledger.datasets(path) == report.datasets
    assert rows == [("a", 1, 1, 0, 2), ("b", Fraction(1, 2), Fraction(1, 2), 0, 1)]
    assert [e.dataset for e in report.entries] == ["a", "b", "a"]


def test_changing_bounds_or_keys_does_not_open_a_fresh_budget(tmp_path: Path) -> None:
    csv = tmp_path / "t.csv"
    pd.DataFrame({"x": range(10), "g": [0, 1] * 5}).to_csv(csv, index=False)
    path = tmp_path / "b.sqlite"
    narrow = Schema((Column("x", "decimal", 0, 10),))
    PrivateTable(str(csv), narrow, total_epsilon=1, ledger=path).release(
        [Query("sum", "x")], Fraction(1, 2)
    )
    wide = Schema((Column("x", "decimal", -5, 50), Column("g", "integer", keys=(0, 1, 2))))
    table = PrivateTable(csv, wide, ledger=path)  # the same file by another spelling: same budget
    table.release([Query("sum", "x")], Fraction(1, 4))
    table.release([Query("count", by=("g",))], Fraction(1, 4))
    with pytest.raises(PrivacyBudgetError):
        table.release([Query("count")], Fraction(1, 1000))
    (only,) = read_ledger(path).datasets
    assert only.dataset == str(csv.resolve()) and only.spent == 1


# -- refusals: before any noise, one line naming the file, nothing left behind ----------------
@pytest.fixture
def no_noise(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if any noise is drawn."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("noise was drawn")

    monkeypatch.setattr(SnappingMechanism, "release_many", refuse)
    monkeypatch.setattr(SnappingMechanism, "release", refuse)


def _table(tmp_path: Path, ledger: Path, total: object = 1) -> PrivateTable:
    csv = tmp_path / "t.csv"
    pd.DataFrame({"x": range(10)}).to_csv(csv, index=False)
    return PrivateTable(csv, ledger=ledger, total_epsilon=total)


def test_a_refused_first_release_leaves_no_file(tmp_path: Path, no_noise: None) -> None:
    folder = tmp_path / "f"
    folder.mkdir()
    book = Ledger(folder / "b.sqlite", "0.5")
    assert _files(folder) == []  # opening creates nothing
    with pytest.raises(PrivacyBudgetError):
        book.check(1)
    with pytest.raises(PrivacyBudgetError):
        book.spend(1, 0.0, "x", "t", {})
    assert _files(folder) == []
    book.spend("0.5", 0.0, "x", "t", {})
    assert _files(folder) == ["b.sqlite"]  # no temporary file or journal left


def _foreign(path: Path) -> bytes:
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE people (name TEXT, income REAL)")
        con.execute("INSERT INTO people VALUES ('a', 1.0)")
    con.close()
    return path.read_bytes()


@pytest.mark.parametrize("make", ["foreign", "junk", "newer"])
def test_a_foreign_or_broken_file_is_refused_untouched(
    tmp_path: Path, no_noise: None, make: str
) -> None:
    path = tmp_path / "b.sqlite"
    if make == "foreign":
        before, message = _foreign(path), "not a snapdp ledger .tables: people"
    elif make == "junk":
        path.write_bytes(b"not a database" * 100)
        before, message = path.read_bytes(), "is not an SQLite database"
    else:
        Ledger(path, 1).spend(1, 0.0, "x", "t", {})
        with sqlite3.connect(path) as con:
            con.execute("UPDATE meta SET value = '3' WHERE key = 'version'")
        con.close()
        before, message = path.read_bytes(), "newer snapdp"
    with pytest.raises(LedgerError, match=message) as info:
        Ledger(path, 1)
    assert str(path) in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(LedgerError):
        read_ledger(path)
    assert path.read_bytes() == before
    assert _files(tmp_path) == ["b.sqlite"]


def _as_unprivileged(body: Callable[[], None]) -> None:
    """Run ``body`` here, or — when the tests run as root, for whom chmod does not stop writes —
    in a forked child that has dropped to user/group 65534 ("nobody"), and re-raise its failure."""
    if not _IS_ROOT:
        body()
        return
    # user 65534 may not read root's site-packages: import what the body needs before dropping
    import duckdb  # noqa: F401

    import snapdp.data.engines.duckdb.engine  # noqa: F401

    queue: mp.Queue[str] = _CTX.Queue()

    def child() -> None:
        try:
            os.setgid(65534)
            os.setuid(65534)
            body()
            queue.put("")
        except BaseException as exc:  # report any failure to the parent
            queue.put(f"{type(exc).__name__}: {exc}")

    process = _CTX.Process(target=child)
    process.start()
    process.join(60)
    message = queue.get(timeout=5)
    assert process.exitcode == 0 and message == "", message


@pytest.fixture
def shared_folder(tmp_path: Path) -> Iterator[Path]:
    """A folder that user 65534 can reach (pytest's own are private to their owner)."""
    folder = Path(tempfile.mkdtemp(prefix="snapdp-ledger-"))
    folder.chmod(0o777)
    try:
        yield folder
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder)


def _give_away(path: Path) -> None:
    if _IS_ROOT:
        os.chown(path, 65534, 65534)


@pytest.mark.parametrize("how", ["file", "folder", "journal"])
def test_an_unwritable_ledger_is_refused_before_any_noise(
    shared_folder: Path, no_noise: None, how: str
) -> None:
    folder = shared_folder / "f"
    folder.mkdir()
    path = folder / "b.sqlite"
    Ledger(path, 1).spend("0.25", 0.0, "earlier", "t", {})
    _give_away(path)
    if how == "journal":  # unwritable even for root: SQLite cannot create its journal file
        Path(f"{path}-journal").mkdir()
    if how == "file":
        folder.chmod(0o777)
        path.chmod(0o444)
    if how == "folder":
        folder.chmod(0o555)
    csv = shared_folder / "t.csv"
    pd.DataFrame({"x": range(10)}).to_csv(csv, index=False)
    csv.chmod(0o644)
    before = path.read_bytes()

    def refused() -> None:
        with pytest.raises(LedgerError, match="cannot be written") as info:
            Ledger(path).check("0.25")
        assert str(path) in str(info.value)
        with pytest.raises(LedgerError, match="cannot be written"):
            table = PrivateTable(csv, ledger=path, dataset="default")
            table.release([Query("count")], Fraction(1, 4))
        if how != "journal":  # (SQLite cannot even read past a journal path it cannot open)
            assert Ledger(path).spent() == Fraction(1, 4)  # still readable

    try:
        _as_unprivileged(refused)
    finally:
        folder.chmod(0o755)
    assert path.read_bytes() == before


def test_a_new_ledger_in_an_unwritable_folder_is_refused(
    shared_folder: Path, no_noise: None
) -> None:
    folder = shared_folder / "ro"
    folder.mkdir()
    folder.chmod(0o555)

    def refused() -> None:
        with pytest.raises(LedgerError, match="is not writable"):
            Ledger(folder / "b.sqlite", 1).check("0.5")
        with pytest.raises(LedgerError, match="cannot be written"):
            Ledger(folder / "b.sqlite", 1).spend("0.5", 0.0, "x", "t", {})

    try:
        _as_unprivileged(refused)
    finally:
        folder.chmod(0o755)
    assert _files(folder) == []


def test_paths_that_cannot_be_ledgers(tmp_path: Path) -> None:
    with pytest.raises(ParameterError, match="does not exist: create it first"):
        Ledger(tmp_path / "nope" / "b.sqlite", 1)
    with pytest.raises(ParameterError, match="not a regular file"):
        Ledger(tmp_path, 1)
    with pytest.raises(ParameterError, match="does not exist"):
        read_ledger(tmp_path / "missing.sqlite")
    assert _files(tmp_path) == []


_HOLD_LOCK = """
import sqlite3, sys, time
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.readline()
"""


def test_a_lock_held_past_the_timeout_is_refused(tmp_path: Path, no_noise: None) -> None:
    path = tmp_path / "b.sqlite"
    Ledger(path, 1).spend("0.25", 0.0, "earlier", "t", {})
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(LedgerError, match="locked by another process"):
            Ledger(path, timeout=0.2)  # opening reads, which an exclusive lock blocks too
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(30)
    book = Ledger(path, timeout=0.2)
    book.spend("0.25", 0.0, "after", "t", {})  # the lock is gone: the ledger works again
    assert book.spent() == Fraction(1, 2)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ("UPDATE spends SET epsilon = 'nan' WHERE id = 1", "spend #1 has ε = 'nan'"),
        ("UPDATE spends SET epsilon = '-1/4' WHERE id = 1", "spend #1 has ε = '-1/4'"),
        ("UPDATE spends SET epsilon = '1/8' WHERE id = 1", "spend #1 does not match"),
        ("UPDATE spends SET delta = 'nan' WHERE id = 2", "spend #2 has δ = 'nan'"),
        ("UPDATE budgets SET total_epsilon = 'nan'", "total ε 'nan'"),
        ("UPDATE budgets SET total_epsilon = '100/1'", "total of dataset 'default' was changed"),
        ("DELETE FROM spends WHERE id = 1", "spend #2 does not match"),
        ("DELETE FROM spends WHERE id = 2", "last recorded spend is missing"),
        ("UPDATE spends SET dataset = 'other' WHERE id = 2", "spend #2 does not match"),
    ],
)
def test_tampered_rows_are_detected(
    tmp_path: Path, no_noise: None, edit: str, message: str
) -> None:
    path = tmp_path / "b.sqlite"
    book = Ledger(path, 1)
    book.spend("0.25", 0.0, "first", "t", {})
    book.spend("0.25", 0.0, "second", "t", {})
    with sqlite3.connect(path) as con:
        con.execute(edit)
    con.close()
    before = path.read_bytes()
    for action in (lambda: Ledger(path), lambda: read_ledger(path), lambda: book.check("0.1")):
        with pytest.raises(LedgerError, match=message) as info:
            action()
        assert "damaged or was edited" in str(info.value) and str(path) in str(info.value)
    with pytest.raises(LedgerError):
        book.spend("0.1", 0.0, "x", "t", {})
    assert path.read_bytes() == before


# -- ledgers written by snapdp 0.1 ----------------------------------------------------------
_OLD_SCHEMA = """
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


def _old_ledger(path: Path, total: float, spends: list[tuple[object, str]]) -> None:
    """A ledger file exactly as snapdp 0.1 wrote it (its schema, REAL ε, repr(total))."""
    con = sqlite3.connect(path)
    con.executescript(_OLD_SCHEMA)
    con.execute(
        "INSERT INTO meta VALUES ('total_epsilon', ?), ('created', ?)",
        (repr(total), "2026-01-01T00:00:00+00:00"),
    )
    for eps, label in spends:
        con.execute(
            "INSERT INTO spends (time, epsilon, delta, what, dataset, query) "
            "VALUES ('2026-01-02T00:00:00+00:00', ?, 0.0, 'count', ?, '{}')",
            (eps, label),
        )
    con.commit()
    con.close()


def test_an_old_ledger_opens_and_is_migrated_in_place(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    _old_ledger(path, 1.0, [(0.5, "a.csv"), (0.1, "b.csv")])
    before = path.read_bytes()
    book = Ledger(path, dataset="a.csv")  # reading changes nothing
    assert book.total_epsilon == 1 and book.spent() == Fraction(0.5)
    # the old file was one budget: it still caps every dataset together
    assert book.remaining() == 1 - Fraction(0.5) - Fraction(0.1)
    assert path.read_bytes() == before
    new = Ledger(path, dataset="c.csv")  # a dataset the old file never saw gets its total
    assert new.total_epsilon == 1
    new.spend("0.25", 0.0, "x", "c", {})  # migrates, in the same transaction
    report = read_ledger(path)
    assert report.cap == 1 and [e.id for e in report.entries] == [1, 2, 3]
    assert [e.epsilon for e in report.entries] == [Fraction(0.5), Fraction(0.1), Fraction(1, 4)]
    with sqlite3.connect(path) as con:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    con.close()
    assert tables == {"meta", "budgets", "spends", "settlements", "sqlite_sequence"}
    with pytest.raises(PrivacyBudgetError):
        Ledger(path, dataset="d").spend("0.2", 0.0, "x", "d", {})  # 0.5 + 0.1 + 0.25 + 0.2 > 1


@pytest.mark.parametrize("bad", ["nan", -0.5, "inf"])
def test_a_damaged_old_ledger_is_refused_unmigrated(tmp_path: Path, bad: object) -> None:
    path = tmp_path / "old.sqlite"
    _old_ledger(path, 1.0, [(0.25, "a.csv"), (bad, "a.csv")])
    before = path.read_bytes()
    with pytest.raises(LedgerError, match="spend #2 has ε"):
        Ledger(path, dataset="a.csv")
    assert path.read_bytes() == before


# -- concurrency and crashes ----------------------------------------------------------------
def _spender(path: str, start: mp.synchronize.Event, tries: int, out: mp.Queue) -> None:
    book = Ledger(path, 1)
    start.wait()
    ok = 0
    for _ in range(tries):
        try:
            book.spend("0.125", 0.0, "count", "t", {"pid": os.getpid()})
            ok += 1
        except PrivacyBudgetError:
            pass
    out.put(ok)


def test_parallel_processes_never_exceed_the_budget(tmp_path: Path) -> None:
    path = str(tmp_path / "b.sqlite")  # not created yet: the processes race to create it
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
    assert _files(tmp_path) == ["b.sqlite"]


def _release_then_die(path: str, csv: str, stage: str) -> None:
    from snapdp.data.budget import ledger as ledger_module

    def die() -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    if stage == "before":
        ledger_module._before_commit = die
    else:
        ledger_module._after_commit = die
    table = PrivateTable(csv, ledger=path, dataset="t")
    table.release([Query("count")], 0.25)
    os._exit(3)  # never reached: the process is killed inside release()


@pytest.mark.parametrize(("stage", "recorded"), [("before", 0), ("after", 1)])
def test_a_process_killed_mid_release_keeps_each_spend_exactly_once(
    tmp_path: Path, stage: str, recorded: int
) -> None:
    path = str(tmp_path / "b.sqlite")
    csv = tmp_path / "t.csv"
    pd.DataFrame({"x": range(10)}).to_csv(csv, index=False)
    Ledger(path, 1.0, dataset="t").spend(0.5, 0.0, "earlier", "t", {})
    child = _CTX.Process(target=_release_then_die, args=(path, str(csv), stage))
    child.start()
    child.join(60)
    assert child.exitcode == -signal.SIGKILL
    book = Ledger(path, dataset="t")  # the hot journal of a killed writer is rolled back on open
    assert [e.what for e in book.entries()] == ["earlier"] + ["count"] * recorded
    book.spend(0.125, 0.0, "after the crash", "t", {})  # the ledger is not left locked
    assert book.spent() == Fraction(5, 8) + Fraction(recorded, 4)


def test_a_process_killed_while_creating_the_file_leaves_no_ledger(tmp_path: Path) -> None:
    path = str(tmp_path / "b.sqlite")

    def create_then_die() -> None:
        from snapdp.data.budget import ledger as ledger_module

        ledger_module._before_commit = lambda: os.kill(os.getpid(), signal.SIGKILL)
        Ledger(path, 1).spend("0.5", 0.0, "x", "t", {})

    child = _CTX.Process(target=create_then_die)
    child.start()
    child.join(60)
    assert child.exitcode == -signal.SIGKILL
    assert not Path(path).exists()  # only a hidden temporary file may remain
    Ledger(path, 1).spend("0.5", 0.0, "x", "t", {})
    assert Ledger(path).spent() == Fraction(1, 2)


def test_an_empty_file_left_by_an_older_snapdp_becomes_a_ledger(tmp_path: Path) -> None:
    path = tmp_path / "b.sqlite"
    path.write_bytes(b"")  # what a refused first release of snapdp 0.1 could leave behind
    with pytest.raises(ParameterError, match="total_epsilon` is needed"):
        Ledger(path)
    assert read_ledger(path).entries == [] and path.read_bytes() == b""
    Ledger(path, "0.5").spend("0.5", 0.0, "x", "t", {})
    assert Ledger(path).remaining() == 0
