"""Benchmark: snapdp's DuckDB and Spark engines vs the plain engines, with and without a unit.

Usage: PYTHONPATH=src python benchmarks/bench_data.py [--rows N] [--units U] [--repeats R]
       [--memory-limit 700MB] [--spark-memory 4g] [--spark-runs S] [--tasks a,b,...]
       [--json FILE]

Writes a synthetic Parquet table (N rows; g: 50 groups; x: values in [0, 1000) with 2 decimals;
pid: U units, rows spread evenly) to a temporary directory (deleted afterwards), then runs the
tasks in R interleaved rounds (round 1: a, b, ...; round 2: a, b, ...), so that a change in the
load of a shared machine falls on every task alike. Each run is a fresh subprocess, which reports
its own wall time and CPU seconds over the query only (imports, the connection and the Spark
session's start excluded). CPU seconds are user + system time of the run's whole process tree,
read from /proc: the process (all DuckDB threads), its descendants (Spark's JVM and Python
workers) and its reaped children. Peak RSS: for DuckDB tasks the process's
``getrusage(RUSAGE_SELF).ru_maxrss``; for Spark tasks the largest sum of the resident sets of the
whole process tree, sampled every 50 ms by this script. Every run is printed to stderr with the
load average before and after it; stdout gets one Markdown table (docs/performance.md, "Data
releases"): per task the median and the min of wall and CPU seconds over its runs, the ratios of
medians to its plain baseline (``plain-unit`` for DuckDB tasks with a unit, ``spark-plain-unit``
for Spark ones, ``plain`` / ``spark-plain`` without) and, for DuckDB tasks with a unit, to
``plain-unit-hash``; the header line gives the load average before and after the whole run.
``--json`` also writes every run's numbers.

Tasks:
- ``plain``: plain DuckDB, values clamped, count and sum by g.
- ``engine``: snapdp's DuckDBEngine, count and sum of quanta by 50 declared keys, no unit.
- ``plain-unit``: plain DuckDB doing the same bounding as the engine (k = 1: per pid the row of
  lowest contract rank - the keyed integer mix of docs/data.md, written out by hand as nested
  projections - by ``arg_min``, then the group aggregate).
- ``plain-unit-hash``: plain DuckDB choosing one row per pid by ``arg_min`` of its own native
  64-bit ``hash()`` (not keyed by the release: not the contract's rank), then count, sum and mean
  by g: the baseline of issue 25's goal.
- ``cli-unit``: ``snapdp release`` through the CLI (in process, after a first run on 1,000 rows
  so that imports are excluded): count, sum and mean of x by 50 declared keys, privacy unit pid
  (integer), k = 1, ``--memory-limit``; ``cli-unit-nolimit`` the same without it.
- ``engine-unit``: DuckDBEngine with privacy unit pid, k = 1, ``memory_limit`` and a temporary
  directory (spilling allowed).
- ``engine-unit-nolimit``: the same with DuckDB's default memory limit (80% of RAM).
- ``spark-plain``: plain Spark local[2], values clamped, count and sum by g.
- ``spark-engine``: snapdp's SparkEngine, the same plan as ``engine``.
- ``spark-plain-unit``: plain Spark doing the same bounding (per pid the row of lowest contract
  rank, written out by hand, by ``min_by`` of the row packed into a long, then the group
  aggregate).
- ``spark-plain-unit-window``: plain Spark keeping one random row per pid by a ``row_number``
  window (the textbook way; not the contract's rank; for reference).
- ``spark-engine-unit``: SparkEngine with privacy unit pid, k = 1.
Spark tasks run in one local[2] session per task with ``spark.driver.memory`` = --spark-memory
(Spark's other settings at their defaults: 200 shuffle partitions, adaptive execution); each query
is run --spark-runs times in that session and the fastest run (with its CPU seconds) is reported
(the first run warms the JVM). Their peak RSS includes the JVM's heap, which grows towards
``spark.driver.memory`` as the collector sees fit: it is what the job was given, not what it
needed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GROUPS = 50
HASH_KEY = "0123456789abcdef0123456789abcdef"

_PRELUDE = """
import json, resource, sys, time
import duckdb
path, mem, tmp = sys.argv[1], sys.argv[2], sys.argv[3]
"""

_PLAIN = """
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")
t = time.perf_counter()
rows = con.execute(QUERY.format(path=path)).fetchall()
seconds = time.perf_counter() - t
assert len(rows) == 50, len(rows)
"""

_ENGINE = """
from fractions import Fraction
from snapdp.data.engines.base import AggregatePlan, ValueColumn
from snapdp.data.engines.duckdb.engine import DuckDBEngine
from snapdp.data.model.schema import Column, ContributionBounds
g = Column("g", "integer", keys=tuple(range(50)))
x = Column("x", "decimal", lower=Fraction(0), upper=Fraction(1000))
unit = Column("pid", "integer") if UNIT else None
bounds = ContributionBounds(max_rows_per_unit=1) if UNIT else ContributionBounds()
plan = AggregatePlan((g,), (ValueColumn(x, 2, 0, 100000),), unit, "drop", bounds, HASH_KEY)
engine = DuckDBEngine(path, memory_limit=None if mem == "-" else mem,
                      temp_directory=None if mem == "-" else tmp)
