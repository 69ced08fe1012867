"""How many threads numpy's BLAS (OpenBLAS in the PyPI wheels) runs on in the ``snapdp`` command.

OpenBLAS starts a thread per core when numpy is imported, and those threads wait for work by
spinning: about 0.1 s of CPU in every fresh process, whether any matrix is multiplied or not
(docs/performance.md, "BLAS threads"). Nearly all of snapdp's array work is elementwise or on
vectors, which BLAS runs on one thread anyway; only the joint fit of a large consistent table
(:mod:`snapdp.data.statistics.consistency_fit`) multiplies matrices big enough to gain from more.

So the command, and only the command (started as ``snapdp`` or ``python -m snapdp.cli``), calls
:func:`start_on_one_thread` before it imports numpy: OpenBLAS starts with one thread, and
:func:`all_threads` gives it one per core again around the large fits (through threadpoolctl).
A process that set ``OPENBLAS_NUM_THREADS`` itself, or imported numpy first, is left as it is,
and so is code that embeds the library: :func:`all_threads` changes nothing there.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

__all__ = ["all_threads", "start_on_one_thread"]

_VARIABLE = "OPENBLAS_NUM_THREADS"

#: Set when :func:`start_on_one_thread` made OpenBLAS start on one thread in this process.
_lowered = False


def start_on_one_thread() -> None:
    """Import numpy with OpenBLAS started on one thread. OpenBLAS reads ``OPENBLAS_NUM_THREADS``
    once, when it is loaded, so the variable is set to 1 for the import only and removed again
    (processes this one starts see the environment it was given). Does nothing when numpy is
    already imported or the variable is set."""
    global _lowered
    if "numpy" in sys.modules or _VARIABLE in os.environ:
        return
    os.environ[_VARIABLE] = "1"
    try:
        import numpy  # noqa: F401  (OpenBLAS is loaded now, while the variable is set)

        _lowered = True
    finally:
        os.environ.pop(_VARIABLE, None)


@contextlib.contextmanager
def all_threads() -> Iterator[None]:
    """Inside: numpy's BLAS on one thread per core, when :func:`start_on_one_thread` lowered it
    in this process; otherwise (a library caller's own setting) nothing changes."""
    if not _lowered:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=os.cpu_count() or 1, user_api="blas"):
        yield
