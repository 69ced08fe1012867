"""The cases of the standalone-cluster test, shared by the test and its driver process."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
from fractions import Fraction
from pathlib import Path

from snapdp.data.engines.base import AggregatePlan, ValueColumn
from snapdp.data.model.schema import Column, ContributionBounds, NullRule

KEY = "00112233445566778899aabbccddeeff"
PARAMS = (Fraction(10), Fraction(1), Fraction(-1000), Fraction(5000))
# Every test JVM (local session, master, worker, driver, executors): C1 only and the serial
# collector. Half of a test JVM's CPU went to the C2 compiler threads, for code that runs a few
# hundred times (docs/performance.md, "The test suite"); plans and results are Spark's either way.
TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
_ARCHIVES = Path(tempfile.gettempdir()) / "snapdp-test-jvm"
_SETTLED = 30.0  # seconds since a dump's last write before another run takes it


def jvm_archive_options(dump: bool) -> str:
    """Java options for a class-data-sharing archive of Spark's classes (AppCDS): a test JVM
    maps the classes it loads from the archive instead of parsing and verifying them from the
    jars (docs/performance.md, "The test suite": the local session's start 9.7 → 4.5 s of
    CPU). Classes, bytecode and plans are the same either way. The archive (150–190 MB) is in
    ``$TMPDIR/snapdp-test-jvm``, one per pyspark, Java and option set; when there is none and
    ``dump``, this JVM writes one at exit under its test process's id, which a later run takes
    once its writer has ended. An archive the JVM cannot use (another classpath or Java) is
    ignored silently (``-Xlog:cds*=error``): the JVM then loads its classes from the jars.
    ``SNAPDP_TEST_JVM_ARCHIVE=off`` turns this off."""
    if os.environ.get("SNAPDP_TEST_JVM_ARCHIVE") == "off":
        return ""
    try:
        import pyspark
    except ImportError:
        return ""
    java = shutil.which("java")
    if java is None:
        return ""
    real = os.path.realpath(java)
    key = f"{pyspark.__version__}|{Path(pyspark.__file__).parent}|{real}|"
    key += f"{os.stat(real).st_mtime_ns}|{TEST_JVM_OPTIONS}"
    name = hashlib.sha256(key.encode()).hexdigest()[:16]
    final = _ARCHIVES / f"{name}.jsa"
    quiet = "-Xlog:cds*=error"
    _adopt_finished_dumps(name, final)
    if final.exists():
        return f"{quiet} -XX:SharedArchiveFile={final}"
    if not dump:
        return ""
    try:
        _ARCHIVES.mkdir(exist_ok=True)
    except OSError:  # no writable temporary directory: the classes come from the jars
        return ""
    return f"{quiet} -XX:ArchiveClassesAtExit={_ARCHIVES / f'{name}.{os.getpid()}.jsa'}"


def _adopt_finished_dumps(name: str, final: Path) -> None:
    """Rename to ``final`` a dump whose test process has ended and which has not changed for a
    while; delete the other such dumps (two xdist workers each write one on a first run)."""
    for dump in sorted(_ARCHIVES.glob(f"{name}.*.jsa")):
        try:
            os.kill(int(dump.name.split(".")[1]), 0)
            continue  # its test process still runs: its JVM has not written it yet
        except ProcessLookupError:
            pass
        except (PermissionError, ValueError):
            continue
        try:
            if time.time() - dump.stat().st_mtime < _SETTLED:
                continue
            if final.exists():
                dump.unlink()
            else:
                os.replace(dump, final)
        except OSError:
            continue


def csv_text(n: int = 600) -> str:
    """A table with awkward cells: 2.5 and empty keys, text and NaN values, null units."""
    lines = ["k,v,n,u"]
    for i in range(n):
        key = ("0", "1", "2", "2.5", "", " 1 ")[i % 6]
        value = ("10", "x", "1e3", "NaN", "-3.25", "7", "")[i % 7]
        unit = "" if i % 11 == 0 else f"p{i % 97}"
        lines.append(f"{key},{value},{i % 40},{unit}")
    return "\n".join(lines) + "\n"


def plans() -> list[tuple[str, AggregatePlan]]:
    k = Column("k", "integer", keys=(0, 1, 2), nulls=NullRule("impute", 0))
    n = Column("n", "integer", bins=(0, 10, 20, 40))
    v = ValueColumn(Column("v", "decimal", lower=-5, upper=25), 2, -500, 2500, None, squares=True)
    u = Column("u", "text")
    return [
        ("grouped", AggregatePlan((k, n), (v,))),
        (
            "k, L0, Linf",
            AggregatePlan((k, n), (v,), u, "own", ContributionBounds(3, 2, 1), hash_key=KEY),
        ),
    ]
