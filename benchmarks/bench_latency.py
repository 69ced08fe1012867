"""Interactive latency of a small release: snapdp beside OpenDP (and SmartNoise SQL where
installed), in process and in a fresh process, from one run (docs/performance.md, "Latency").

    PYTHONPATH=src python benchmarks/bench_latency.py [--repeats 7] [--data PATH/PUMS.csv] [--cpu]

The workload (issue 32): PUMS.csv (1,000 rows); count by sex × educ, mean income by sex, median
age; ε = 1 split three ways. "In process" is the median of ``--repeats`` runs after a warm-up;
"fresh process" starts a new Python each time (snapdp: ``snapdp run`` of the plan file, OpenDP: a
``python -c`` doing the same work) and reports the median.

    PYTHONPATH=src python benchmarks/bench_latency.py --cpu 7 --baseline /work/main/src

measures CPU seconds instead (user + system, all threads; steadier than wall time on a shared
machine) and wall time in interleaved rounds: per round a fresh ``snapdp run`` of the baseline
tree, of this tree and OpenDP's script; a fresh ``snapdp sql`` of the count by sex × educ (the
plan as its declaration) of each tree and OpenDP's script for that count alone; then the
in-process workload of each (median of 5 runs after a warm-up, in one fresh process per tree).
Each row prints medians and minima, the ratio of the medians, and the median and range of the
ratios within each round (which a machine drifting between rounds disturbs less).

    PYTHONPATH=src python benchmarks/bench_latency.py --pairs 40

alternates a fresh ``snapdp run`` of this tree with OpenDP's script, the order swapped every
pair, and prints each one's wall and CPU medians and the median and mean of the wall differences
within the pairs (a machine that drifts between rounds moves both runs of a pair alike).

Also timed (without ``--cpu`` or ``--pairs``): the two-phase example plan
(docs/examples/plan.toml) in a fresh process with an empty certificate cache, and the planner's
re-plan after an edit (certificates presumed, as the page does), also through the code behind the
page's ``/api/preview``. Prints a markdown table; the machine's load (``os.getloadavg``) is
printed with it because a shared machine changes every row.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import shutil
import statistics as stats
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EDUC = list(range(1, 17))

PLAN = """[data]
source = "{source}"
total_epsilon = 1000000

[columns]
age = {{ type = "integer", lower = 0, upper = 100 }}
income = {{ type = "decimal", lower = 0, upper = 500000 }}
sex = {{ type = "integer", keys = [0, 1] }}
educ = {{ type = "integer", keys = [{educ}] }}

[[query]]
statistic = "count"
by = ["sex", "educ"]
epsilon = 0.333

[[query]]
statistic = "mean"
column = "income"
by = ["sex"]
epsilon = 0.333

[[query]]
statistic = "quantiles"
column = "age"
quantiles = [0.5]
epsilon = 0.333
"""

OPENDP = """
import csv, sys
import opendp.prelude as dp
dp.enable_features("contrib")
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
eps = 1 / 3
cats = [f"{s},{e}" for s in (0, 1) for e in range(1, 17)]
keyed = [f"{r['sex']},{r['educ']}" for r in rows]
count = dp.t.make_count_by_categories(
    dp.vector_domain(dp.atom_domain(T=str)), dp.symmetric_distance(), cats, MO=dp.L1Distance[int]
)
m = dp.binary_search_chain(lambda s: count >> dp.m.then_laplace(s), d_in=1, d_out=eps)
m(keyed)
for sex in ("0", "1"):
    inc = [float(r["income"]) for r in rows if r["sex"] == sex]
    n = len(inc)
    space = (dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance())
    sp = (space >> dp.t.then_clamp((0.0, 500000.0))
          >> dp.t.then_resize(n, 250000.0) >> dp.t.then_mean())
    dp.binary_search_chain(lambda s: sp >> dp.m.then_laplace(s), d_in=1, d_out=eps / 2)(inc)
