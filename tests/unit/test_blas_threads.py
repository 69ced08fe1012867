"""numpy's BLAS in the ``snapdp`` command: started on one thread, every core again around the
large consistent-table fits, and nothing changed for code that embeds the library
(snapdp._blas; docs/performance.md, "BLAS threads").

Each case runs in a fresh interpreter: OpenBLAS reads its thread count once, when numpy is first
imported, so only a new process can show what the start did.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

_REPORT = """
import json, os
from threadpoolctl import threadpool_info
from snapdp import _blas

def blas_threads():
    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

before = blas_threads()
with _blas.all_threads():
    inside = blas_threads()
print(json.dumps({"before": before, "inside": inside, "after": blas_threads(),
                  "variable": os.environ.get("OPENBLAS_NUM_THREADS")}))
"""


def _last_line(code: str, env_extra: dict[str, str] | None = None) -> str:
    """The last line ``code`` prints in a fresh interpreter (no thread variable inherited)."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    env["PYTHONPATH"] = str(SRC)
    env.update(env_extra or {})
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True,
        timeout=300,
    )  # fmt: skip
    return out.stdout.strip().splitlines()[-1]


#: Code run first: the process looks launched as the installed ``snapdp`` script (the
#: interpreter's own command line names it) when ``snapdp.cli`` is imported.
_AS_SCRIPT = (
    "import sys; sys.orig_argv[:] = [sys.executable, '/usr/local/bin/snapdp']; import snapdp.cli\n"
)


def _run(prelude: str, env_extra: dict[str, str] | None = None) -> dict[str, object]:
    report: dict[str, object] = json.loads(_last_line(prelude + _REPORT, env_extra))
    return report


def _cores() -> int:
    """The CPUs this process may run on: what OpenBLAS starts with by default."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)


def _openblas_present() -> bool:
    probe = "from threadpoolctl import threadpool_info; import numpy; "
    probe += "print(any(i['internal_api'] == 'openblas' for i in threadpool_info()))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    return out.stdout.strip() == "True"


pytestmark = pytest.mark.skipif(
    not _openblas_present(), reason="numpy here does not use OpenBLAS (nothing to start)"
)


def test_the_command_starts_blas_on_one_thread_and_leaves_the_environment_alone() -> None:
    # launched as the installed script: the interpreter's command line names .../snapdp
    report = _run(_AS_SCRIPT)
    assert report["before"] == [1]
    assert report["inside"] == [_cores()]
    assert report["after"] == [1]
    assert report["variable"] is None  # children the command starts get the given environment


def test_start_on_one_thread_alone() -> None:
    report = _run("from snapdp import _blas; _blas.start_on_one_thread()\n")
    assert report["before"] == [1] and report["inside"] == [_cores()]
    assert report["variable"] is None


def test_an_embedding_process_keeps_its_blas_threads() -> None:
    # the library imported without the command: nothing lowered, nothing raised
    report = _run("import snapdp.cli\n")
    plain = _run("import numpy\n")  # what OpenBLAS starts with when nobody sets anything
    assert report["before"] == report["inside"] == report["after"] == plain["before"]


def test_a_callers_own_setting_wins() -> None:
    prelude = _AS_SCRIPT
    report = _run(prelude, {"OPENBLAS_NUM_THREADS": "1"})
    # the caller asked for one thread: all_threads does not override it
    assert report["before"] == report["inside"] == report["after"] == [1]
    assert report["variable"] == "1"


def test_numpy_imported_first_is_left_as_it_is() -> None:
    prelude = "import numpy; from snapdp import _blas; _blas.start_on_one_thread()\n"
    report = _run(prelude)
    plain = _run("import numpy\n")
    assert report["before"] == report["inside"] == plain["before"]


_FIT = """
import json, numpy as np
from snapdp.data.model.schema import Column
from snapdp.data.statistics.consistency_fit import Member, fit
# a family of 240 finest cells (15 x 16) with its margins, each table with its own noise
# variance: the fit's doubles then depend on how many BLAS threads share its products
g = Column("g", "integer", keys=tuple(range(15)))
h = Column("h", "integer", keys=tuple(range(16)))
rng = np.random.default_rng(3)
def member(columns, cells, variance):
    return Member(columns, rng.normal(100, 10, cells), variance, (-1e6, 1e6), lambda a: 10.0)
members = [member((), 1, 7.3), member((g,), 15, 3.1), member((h,), 16, 5.9),
           member((g, h), 240, 1.7)]
out = fit(members, 0.05, "wls", 10_000)
print(json.dumps([[float(v).hex() for v in part] for part in (*out.fitted, *out.accuracy)]))
"""


def _fit_values(prelude: str) -> str:
    return _last_line(prelude + _FIT)


def test_the_command_fits_a_consistent_table_to_the_librarys_doubles() -> None:
    # seeded (not private: a test); the fit's doubles depend on the BLAS threads sharing it
    command = _AS_SCRIPT
    as_command = _fit_values(command)
    as_library = _fit_values("")
    assert as_command == as_library


def test_a_callers_omp_setting_wins_too() -> None:
    # OpenBLAS also reads OMP_NUM_THREADS: a caller who set it keeps it, inside the fits too
    prelude = _AS_SCRIPT
    report = _run(prelude, {"OMP_NUM_THREADS": "1"})
    assert report["before"] == report["inside"] == report["after"] == [1]
