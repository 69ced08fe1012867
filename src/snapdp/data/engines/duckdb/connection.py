"""A DuckDB engine's connection (docs/data.md, "The command line", `--memory-limit`;
docs/performance.md, "One database per process").

An engine that sets none of DuckDB's database-wide settings (``memory_limit``,
``temp_directory``, ``threads``) gets a connection of its own to one in-memory database the
process shares: opening a database costs ~20 ms of CPU, a connection to an open one
microseconds. Registered views and temporary tables belong to the connection, so no engine sees
another's, and they are freed with it. An engine with settings of its own opens its own database.
Either way DuckDB tracks a query's progress (for ``progress()``) but never prints it, keeps no
insertion order, never skips rows by their statistics, and never spills into the working
folder.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from snapdp._validation import check_count
from snapdp.errors import ParameterError

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection

__all__ = ["connection", "sql_string"]

#: Filters are never pushed into a scan or from a join's keys into the other side's scan: with
#: them DuckDB skips a Parquet row group (or a held table's) whose min/max shows no row can pass,
#: so a release's run time would show whether one person's rows lie in a bin, match a key or pass
#: a ``where`` (docs/data.md, "Run time"). Every row is read and filtered after its casts.
_NO_PRUNING = "SET disabled_optimizers = 'filter_pushdown,join_filter_pushdown'"

#: The shared database and the pid that opened it (a forked child opens its own).
_shared: tuple[int, DuckDBPyConnection] | None = None
_shared_lock = threading.Lock()
_inherited: list[DuckDBPyConnection] = []  # a parent's database, never closed by its child


def sql_string(text: str) -> str:
    """A SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def connection(
    duckdb: Any,
    memory_limit: str | None,
    temp_directory: str | None,
    threads: int | None,
    private_dir: Callable[[], str],
) -> DuckDBPyConnection:
    """A new connection with the settings above: to the shared database when ``memory_limit``,
    ``temp_directory`` and ``threads`` are all None, else to a database of its own with them
    (spilling to ``private_dir()/spill`` by default). A setting DuckDB refuses is a
    :class:`ParameterError` naming it."""
    if memory_limit is None and temp_directory is None and threads is None:
        con = _shared_database(duckdb).cursor()
    else:
        con = duckdb.connect(":memory:")
        _configure(duckdb, con, memory_limit, temp_directory, threads, private_dir)
    # the connection's own settings, not the database's
    con.execute("SET enable_progress_bar = true")
    con.execute("SET enable_progress_bar_print = false")
    return con


def _shared_database(duckdb: Any) -> DuckDBPyConnection:
    global _shared
    with _shared_lock:
        if _shared is None or _shared[0] != os.getpid():
            if _shared is not None:
                _inherited.append(_shared[1])
            database = duckdb.connect(":memory:")
            folder = tempfile.mkdtemp(prefix="snapdp-")
            atexit.register(_remove_folder, folder, os.getpid())
            database.execute("SET preserve_insertion_order = false")
            database.execute(_NO_PRUNING)
            database.execute(f"SET temp_directory = {sql_string(os.path.join(folder, 'spill'))}")
            _shared = (os.getpid(), database)
        return _shared[1]


def _after_fork_in_child() -> None:
    """A child forked while another thread held the lock (opening the database) would wait on
    it forever: it gets a new lock, and opens its own database at its first engine."""
    global _shared, _shared_lock
    _shared_lock = threading.Lock()
    if _shared is not None:
        _inherited.append(_shared[1])
        _shared = None


os.register_at_fork(after_in_child=_after_fork_in_child)


def _remove_folder(folder: str, pid: int) -> None:
    if os.getpid() == pid:  # not from a forked child, whose parent still uses it
        shutil.rmtree(folder, True)


def _configure(
    duckdb: Any,
    con: DuckDBPyConnection,
    memory_limit: str | None,
    temp_directory: str | None,
    threads: int | None,
    private_dir: Callable[[], str],
) -> None:
    con.execute("SET preserve_insertion_order = false")
    con.execute(_NO_PRUNING)
    if memory_limit is not None:
        refusal = f"`memory_limit` must be a size such as '2GB', not {memory_limit!r}"
        _set(duckdb, con, "memory_limit", str(memory_limit), refusal)
    if temp_directory is None:  # never DuckDB's default (".tmp" in the working folder)
        temp_directory = os.path.join(private_dir(), "spill")
    refusal = f"`temp_directory` cannot be used: {str(temp_directory)!r}"
    _set(duckdb, con, "temp_directory", str(temp_directory), refusal)
    if threads is not None:
        con.execute(f"SET threads = {check_count('threads', threads)}")


def _set(duckdb: Any, con: DuckDBPyConnection, name: str, value: str, refusal: str) -> None:
    """``SET name = 'value'``; a value DuckDB refuses is a :class:`ParameterError` naming the
    parameter (DuckDB's own message is not passed on)."""
    try:
        con.execute(f"SET {name} = {sql_string(value)}")
    except duckdb.Error:
        raise ParameterError(refusal, parameter=name) from None