ages = [float(r["age"]) for r in rows]
dom = dp.vector_domain(dp.atom_domain(T=float, nan=False))
q = lambda s: dp.m.make_private_quantile(dom, dp.symmetric_distance(), dp.max_divergence(),
                                         [float(x) for x in range(101)], 0.5, s)
q(dp.binary_search_param(q, d_in=1, d_out=eps))(ages)
"""


#: OpenDP's part of the workload that ``SQL`` releases: the count by sex × educ alone.
OPENDP_COUNT = OPENDP[: OPENDP.index("for sex in")]

#: ``snapdp sql``'s part of the workload (the count by sex × educ), with the plan as declaration.
SQL = "SELECT sex, educ, COUNT(*) FROM PUMS GROUP BY sex, educ"


def _median_time(fn: Callable[[], object], repeats: int, warm: bool = True) -> float:
    if warm:
        fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return stats.median(times)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: compiled once, not at every start
    return env


def _snapdp_in_process(plan_file: Path) -> Callable[[], object]:
    sys.path.insert(0, str(ROOT / "src"))  # this checkout's snapdp, as the fresh processes use
    from snapdp.data import Plan

    def run() -> object:
        return Plan.load(plan_file).run()

    return run


def _fresh(args: list[str], env: dict[str, str] | None = None) -> Callable[[], object]:
    def run() -> object:
        subprocess.run(args, check=True, capture_output=True, env=env or _env())
        return None

    return run


def _snapdp_cli(plan_file: Path, work: Path) -> Callable[[], object]:
    counter = iter(range(10**6))

    def run() -> object:
        k = next(counter)
        args = [sys.executable, "-m", "snapdp.cli", "run", str(plan_file), "--ledger",
                str(work / f"l{k}.db"), "--output", str(work / f"o{k}"),
                "--total-epsilon", "1000000"]  # fmt: skip
        subprocess.run(args, check=True, capture_output=True, env=_env())
        return None

    return run


def _two_phase_cold(work: Path) -> float:
    """``snapdp run`` of docs/examples/plan.toml with an empty certificate cache (one run)."""
    example = work / "example"
    example.mkdir()
    shutil.copy(ROOT / "docs" / "examples" / "plan.toml", example / "plan.toml")
    data = Path(os.environ.get("SNAPDP_SHARED_DATA", ROOT.parent / "shared" / "data"))
    shutil.copy(data / "PUMS_dup.csv", example / "PUMS_dup.csv")
    env = _env()
    env["SNAPDP_CACHE_DIR"] = str(work / "empty-cache")
    args = [sys.executable, "-m", "snapdp.cli", "run", str(example / "plan.toml"), "--ledger",
            str(example / "l.db"), "--output", str(example / "out"),
            "--total-epsilon", "1000"]  # fmt: skip
    t = time.perf_counter()
    subprocess.run(args, check=True, capture_output=True, env=env)
    return time.perf_counter() - t


def _replan() -> float:
    """The planner's draft (certificates presumed) of the example plan after an edit, with
    nothing cached in the process: a fresh interpreter plans once to warm the imports, then the
    edited plan is timed (the edit: the mean's target ± times 1.1)."""
    code = (
        "import time, sys\nfrom msgspec.structs import replace\nfrom fractions import Fraction\n"
        "from snapdp.data import Plan\n"
        "p = Plan.load(sys.argv[1])\n"
        "q = [replace(x, accuracy=x.accuracy * Fraction(11, 10)) if x.accuracy else x "
        "for x in p.queries]\n"
        "e = Plan(p.schema, q, source=p.source, total_epsilon=p.total_epsilon)\n"
        "t = time.perf_counter(); e.preview(presume_certified=True)\n"
        "print(time.perf_counter() - t)\n"
    )
    env = _env()
    env["SNAPDP_CACHE_DIR"] = "off"
    out = subprocess.run(
        [sys.executable, "-c", code, str(ROOT / "docs" / "examples" / "plan.toml")],
        check=True, capture_output=True, text=True, env=env,
    )  # fmt: skip
    return float(out.stdout.strip().splitlines()[-1])


_PAGE = """
import copy, statistics, sys, time
from pathlib import Path
from snapdp.ui import _workload_json as wj
from snapdp.ui._document_io import document_from_toml
base = Path(sys.argv[1]).parent
doc = document_from_toml(Path(sys.argv[1]).read_text(encoding="utf-8"), None)
wj.plan_and_preview(doc, None, base, draft=True)  # the page's first view
times = []
for k in (1.1, 1.2, 1.3, 0.9, 0.8, 1.5, 0.7):  # edits: every accuracy target times k
    d = copy.deepcopy(doc)
    for q in d["queries"]:
        if q["how"] == "accuracy":
            q["value"] = repr(float(q["value"]) * k)
    t = time.perf_counter()
    wj.plan_and_preview(d, None, base, draft=True)
    times.append(time.perf_counter() - t)
print(statistics.median(times), max(times))
"""


def _page_replan() -> tuple[float, float]:
    """The page's re-plan after an edit, by the code behind ``/api/preview`` (a draft:
    certificates presumed), certificate cache off: median and max of seven edits of the example
    plan's accuracy targets, in one fresh process after the page's first view."""
    env = _env()
    env["SNAPDP_CACHE_DIR"] = "off"
    out = subprocess.run(
        [sys.executable, "-c", _PAGE, str(ROOT / "docs" / "examples" / "plan.toml")],
        check=True, capture_output=True, text=True, env=env,
    )  # fmt: skip
    median, worst = out.stdout.strip().splitlines()[-1].split()
    return float(median), float(worst)


_PAGE_CPU = _PAGE.replace("time.perf_counter()", "time.process_time()").replace(
    "print(statistics.median(times), max(times))", "print(*times)"
)


def _cpu_seconds(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    """(user + system CPU seconds of a child process, its stdout)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(args, check=True, capture_output=True, text=True, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, out.stdout


def cpu_figures(repeats: int) -> None:
    """``--cpu``: items 2 and 3 in CPU seconds, which a loaded machine disturbs far less than
    wall time: ``snapdp run docs/examples/plan.toml`` with an empty certificate cache (CPU of the
    whole process, and how many certificates it had to compute), and the page's re-plan after
    each of seven edits (``time.process_time`` around the code behind ``/api/preview``)."""
    work = Path(tempfile.mkdtemp(prefix="snapdp-latency-cpu-"))
    data = Path(os.environ.get("SNAPDP_SHARED_DATA", ROOT.parent / "shared" / "data"))
    print(f"{platform.node()}: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    for k in range(repeats):
        example = work / f"example{k}"
        example.mkdir()
        shutil.copy(ROOT / "docs" / "examples" / "plan.toml", example / "plan.toml")
        shutil.copy(data / "PUMS_dup.csv", example / "PUMS_dup.csv")
        env = _env()
        env["SNAPDP_CACHE_DIR"] = str(example / "cache")
        cpu, _ = _cpu_seconds(
            [sys.executable, "-m", "snapdp.cli", "run", str(example / "plan.toml"), "--ledger",
             str(example / "l.db"), "--output", str(example / "out"), "--total-epsilon", "1000"],
            env,
        )  # fmt: skip
        made = len(list((example / "cache" / "certificates").glob("*.json")))
        print(f"two-phase example plan, empty cache: {cpu:.2f} s CPU, {made} certificates computed")
    env = _env()
    env["SNAPDP_CACHE_DIR"] = "off"
    plan = str(ROOT / "docs" / "examples" / "plan.toml")
    for _ in range(repeats):
        _, out = _cpu_seconds([sys.executable, "-c", _PAGE_CPU, plan], env)
        times = [float(t) for t in out.strip().splitlines()[-1].split()]
        print(f"page re-plan CPU per edit: median {stats.median(times):.3f} s, max "
              f"{max(times):.3f} s ({' '.join(f'{t:.3f}' for t in times)})")  # fmt: skip
    print(f"load {os.getloadavg()[0]:.2f}")
    shutil.rmtree(work, ignore_errors=True)


_IN_PROCESS_CPU = """
import sys, time
src, what, arg = sys.argv[1], sys.argv[2], sys.argv[3]
if what == "snapdp":
    sys.path.insert(0, src)
    from snapdp.data import Plan
    def run(): Plan.load(arg).run()
else:
    code = compile(open(arg, encoding="utf-8").read(), "opendp_work", "exec")
    sys.argv = ["opendp_work", sys.argv[4]]
    def run(): exec(code, {})
run()
times = []
for _ in range(5):
    t = time.process_time(); run(); times.append(time.process_time() - t)
print(sorted(times)[2])
"""


def _child_cpu(args: list[str], env: dict[str, str]) -> tuple[float, str, float]:
    """CPU seconds (user + system, all threads) of one child process, its stdout, and its wall
    seconds (start to exit)."""
    before = os.times()
    start = time.perf_counter()
    out = subprocess.run(args, check=True, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    after = os.times()
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return cpu, out.stdout, wall


def _tree_env(src: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(src)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _fresh_round(
    trees: dict[str, Path],
    commands: dict[str, list[str]],
    opendp_script: Path,
    data: Path,
    cpu: dict[str, list[float]],
    wall: dict[str, list[float]],
) -> None:
    """One fresh ``snapdp`` process per tree (its command's arguments), then OpenDP's script:
    their CPU and wall seconds appended to ``cpu`` and ``wall``."""
    for name, src in trees.items():
        args = [sys.executable, "-m", "snapdp.cli", *commands[name]]
        seconds, _, elapsed = _child_cpu(args, _tree_env(src))
        cpu[name].append(seconds)
        wall[name].append(elapsed)
    seconds, _, elapsed = _child_cpu([sys.executable, str(opendp_script), str(data)], _env())
    cpu["OpenDP"].append(seconds)
    wall["OpenDP"].append(elapsed)


def paired_runs(pairs: int, data: Path, work: Path) -> None:
    """``pairs`` alternating fresh processes: ``snapdp run`` of this tree, OpenDP's script (the
    order swapped every pair); wall and CPU medians and the pairs' wall differences, which
    cancel most of a drifting machine's rounds (docs/performance.md, "Latency")."""
    plan_file = work / "plan.toml"
    script = work / "opendp_work.py"
    script.write_text(OPENDP, encoding="utf-8")
    runs: dict[str, list[tuple[float, float]]] = {"snapdp run": [], "OpenDP": []}
    load0 = os.getloadavg()[0]
    for k in range(pairs):
        args = {
            "snapdp run": ([sys.executable, "-m", "snapdp.cli", "run", str(plan_file), "--ledger",
                            str(work / f"p{k}.db"), "--output", str(work / f"p{k}"),
                            "--total-epsilon", "1000000"], _tree_env(ROOT / "src")),
            "OpenDP": ([sys.executable, str(script), str(data)], _env()),
        }  # fmt: skip
        for name in list(args)[:: 1 if k % 2 == 0 else -1]:
            cpu, _, wall = _child_cpu(*args[name])
            runs[name].append((wall, cpu))
    when = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"{platform.node()}: nproc {os.cpu_count()}, load {load0:.2f} → "
          f"{os.getloadavg()[0]:.2f}, {when}, {pairs} alternating pairs\n")  # fmt: skip
    print("| | wall median (min) | CPU median (min) |\n|---|---|---|")
    for name, got in runs.items():
        walls, cpus = [w for w, _ in got], [c for _, c in got]
        print(f"| fresh {name} | {stats.median(walls):.3f} s ({min(walls):.3f}) | "
              f"{stats.median(cpus):.3f} s ({min(cpus):.3f}) |")  # fmt: skip
    diff = [a[0] - b[0] for a, b in zip(runs["snapdp run"], runs["OpenDP"], strict=True)]
    print(f"\nsnapdp run − OpenDP, wall, per pair: median {stats.median(diff) * 1e3:+.0f} ms, "
          f"mean {stats.mean(diff) * 1e3:+.0f} ms; snapdp faster in "
          f"{sum(d < 0 for d in diff)} of {pairs}")  # fmt: skip


def cpu_rounds(rounds: int, baseline: Path, data: Path, work: Path) -> None:
    """Interleaved CPU seconds: fresh ``snapdp run`` (baseline, this tree), OpenDP's fresh
    script, then the in-process workload of each (module doc)."""
    plan_file = work / "plan.toml"
    opendp_script = work / "opendp_work.py"
    opendp_script.write_text(OPENDP, encoding="utf-8")
    count_script = work / "opendp_count.py"
    count_script.write_text(OPENDP_COUNT, encoding="utf-8")
    trees = {"baseline": baseline, "this tree": ROOT / "src"}
    fresh: dict[str, list[float]] = {k: [] for k in [*trees, "OpenDP"]}
    fresh_wall: dict[str, list[float]] = {k: [] for k in [*trees, "OpenDP"]}
    inproc: dict[str, list[float]] = {k: [] for k in [*trees, "OpenDP"]}
    sql_cpu: dict[str, list[float]] = {k: [] for k in [*trees, "OpenDP"]}
    sql_wall: dict[str, list[float]] = {k: [] for k in [*trees, "OpenDP"]}
    load0 = os.getloadavg()[0]
    for r in range(rounds):
        runs = {name: ["run", str(plan_file), "--ledger", str(work / f"c{r}{name[0]}.db"),
                       "--output", str(work / f"c{r}{name[0]}"), "--total-epsilon", "1000000"]
                for name in trees}  # fmt: skip
        _fresh_round(trees, runs, opendp_script, data, fresh, fresh_wall)
        sqls = {name: ["sql", SQL, "--declaration", str(plan_file), "--epsilon", "0.333"]
                for name in trees}  # fmt: skip
        _fresh_round(trees, sqls, count_script, data, sql_cpu, sql_wall)
        for name, src in trees.items():
            args = [sys.executable, "-c", _IN_PROCESS_CPU, str(src), "snapdp", str(plan_file)]
            inproc[name].append(float(_child_cpu(args, _tree_env(src))[1].split()[-1]))
        args = [sys.executable, "-c", _IN_PROCESS_CPU, "", "opendp", str(opendp_script), str(data)]
        inproc["OpenDP"].append(float(_child_cpu(args, _env())[1].split()[-1]))
        print(f"round {r + 1}: load {os.getloadavg()[0]:.1f}; fresh "
              + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in fresh.items()) + "; in process "
              + ", ".join(f"{k} {v[-1] * 1e3:.0f} ms" for k, v in inproc.items()),
              file=sys.stderr)  # fmt: skip
    when = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load1 = os.getloadavg()[0]
    print(f"{platform.node()}: nproc {os.cpu_count()}, load {load0:.2f} → {load1:.2f}, "
          f"{when}, {rounds} interleaved rounds, CPU seconds and fresh wall\n")  # fmt: skip
    # The machine drifts from round to round (the same fresh run took 0.52-0.80 s in one
    # session): the ratio within each round, where both ran within a second, is the steadier
    # figure; both are printed.
    print("| | baseline | this tree | OpenDP | this tree ÷ OpenDP | per round: median (range) |"
          "\n|---|---|---|---|---|---|")  # fmt: skip
    for label, table, unit in (("fresh process: CPU median (min)", fresh, 1.0),
                               ("fresh process: wall median (min)", fresh_wall, 1.0),
                               ("fresh `snapdp sql` of the count: CPU median (min)", sql_cpu, 1.0),
                               ("fresh `snapdp sql` of the count: wall median (min)", sql_wall,
                                1.0),
                               ("in process: CPU median (min)", inproc, 1e3)):  # fmt: skip
        cells = []
        for k in fresh:
            v = table[k]
            fmt = "{:.2f} s ({:.2f})" if unit == 1.0 else "{:.0f} ms ({:.0f})"
            cells.append(fmt.format(stats.median(v) * unit, min(v) * unit))
        ratio = stats.median(table["this tree"]) / stats.median(table["OpenDP"])
        per = [a / b for a, b in zip(table["this tree"], table["OpenDP"], strict=True)]
        paired = f"{stats.median(per):.2f}× ({min(per):.2f}–{max(per):.2f})"
        print(f"| {label} | " + " | ".join(cells) + f" | {ratio:.2f}× | {paired} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--data", type=Path, default=None, help="PUMS.csv (1,000 rows)")
    parser.add_argument("--cpu", type=int, default=0, help="interleaved CPU rounds (module doc)")
    parser.add_argument("--baseline", type=Path, default=None, help="the src folder to compare")
    parser.add_argument(
        "--pairs", type=int, default=0, help="alternating fresh runs against OpenDP (module doc)"
    )
    parser.add_argument(
        "--cpu-plans", action="store_true", help="items 2 and 3 in CPU seconds only"
    )
    args = parser.parse_args()
    if args.cpu_plans:
        return cpu_figures(args.repeats)
    data = (
        args.data
        or Path(os.environ.get("SNAPDP_SHARED_DATA", ROOT.parent / "shared" / "data")) / "PUMS.csv"
    )
    work = Path(tempfile.mkdtemp(prefix="snapdp-latency-"))
    plan_file = work / "plan.toml"
    plan_file.write_text(
        PLAN.format(source=data.as_posix(), educ=", ".join(map(str, EDUC))), encoding="utf-8"
    )
    if args.cpu:
        cpu_rounds(args.cpu, args.baseline or ROOT / "src", data, work)
        shutil.rmtree(work, ignore_errors=True)
        return
    if args.pairs:
        paired_runs(args.pairs, data, work)
        shutil.rmtree(work, ignore_errors=True)
        return
    load = os.getloadavg()[0]
    rows: list[tuple[str, str, str, str]] = []
    snap_in = _median_time(_snapdp_in_process(plan_file), args.repeats)
    snap_fresh = _median_time(_snapdp_cli(plan_file, work), max(3, args.repeats // 2), False)
    opendp_script = work / "opendp_work.py"
    opendp_script.write_text(OPENDP, encoding="utf-8")
    try:
        import opendp  # noqa: F401

        odp_fresh = _median_time(
            _fresh([sys.executable, str(opendp_script), str(data)]),
            max(3, args.repeats // 2), False,
        )  # fmt: skip
        ns: dict[str, object] = {}
        code = compile(OPENDP, "opendp_work", "exec")
        sys.argv = ["opendp_work", str(data)]
        odp_in = _median_time(lambda: exec(code, ns), args.repeats)
        odp = (f"{odp_in * 1e3:.0f} ms", f"{odp_fresh:.2f} s")
    except ImportError:
        odp = ("not installed", "not installed")
    try:
        import snsql  # noqa: F401

        sn = ("installed, not measured by this script", "—")
    except ImportError:
        sn = ("not installed", "not installed")
    rows.append(("in process, after a warm-up (median)", f"{snap_in * 1e3:.0f} ms", *odp[:1],
                 sn[0]))  # fmt: skip
    rows.append(("fresh process (snapdp: `snapdp run`)", f"{snap_fresh:.2f} s", odp[1], sn[1]))
    cold = _two_phase_cold(work)
    replan = _replan()
    page_median, page_max = _page_replan()
    when = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"{platform.node()}: {os.cpu_count()} cores, load {load:.2f} → "
          f"{os.getloadavg()[0]:.2f}, {when}, Python {platform.python_version()}\n")  # fmt: skip
    print("| | snapdp | OpenDP | SmartNoise SQL |\n|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print(f"\ntwo-phase example plan, fresh process, empty certificate cache: {cold:.2f} s")
    print(f"re-plan after an edit (planner draft, empty cache): {replan:.3f} s")
    print(f"page re-plan after an edit (/api/preview's code, draft, cache off): median "
          f"{page_median:.3f} s, max {page_max:.3f} s over 7 edits")  # fmt: skip
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
