"""How the ``snapdp`` command's process ends (docs/performance.md, "Latency").

Started as the command (``snapdp …``, ``python -m snapdp.cli …``), nothing runs after it, so the
interpreter's teardown (clearing ~1,500 modules, freeing every object one by one) is ~30 ms of a
fresh ``snapdp run`` spent on memory the kernel frees at once. :func:`end_process` does what the
interpreter does at exit except that teardown: it stops the threads as the interpreter does
(idle executor workers told to end, then every thread that is no daemon joined), runs every exit
handler (those registered before the command too, such as a coverage tool's, in the usual
last-in-first-out order), flushes stdout and stderr, and ends the process with the status
``SystemExit`` would have given. Every file a command writes is closed before it returns
(results, report, ledger: the ledger's SQLite connections are closed per operation).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
import traceback
from collections.abc import Callable
from typing import NoReturn

__all__ = ["end_process", "exit_status"]


def exit_status(code: object) -> int:
    """The status the interpreter gives ``SystemExit(code)``: 0 for None; for an int, its value
    as a C ``long`` (-1 when it does not fit) cut to a C ``int``, as CPython does; else 1, after
    printing ``code`` to stderr (to the process's file 2 when ``sys.stderr`` is None)."""
    if code is None:
        return 0
    if isinstance(code, int):
        n = code if -(1 << 63) <= code < (1 << 63) else -1
        return (n + (1 << 31)) % (1 << 32) - (1 << 31)
    with contextlib.suppress(Exception):  # unprintable: the status says it failed all the same
        text = str(code)
        if sys.stderr is not None:
            print(text, file=sys.stderr)
        else:
            os.write(2, (text + "\n").encode(errors="backslashreplace"))
    return 1


def end_process(code: object) -> NoReturn:
    """End the process as after ``SystemExit(code)``, without the interpreter's teardown (see
    the module's docstring). As at the interpreter's own exit: an exception while the threads
    stop (a Ctrl-C meanwhile) is reported as ignored and the exit goes on; an exit handler's is
    reported by :mod:`atexit` itself; a stream that fails to flush makes the status 120 (stdout's
    failure reported as ignored); a closed stream is skipped."""
    status = exit_status(code)
    # The interpreter's own first step at exit: the threading module's exit callbacks (an
    # executor's idle workers are told to stop) and a join of every thread that is no daemon.
    try:
        shutdown: Callable[[], None] | None = getattr(threading, "_shutdown", None)
        if shutdown is not None:
            shutdown()
        else:
            for thread in threading.enumerate():
                if thread is not threading.main_thread() and not thread.daemon:
                    thread.join()
    except BaseException:  # as CPython: reported, the exit goes on
        _ignored(f"Exception ignored in: {threading!r}")
    try:
        atexit._run_exitfuncs()
    except BaseException:  # a Ctrl-C between two handlers
        _ignored("Exception ignored in atexit callbacks")
    for stream in (sys.stdout, sys.stderr):
        if stream is None or getattr(stream, "closed", False):
            continue
        try:
            stream.flush()
        except BaseException:
            status = 120
            if stream is sys.stdout:
                _ignored(f"Exception ignored in: {stream!r}")
    os._exit(status)


def _ignored(heading: str) -> None:
    """Report the exception being handled as CPython reports one it ignores at exit (a heading
    and the traceback on stderr); nothing when stderr cannot take it."""
    with contextlib.suppress(BaseException):
        if sys.stderr is not None and not getattr(sys.stderr, "closed", False):
            print(heading, file=sys.stderr)
            traceback.print_exc(file=sys.stderr, chain=False)  # not the SystemExit it ends
            sys.stderr.flush()