t = time.perf_counter()
agg = engine.aggregate(plan)
seconds = time.perf_counter() - t
assert len(agg.rows) == 50
"""

_M = 0xFFFFFFFF
_MA, _MB = 0x5BD1E995, 0x27D4EB2F  # the contract's multipliers (snapdp.data.engines.base)


def _mix_layers(lanes: list[str]) -> tuple[list[tuple[str, str]], str]:
    """The contract's rank (row tag 1) over ``lanes`` for HASH_KEY, by hand: per lane the pair of
    accumulator updates, then the final expression over the accumulators ``ta``, ``tb``."""
    k0, k1, k2, k3 = (int(HASH_KEY[i : i + 8], 16) for i in range(0, 32, 8))
    fold = "(xor({t}, {t} >> 32) & 4294967295)"
    n = len(lanes)
    steps = [(f"xor(CAST({k0 ^ 1} AS BIGINT), {lanes[0]}) * {_MA}",
              f"xor(CAST({k1 ^ 1} AS BIGINT), {lanes[0]}) * {_MB}")]  # fmt: skip
    for xa, xb in [(x, x) for x in lanes[1:]] + [(str(k2 ^ n), str(k3 ^ n))]:
        steps.append((f"xor({fold.format(t='ta')}, {xa}) * {_MA}",
                      f"xor({fold.format(t='tb')}, {xb}) * {_MB}"))  # fmt: skip
    final = f"{fold.format(t='ta')} * 2147483648 + ({fold.format(t='tb')} >> 1)"
    return steps, final


def _plain_rank_sql() -> str:
    """Plain DuckDB SQL: pid, the packed row p = g·100001 + q and its contract rank r."""
    q = "CAST(round_even(LEAST(GREATEST(x, 0), 1000) * 100, 0) AS BIGINT)"
    steps, final = _mix_layers(["(pid & 4294967295)", "((pid >> 32) & 4294967295)", "g", "(q + 1)"])
    rel = f"(SELECT pid, g, {q} AS q FROM read_parquet('{{path}}'))"
    a, b = steps[0]
    rel = f"(SELECT pid, g, q, {a} AS ta, {b} AS tb FROM {rel})"
    for a, b in steps[1:]:
        rel = f"(SELECT pid, g, q, {a} AS ta, {b} AS tb FROM {rel})"
    return f"(SELECT pid, g * 100001 + q AS p, {final} AS r FROM {rel})"


_CLI = """
from snapdp.cli import main
keys = ",".join(str(i) for i in range(50))
args = [path, "--epsilon", "1", "--count", "--sum", "x:0:1000", "--mean", "x:0:1000", "--by", "g",
        "--keys", f"g={keys}", "--column", "g:integer", "--column", "pid:integer",
        "--privacy-unit", "pid", "--max-rows-per-unit", "1", "--json"]
