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
from collections.abc import Callable
from typing import NoReturn

__all__ = ["end_process", "exit_status"]


def exit_status(code: object) -> int:
    """The status the interpreter gives ``SystemExit(code)``: 0 for None, the number for an
    int, else 1 after printing ``code`` to stderr (as the interpreter does)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    with contextlib.suppress(OSError, ValueError):  # stderr closed: the status says it failed
        print(code, file=sys.stderr)
    return 1


def end_process(code: object) -> NoReturn:
    """End the process as after ``SystemExit(code)``, without the interpreter's teardown (see
    the module's docstring). A flush that fails turns a success into status 120, as at the
    interpreter's own exit."""
    status = exit_status(code)
    # The interpreter's own first step at exit: the threading module's exit callbacks (an
    # executor's idle workers are told to stop) and a join of every thread that is no daemon.
    shutdown: Callable[[], None] | None = getattr(threading, "_shutdown", None)
    if shutdown is not None:
        shutdown()
    else:
        for thread in threading.enumerate():
            if thread is not threading.main_thread() and not thread.daemon:
                thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            if status == 0:
                status = 120
    os._exit(status)
