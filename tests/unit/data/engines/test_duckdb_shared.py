"""Engines with DuckDB's default settings share one in-memory database, each through a
connection of its own (snapdp.data.engines.duckdb.connection): what one engine registers or holds
is invisible to the others, an engine with settings of its own opens its own database, a forked
child opens a new one, and the shared database's spill folder is removed at exit."""

from __future__ import annotations

import subprocess
import sys
import threading
from fractions import Fraction
from pathlib import Path

import pytest
from tests.data_oracle import OracleEngine

from snapdp._records import as_dict
from snapdp.data.engines.base import AggregatePlan, ValueColumn
from snapdp.data.engines.duckdb import connection as sources
from snapdp.data.engines.duckdb.engine import DuckDBEngine
from snapdp.data.model.schema import Column

pytest.importorskip("duckdb")


def _plan() -> AggregatePlan:
    sex = Column("sex", "integer", keys=(0, 1))
    age = Column("age", "integer", lower=Fraction(0), upper=Fraction(100))
    return AggregatePlan(groupings=(sex,), values=(ValueColumn(age, 0, 0, 100),))


def _table(path: Path, rows: list[tuple[int, int]]) -> Path:
    path.write_text("sex,age\n" + "".join(f"{s},{a}\n" for s, a in rows))
    return path


def test_engines_share_the_database_but_not_their_tables(tmp_path: Path) -> None:
    a = _table(tmp_path / "a.csv", [(0, 10), (1, 20), (1, 30)])
    b = _table(tmp_path / "b.csv", [(0, 99), (0, 98), (0, 97), (1, 1)])
    first, second = DuckDBEngine(a), DuckDBEngine(b)
    assert first._con is not second._con
    assert sources._shared is not None
    plan = _plan()
    # interleaved: each engine's held table and registered views are its own
    for _ in range(2):
        for engine, path in ((first, a), (second, b)):
            assert as_dict(engine.aggregate(plan)) == as_dict(OracleEngine(path).aggregate(plan))
    # progress is tracked on every connection (a setting of the connection, not the database)
    for engine in (first, second):
        assert engine._con.execute("SELECT current_setting('enable_progress_bar')").fetchone() == (
            True,
        )


def test_settings_of_its_own_open_a_database_of_its_own(tmp_path: Path) -> None:
    data = _table(tmp_path / "t.csv", [(0, 1), (1, 2)])
    DuckDBEngine(data)  # the shared database exists
    assert sources._shared is not None
    shared = sources._shared[1]
    before = shared.execute("SELECT current_setting('threads')").fetchone()
    own = DuckDBEngine(data, threads=1)
    assert own._con.execute("SELECT current_setting('threads')").fetchone() == (1,)
    assert shared.execute("SELECT current_setting('threads')").fetchone() == before
    plan = _plan()
    assert as_dict(own.aggregate(plan)) == as_dict(OracleEngine(data).aggregate(plan))


def test_a_forked_child_opens_its_own_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _table(tmp_path / "t.csv", [(0, 1), (1, 2)])
    DuckDBEngine(data)
    assert sources._shared is not None
    parent = sources._shared
    monkeypatch.setattr(sources.os, "getpid", lambda: parent[0] + 1)
    monkeypatch.setattr(sources.atexit, "register", lambda *args: None)  # no folder left behind
    child = DuckDBEngine(data)
    assert sources._shared is not None and sources._shared[1] is not parent[1]
    assert parent[1] in sources._inherited  # kept, never closed by the child
    plan = _plan()
    assert as_dict(child.aggregate(plan)) == as_dict(OracleEngine(data).aggregate(plan))


def test_the_spill_folder_is_removed_at_exit(tmp_path: Path) -> None:
    data = _table(tmp_path / "t.csv", [(0, 1), (1, 2)])
    code = (
        "import sys\n"
        "from snapdp.data.engines.duckdb.engine import DuckDBEngine\n"
        "e = DuckDBEngine(sys.argv[1])\n"
        "print(e._con.execute(\"SELECT current_setting('temp_directory')\").fetchone()[0])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(data)], capture_output=True, text=True, check=True
    )
    spill = Path(out.stdout.strip())
    assert spill.name == "spill" and spill.parent.name.startswith("snapdp-")
    assert not spill.parent.exists()


def test_a_real_fork_opens_its_own_database(tmp_path: Path) -> None:
    import os

    data = _table(tmp_path / "t.csv", [(0, 1), (1, 2)])
    DuckDBEngine(data)
    plan = _plan()
    expected = as_dict(OracleEngine(data).aggregate(plan))
    pid = os.fork()
    if pid == 0:  # the child: a database of its own, the same aggregates
        ok = False
        try:
            ok = sources._shared is None and as_dict(DuckDBEngine(data).aggregate(plan)) == expected
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert as_dict(DuckDBEngine(data).aggregate(plan)) == expected  # the parent's still works


def test_the_shared_database_opened_ahead_is_the_one_engines_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sources, "_shared", None)
    monkeypatch.setattr(sources.atexit, "register", lambda *args: None)
    opener = sources.open_shared_database_soon()
    assert not opener.daemon  # the interpreter's exit waits for it, never unloads DuckDB under it
    opener.join()
    assert sources._shared is not None
    opened = sources._shared[1]
    data = _table(tmp_path / "t.csv", [(0, 1), (1, 2), (1, 3)])
    engine = DuckDBEngine(data)
    assert sources._shared[1] is opened  # not opened a second time
    assert as_dict(engine.aggregate(_plan())) == as_dict(OracleEngine(data).aggregate(_plan()))
    assert engine._con.execute("SELECT current_setting('preserve_insertion_order')").fetchone() == (
        False,
    )
    sources.open_shared_database_soon().join()  # already open: nothing changes
    assert sources._shared[1] is opened


def test_a_database_that_fails_to_open_ahead_fails_at_the_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import duckdb

    monkeypatch.setattr(sources, "_shared", None)
    calls: list[str] = []

    def refuse(*args: object, **kwargs: object) -> None:
        calls.append(threading.current_thread().name)
        raise duckdb.IOException("cannot open")

    raised: list[BaseException] = []
    monkeypatch.setattr(threading, "excepthook", lambda hook: raised.append(hook.exc_value))
    monkeypatch.setattr(duckdb, "connect", refuse)
    sources.open_shared_database_soon().join()
    assert calls == ["snapdp-open-database"] and raised == [] and sources._shared is None
    with pytest.raises(duckdb.IOException, match="cannot open"):
        DuckDBEngine(_table(tmp_path / "t.csv", [(0, 1)]))
    assert calls == ["snapdp-open-database", "MainThread"]  # the engine's own attempt raised