if mem != "-":
    args += ["--memory-limit", mem]
import contextlib, io, os
warm = os.path.join(tmp, "warm.parquet")  # a first run on 1,000 rows: imports and caches
duckdb.execute(
    f"COPY (SELECT * FROM read_parquet('{path}') LIMIT 1000) TO '{warm}' (FORMAT parquet)"
)
with contextlib.redirect_stdout(io.StringIO()):
    main(["release", warm, *args[1:]], standalone_mode=False)
t = time.perf_counter()
with contextlib.redirect_stdout(io.StringIO()) as out:
    main(["release", *args], standalone_mode=False)
seconds = time.perf_counter() - t
assert '"results"' in out.getvalue()
"""

_SPARK = """
from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as sf
spark = (
    SparkSession.builder.master("local[2]")
    .config("spark.ui.enabled", "false")
    .config("spark.driver.memory", SPARK_MEMORY)
    .config("spark.local.dir", tmp)
    .getOrCreate()
)
spark.sparkContext.setLogLevel("ERROR")
df = spark.read.parquet(path)
clamped = sf.least(sf.greatest(sf.col("x"), sf.lit(0.0)), sf.lit(1000.0))
quanta = sf.rint(clamped * sf.lit(100.0)).cast("bigint")
def ranked(d):
    # d (pid, g, q) with the contract's rank r, by hand (one projection per lane)
    k = [int(HASH_KEY[i : i + 8], 16) for i in range(0, 32, 8)]
    M, MA, MB = sf.lit(0xFFFFFFFF), sf.lit(0x5BD1E995), sf.lit(0x27D4EB2F)
    fold = lambda t: sf.col(t).bitwiseXOR(sf.shiftright(t, 32)).bitwiseAND(M)
    lanes = [sf.col("pid").bitwiseAND(M), sf.shiftright("pid", 32).bitwiseAND(M), sf.col("g"),
             sf.col("q") + 1]
    d = d.withColumns({"ta": sf.lit(k[0] ^ 1).cast("bigint").bitwiseXOR(lanes[0]) * MA,
                       "tb": sf.lit(k[1] ^ 1).cast("bigint").bitwiseXOR(lanes[0]) * MB})
    for xa, xb in [(x, x) for x in lanes[1:]] + [(sf.lit(k[2] ^ 4), sf.lit(k[3] ^ 4))]:
        d = d.withColumns({"ta": fold("ta").bitwiseXOR(xa) * MA,
                           "tb": fold("tb").bitwiseXOR(xb) * MB})
    return d.withColumn("r", fold("ta") * sf.lit(1 << 31) + sf.shiftright(fold("tb"), 1))
seconds, cpu = float("inf"), float("nan")
for _ in range(SPARK_RUNS):  # the fastest run and its CPU seconds (the first warms the JVM)
    c0, t0 = _cpu(), time.perf_counter()
    rows = job()
    s0, c0 = time.perf_counter() - t0, _cpu() - c0
    if s0 < seconds:
        seconds, cpu = s0, c0
    assert len(rows) == 50, len(rows)
spark.stop()
"""

_SPARK_ENGINE = """
from fractions import Fraction
from snapdp.data.engines.base import AggregatePlan, ValueColumn
from snapdp.data.engines.spark.engine import SparkEngine
from snapdp.data.model.schema import Column, ContributionBounds
def job():
    g = Column("g", "integer", keys=tuple(range(50)))
    x = Column("x", "decimal", lower=Fraction(0), upper=Fraction(1000))
    unit = Column("pid", "integer") if UNIT else None
    bounds = ContributionBounds(max_rows_per_unit=1) if UNIT else ContributionBounds()
    plan = AggregatePlan((g,), (ValueColumn(x, 2, 0, 100000),), unit, "drop", bounds, HASH_KEY)
    agg = SparkEngine(df, spark=spark).aggregate(plan)
    return [r for r in agg.rows if r]
