"""How many threads numpy's BLAS (OpenBLAS in the PyPI wheels) runs on in the ``snapdp`` command.

OpenBLAS starts a thread per core when numpy is imported, and those threads wait for work by
spinning: about 0.1 s of CPU in every fresh process, whether any matrix is multiplied or not
(docs/performance.md, "BLAS threads"). Nearly all of snapdp's array work is elementwise or on
vectors, which BLAS runs on one thread anyway; only the joint fit of a consistent table
(:mod:`snapdp.data.statistics.consistency_fit`) multiplies matrices, and the doubles of a matrix
product depend on how many threads share it.

So the command, and only the command (started as ``snapdp`` or ``python -m snapdp.cli``), calls
:func:`start_on_one_thread` before it imports numpy: OpenBLAS starts with one thread, and
:func:`all_threads` gives it the default number again (one per CPU the process may use) around
every fit (through threadpoolctl), so that the command releases the same values as the library.
A process that set ``OPENBLAS_NUM_THREADS``, ``GOTO_NUM_THREADS`` or ``OMP_NUM_THREADS`` itself,
or imported numpy first, is left as it is, and so is code that embeds the library:
:func:`all_threads` changes nothing there.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

__all__ = ["all_threads", "start_on_one_thread"]

_VARIABLE = "OPENBLAS_NUM_THREADS"
#: Every variable OpenBLAS reads its thread count from: one set by the caller is left alone.
_CALLERS = (_VARIABLE, "GOTO_NUM_THREADS", "OMP_NUM_THREADS")

#: Set when :func:`start_on_one_thread` made OpenBLAS start on one thread in this process.
_lowered = False


def start_on_one_thread() -> None:
    """Import numpy with OpenBLAS started on one thread. OpenBLAS reads ``OPENBLAS_NUM_THREADS``
    once, when it is loaded, so the variable is set to 1 for the import only and removed again
    (processes this one starts see the environment it was given). Does nothing when numpy is
    already imported or the caller set any variable OpenBLAS reads its thread count from."""
    global _lowered
    if "numpy" in sys.modules or any(name in os.environ for name in _CALLERS):
        return
    os.environ[_VARIABLE] = "1"
    try:
        import numpy  # noqa: F401  (OpenBLAS is loaded now, while the variable is set)

        _lowered = True
    finally:
        os.environ.pop(_VARIABLE, None)


def _default_threads() -> int:
    """What OpenBLAS starts with when nothing is set: one thread per CPU this process may run
    on (its affinity mask, as OpenBLAS counts them)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)


@contextlib.contextmanager
def all_threads() -> Iterator[None]:
    """Inside: numpy's BLAS on as many threads as OpenBLAS would have started with (one per CPU
    of the process's affinity), when :func:`start_on_one_thread` lowered it in this process, so
    that a fit computes the same doubles as in a process that never lowered it; otherwise (a
    library caller's own setting) nothing changes."""
    if not _lowered:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=_default_threads(), user_api="blas"):
        yield
