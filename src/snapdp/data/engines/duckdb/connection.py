"""A DuckDB engine's connection (docs/data.md, "The command line", `--memory-limit`;
docs/performance.md, "One database per process").

An engine that sets none of DuckDB's database-wide settings (``memory_limit``,
``temp_directory``, ``threads``) gets a connection of its own to one in-memory database the
process shares: opening a database costs ~20 ms of CPU, a connection to an open one
microseconds. Registered views and temporary tables belong to the connection, so no engine sees
another's, and they are freed with it. An engine with settings of its own opens its own database.
Either way DuckDB tracks a query's progress (for ``progress()``) but never prints it, keeps no
insertion order, plans a query without looking at the data's statistics (so it never skips rows
by them), and never spills into the working folder. A shared database that a fatal error has
invalidated is replaced at the next engine's connection.
"""

from __future__ import annotations

import atexit
import contextlib
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

__all__ = ["connection", "open_shared_database_soon", "sql_string"]

#: DuckDB's optimizers that would make a query's plan, and so its work, depend on the data
#: (docs/data.md, "Run time"); every engine's database runs without them, so the plan depends on
#: the query and the source's schema and row count only:
#:
#: * ``filter_pushdown``, ``join_filter_pushdown``: a filter pushed into the scan, or from a
#:   join's keys into the other side's scan, skipped every row group (of a Parquet file) whose
#:   min/max showed no row could pass a bin, a key list or a ``where``;
#: * ``statistics_propagation``: the columns' min/max and null counts folded comparisons: a
#:   ``where`` no row could pass became an empty result, one every row passed was dropped with
#:   its column's read, ``IS NULL`` became false, and group keys were packed by their range
#:   (``compressed_materialization`` and the perfect-hash aggregate work only from these);
#: * ``join_order``: it ordered the joins with the declared keys tables by the columns' ranges and
#:   distinct counts, so one more distinct value could swap two joins (and its row estimates,
#:   which other operators read, came from them too). Without it the joins run in the query's
#:   order, and ``filter_pullup`` must go too: it turns a chain of joins into cross products
#:   under a filter, which only ``join_order`` or ``filter_pushdown`` turn back into joins;
#: * ``partitioned_execution``, ``row_group_pruner``: they split an aggregate or skip row groups
#:   by each row group's min/max (newer DuckDB versions only: disabled when the version has them);
#: * ``build_side_probe_side``: it hashed the side of a join with the fewer estimated rows, so
#:   one more row could swap which side is built (with 100 declared keys: the data at 113 rows,
#:   the keys at 114). Without it the right side as written is built: the keys, in a key join.
#:
#: Every row is read, cast and filtered the same way, whatever it holds
#: (tests/unit/data/engines/test_duckdb_no_statistics.py, test_duckdb_no_pruning.py).
_BLIND_OPTIMIZERS = (
    "filter_pushdown",
    "join_filter_pushdown",
    "statistics_propagation",
    "join_order",
    "filter_pullup",
)
_BLIND_OPTIMIZERS_IF_PRESENT = (
    "partitioned_execution",
    "row_group_pruner",
    "build_side_probe_side",
)

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
        return _shared_connection(duckdb)
    con: DuckDBPyConnection = duckdb.connect(":memory:")
    _configure(duckdb, con, memory_limit, temp_directory, threads, private_dir)
    _own_settings(con)
    return con


def _own_settings(con: DuckDBPyConnection) -> None:
    """The connection's own settings, not the database's."""
    con.execute("SET enable_progress_bar = true")
    con.execute("SET enable_progress_bar_print = false")


def _shared_connection(duckdb: Any) -> DuckDBPyConnection:
    """A new connection to the shared database. A fatal error (DuckDB's ``FatalException``, or an
    internal error) invalidates a database: every later query on it fails, the first setting
    below included. The shared database is then dropped and a fresh one opened, once; engines
    already connected to the old one keep failing, later ones work."""
    database = _shared_database(duckdb)
    try:
        con = database.cursor()
        _own_settings(con)
    except duckdb.FatalException:
        _forget_shared(database)
        con = _shared_database(duckdb).cursor()
        _own_settings(con)
    return con


def open_shared_database_soon() -> threading.Thread:
    """Start opening the process's shared database on another thread, if it is not open yet,
    and return at once. ``duckdb.connect`` releases the interpreter's lock, so its 20–30 ms run
    beside the caller's own imports and planning; the first engine's connection then waits for
    it (the lock below) rather than opening it. What fails there is left for that connection to
    raise, with its own message. The thread is not a daemon: the interpreter's exit waits for it
    rather than unloading DuckDB under it. For a caller that knows, from its arguments alone,
    that its engine will use the shared database (``snapdp run``, ``snapdp sql``). Returns the
    thread (already started), for a caller that wants to wait for it."""
    import duckdb

    def _open() -> None:
        with contextlib.suppress(BaseException):  # the engine's own connection raises it
            _shared_database(duckdb)

    opener = threading.Thread(target=_open, name="snapdp-open-database")
    opener.start()
    return opener


def _shared_database(duckdb: Any) -> DuckDBPyConnection:
    global _shared
    with _shared_lock:
        if _shared is None or _shared[0] != os.getpid():
            if _shared is not None:
                _inherited.append(_shared[1])
            database = duckdb.connect(":memory:")
            folder = tempfile.mkdtemp(prefix="snapdp-")
            atexit.register(_remove_folder, folder, os.getpid())
            _configure(duckdb, database, None, None, None, lambda: folder)
            _shared = (os.getpid(), database)
        return _shared[1]


def _forget_shared(database: DuckDBPyConnection) -> None:
    """Drop ``database`` as the shared one (unless another thread already replaced it); the
    engines' connections to it keep it open until they are freed."""
    global _shared
    with _shared_lock:
        if _shared is not None and _shared[1] is database:
            _shared = None


def _plan_blind(con: DuckDBPyConnection) -> None:
    """Disable, database-wide, the optimizers that read the data's statistics (see
    ``_BLIND_OPTIMIZERS``). DuckDB refuses a name it does not know: the newer ones are disabled
    only when this version lists them."""
    names = list(_BLIND_OPTIMIZERS)
    wanted = ", ".join(sql_string(name) for name in _BLIND_OPTIMIZERS_IF_PRESENT)
    rows = con.execute(f"SELECT name FROM duckdb_optimizers() WHERE name IN ({wanted})").fetchall()
    names += sorted(str(row[0]) for row in rows)
    con.execute(f"SET disabled_optimizers = {sql_string(','.join(names))}")


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
    _plan_blind(con)
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