"""

TASKS: dict[str, tuple[str, str]] = {
    "plain": (
        "plain DuckDB, clamped: count, sum by g",
        'QUERY = "SELECT g, COUNT(*), SUM(LEAST(GREATEST(x, 0), 1000)) '
        "FROM read_parquet('{path}') GROUP BY g\"" + _PLAIN,
    ),
    "engine": ("**snapdp DuckDBEngine, no unit**", "UNIT = False" + _ENGINE),
    "plain-unit": (
        "plain DuckDB, same bounding (k = 1, contract rank by arg_min), clamped",
        "QUERY = "
        + repr(
            "SELECT p // 100001, COUNT(*), SUM(p % 100001) FROM (SELECT pid, arg_min(p, r) AS p "
            f"FROM {_plain_rank_sql()} GROUP BY pid) GROUP BY 1"
        )
        + _PLAIN,
    ),
    "plain-unit-hash": (
        "plain DuckDB, k = 1 by arg_min of DuckDB's hash(): count, sum, mean",
        'QUERY = "SELECT p // 100001, COUNT(*), SUM(p % 100001), AVG(p % 100001) FROM (SELECT pid, '
        "arg_min(g * 100001 + CAST(round_even(LEAST(GREATEST(x, 0), 1000) * 100, 0) AS BIGINT), "
        "hash(pid, g, x, 12345)) AS p FROM read_parquet('{path}') GROUP BY pid) GROUP BY 1\""
        + _PLAIN,
    ),
    "engine-unit": (
        "**snapdp DuckDBEngine, unit pid, k = 1, memory limit**",
        "UNIT = True" + _ENGINE,
    ),
    "cli-unit": (
        "**snapdp release (CLI): count, sum, mean by g, unit pid, k = 1, memory limit**",
        _CLI,
    ),
    "cli-unit-nolimit": (
        "snapdp release (CLI): the same, DuckDB's default memory limit",
        _CLI,
    ),
    "engine-unit-nolimit": (
        "snapdp DuckDBEngine, unit pid, k = 1, DuckDB's default memory limit",
        "UNIT = True" + _ENGINE,
    ),
    "spark-plain": (
        "plain Spark local[2], clamped: count, sum by g",
        "def job():\n    return df.groupBy('g').agg(sf.count(sf.lit(1)), sf.sum(clamped)).collect()"
        + _SPARK,
    ),
    "spark-engine": ("**snapdp SparkEngine, no unit**", "UNIT = False" + _SPARK_ENGINE + _SPARK),
    "spark-plain-unit": (
        "plain Spark, same bounding (k = 1, contract rank by min_by), clamped",
        "def job():\n"
        "    d = ranked(df.withColumn('q', quanta))\n"
        "    kept = d.groupBy('pid').agg(sf.min_by(sf.col('g') * 100001 + sf.col('q'), 'r')"
        ".alias('t'))\n"
        "    cell = sf.expr('t div 100001')\n"
        "    return kept.groupBy(cell).agg(sf.count(sf.lit(1)), sf.sum(sf.col('t') % 100001))"
        ".collect()" + _SPARK,
    ),
    "spark-plain-unit-window": (
        "plain Spark, 1 random row per pid by a window (not the contract's rank), clamped",
        "def job():\n"
        "    w = Window.partitionBy('pid').orderBy(sf.rand())\n"
        "    kept = df.withColumn('_n', sf.row_number().over(w)).where('_n <= 1')\n"
        "    return kept.groupBy('g').agg(sf.count(sf.lit(1)), sf.sum(clamped)).collect()" + _SPARK,
    ),
    "spark-engine-unit": (
        "**snapdp SparkEngine, unit pid, k = 1**",
        "UNIT = True" + _SPARK_ENGINE + _SPARK,
    ),
}

_EPILOGUE = """
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": seconds, "rss_mib": rss, "cpu": cpu}))
"""
# the CPU seconds (user + system) over the timed query of the task's whole process tree, read
# from /proc: the process itself (all DuckDB threads), its live descendants (Spark's JVM and
# Python workers) and the children it has reaped. Less sensitive than wall time to other jobs
# on a shared machine.
_CPU = """
import os
def _cpu():
    kids, ticks = {}, 0
    for e in os.listdir("/proc"):
        if e.isdigit():
            try:
                with open(f"/proc/{e}/stat") as fh:
                    f = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            kids.setdefault(int(f[1]), []).append((int(e), f))
    me = os.getpid()
    with open(f"/proc/{me}/stat") as fh:
        f = fh.read().rsplit(")", 1)[1].split()
    ticks = sum(int(v) for v in f[11:15])  # utime, stime, cutime, cstime
    todo = [me]
    while todo:
        for pid, f in kids.get(todo.pop(), []):
            ticks += int(f[11]) + int(f[12])
            todo.append(pid)
    return ticks / os.sysconf("SC_CLK_TCK")
cpu = float('nan')
"""


def generate(path: Path, rows: int, units: int) -> None:
    """A synthetic table: row i has g = i mod 50, x = a hash of i in [0, 1000) with 2 decimals,
    pid = (i · 7919) mod units (each unit gets rows/units rows, scattered)."""
    code = (
        "import duckdb, sys\n"
        "con = duckdb.connect()\n"
        'con.execute("SET preserve_insertion_order = false")\n'
        'con.execute("SET enable_progress_bar = false")\n'
        'con.execute(f"COPY (SELECT (i % 50)::BIGINT AS g, (hash(i) % 100000)::DOUBLE / 100 AS x, '
        "((i * 7919) % {sys.argv[3]})::BIGINT AS pid FROM range({sys.argv[2]}) t(i)) "
        "TO '{sys.argv[1]}' (FORMAT parquet)\")\n"
    )
    subprocess.run([sys.executable, "-c", code, str(path), str(rows), str(units)], check=True)


def _tree_rss_mib(root: int) -> float:
    """The summed resident set of ``root`` and all its descendants (from /proc), in MiB."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        parents.setdefault(ppid, []).append(int(entry))
    total, todo = 0, [root]
    page = os.sysconf("SC_PAGE_SIZE")
    while todo:
        pid = todo.pop()
        todo.extend(parents.get(pid, []))
        try:
            with open(f"/proc/{pid}/statm") as fh:
                total += int(fh.read().split()[1]) * page
        except (OSError, IndexError, ValueError):
            continue
    return total / 2**20


def run_task(
    name: str, path: Path, memory_limit: str, tmp: Path, spark_memory: str, spark_runs: int
) -> dict[str, float]:
    _, body = TASKS[name]
    header = (
        f"HASH_KEY = {HASH_KEY!r}\nSPARK_MEMORY = {spark_memory!r}\nSPARK_RUNS = {spark_runs}\n"
    )
    body = body.replace("t = time.perf_counter()", "t = time.perf_counter(); c = _cpu()")
    body = body.replace(
        "seconds = time.perf_counter() - t", "seconds = time.perf_counter() - t; cpu = _cpu() - c"
    )
    code = _PRELUDE + header + _CPU + body + _EPILOGUE
    limited = name.startswith(("engine", "cli")) and not name.endswith("nolimit")
    mem = memory_limit if limited else "-"
    if name == "engine":
        mem = "-"
    spark = name.startswith("spark")
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", code, str(path), mem, str(tmp)],
            stdout=out,
            stderr=err,
            text=True,
        )
        peak = 0.0
        while proc.poll() is None:
            if spark:  # DuckDB tasks report their own exact peak
                peak = max(peak, _tree_rss_mib(proc.pid))
            time.sleep(0.05)
        if proc.returncode != 0:
            err.seek(0)
            tail = "".join(err.read().splitlines(keepends=True)[-20:])
            raise SystemExit(f"task {name} failed with exit code {proc.returncode}:\n{tail}")
        out.seek(0)
        result: dict[str, float] = json.loads(out.read().strip().splitlines()[-1])
    if spark:
        result["rss_mib"] = peak
    return result


def _load() -> str:
    """The 1-, 5- and 15-minute load averages (as ``uptime`` shows them)."""
    with open("/proc/loadavg") as fh:
        return " ".join(fh.read().split()[:3])


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b > 0 and a == a and b == b else "-"


def _baselines(name: str, present: dict[str, object]) -> tuple[str | None, str | None]:
    """The task's plain baseline and, for DuckDB tasks with a unit, plain DuckDB's hash()."""
    base = "plain-unit" if "unit" in name else "plain"
    if name.startswith("spark"):
        base = "spark-" + base
    hashed = "plain-unit-hash" if "unit" in name and not name.startswith("spark") else None
    return (base if base in present and base != name else None), (
        hashed if hashed in present and hashed != name else None
    )


def report(names: list[str], runs: dict[str, list[dict[str, float]]]) -> None:
    """Per task: the median and min of wall and CPU seconds over its runs, the ratio of medians
    to its plain baseline and (DuckDB with a unit) to plain DuckDB's hash(), the peak RSS."""
    med: dict[str, tuple[float, float]] = {}
    for name in names:
        rs = runs[name]
        med[name] = (
            statistics.median(r["seconds"] for r in rs),
            statistics.median(r["cpu"] for r in rs),
        )
    print(
        "| task | runs | wall median | wall min | × plain (wall) | × hash() (wall) "
        "| CPU median | CPU min | × plain (CPU) | × hash() (CPU) | peak RSS |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name in names:
        rs = runs[name]
        wall, cpu = med[name]
        base, hashed = _baselines(name, med)
        cells = [
            TASKS[name][0],
            str(len(rs)),
            f"{wall:.2f} s",
            f"{min(r['seconds'] for r in rs):.2f} s",
            _ratio(wall, med[base][0]) if base else "-",
            _ratio(wall, med[hashed][0]) if hashed else "-",
            f"{cpu:.2f} s",
            f"{min(r['cpu'] for r in rs):.2f} s",
            _ratio(cpu, med[base][1]) if base else "-",
            _ratio(cpu, med[hashed][1]) if hashed else "-",
            f"{max(r['rss_mib'] for r in rs):,.0f} MiB",
        ]
        print("| " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--units", type=int, default=5_000_000)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--memory-limit", default="700MB")
    parser.add_argument("--spark-memory", default="4g")
    parser.add_argument("--spark-runs", type=int, default=2)
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--json", type=Path, help="also write every run's numbers to this file")
    args = parser.parse_args()
    names = [t for t in args.tasks.split(",") if t]
    for name in names:
        if name not in TASKS:
            raise SystemExit(f"--tasks: unknown task {name!r} (known: {', '.join(TASKS)})")
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    started, load_before = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), _load()
    with tempfile.TemporaryDirectory(prefix="snapdp-bench-") as d:
        path = Path(d) / "data.parquet"
        generate(path, args.rows, args.units)
        spill = Path(d) / "spill"
        spill.mkdir()
        for round_ in range(args.repeats):  # interleaved: A B A B ..., so load hits all alike
            for name in names:
                before = _load()
                r = run_task(name, path, args.memory_limit, spill, args.spark_memory,
                             args.spark_runs)  # fmt: skip
                r.update(round=round_ + 1, load_before=before, load_after=_load())  # type: ignore[arg-type]
                runs[name].append(r)
                print(
                    f"# round {round_ + 1} {name}: {r['seconds']:.2f} s, CPU {r['cpu']:.2f} s, "
                    f"{r['rss_mib']:.0f} MiB, load {before} -> {r['load_after']}",
                    file=sys.stderr,
                )
    finished, load_after = time.strftime("%H:%M UTC", time.gmtime()), _load()
    print(
        f"{args.rows:,} rows, {args.units:,} units, DuckDB memory limit {args.memory_limit}, "
        f"spark.driver.memory {args.spark_memory}; {args.repeats} interleaved round(s), "
        f"{started}–{finished}; load average (1, 5, 15 min) {load_before} before, "
        f"{load_after} after\n"
    )
    report(names, runs)
    if args.json is not None:
        args.json.write_text(json.dumps(runs, indent=1) + "\n")


if __name__ == "__main__":
    main()
