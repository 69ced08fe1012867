"""CPU of the parts of a fresh ``snapdp run`` of the issue's plan (bench_latency.py's PLAN), in
alternating fresh processes of two source trees (docs/performance.md, "Fresh run, fifth
2026-11-27 session").

    PYTHONPATH=src python3 benchmarks/bench_fresh_parts.py --pairs 12 --baseline /work/main/src

A whole fresh run varies by ±0.1 s of CPU on a loaded machine, more than a change of a few ms;
the parts, timed with ``time.process_time`` inside each process, vary far less. Each process
runs the command (``snapdp.cli.main`` with the run's arguments) with the collector off (the
installed command keeps it off during its imports and freezes what they made), and reports per
part its CPU summed over calls; the trees alternate, so the machine's load falls on both
alike. Prints medians (minima) per part, in ms.
"""

from __future__ import annotations

import argparse
import os
import statistics as stats
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_latency import EDUC, PLAN

ROOT = Path(__file__).resolve().parent.parent

#: (module, attribute path) of each part timed (a name imported by a module: where it is called);
#: a part's time includes the parts it calls (the SQL is built inside the aggregate)
PARTS = (
    ("snapdp.data.planner.plan", "Plan.preview"),
    ("snapdp.data.engines.duckdb.sources", "DuckDBSource.__init__"),
    ("snapdp.data.engines.duckdb.engine", "DuckDBEngine.sql"),
    ("snapdp.data.engines.duckdb.engine", "DuckDBEngine.aggregate"),
    ("snapdp.data.release.run", "write_results"),
    ("snapdp.cli._print", "print_results"),
    ("rich.console", "Console.print"),
)

_CHILD = """
import collections, functools, gc, importlib, sys, time
gc.disable()
parts = [tuple(p.split(":")) for p in sys.argv[1].split(",")]
sys.argv = ["snapdp", "run", *sys.argv[2:]]
spent = collections.Counter()
def timed(name, f):
    @functools.wraps(f)
    def run(*a, **k):
        t = time.process_time()
        try:
            return f(*a, **k)
        finally:
            spent[name] += time.process_time() - t
    return run
t0 = time.process_time()
import snapdp.cli
spent["import:snapdp.cli"] = time.process_time() - t0
for module, path in parts:
    owner = importlib.import_module(module)
    *outer, last = path.split(".")
    for name in outer:
        owner = getattr(owner, name)
    setattr(owner, last, timed(path, getattr(owner, last)))
t1 = time.process_time()
try:
    snapdp.cli.main()
except SystemExit:
    pass
spent["main"] = time.process_time() - t1
print(" ".join(f"{k}={v * 1e3:.2f}" for k, v in spent.items()), file=sys.stderr)
"""


def _one(src: Path, plan: Path, work: Path, k: int) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(src))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    parts = ",".join(f"{m}:{p}" for m, p in PARTS)
    args = [str(plan), "--ledger", str(work / f"l{k}.db"), "--output", str(work / f"o{k}"),
            "--total-epsilon", "1000000"]  # fmt: skip
    out = subprocess.run([sys.executable, "-c", _CHILD, parts, *args], env=env,
                         capture_output=True, text=True, check=True)  # fmt: skip
    last = out.stderr.strip().splitlines()[-1]
    return {k: float(v) for k, v in (x.split("=") for x in last.split())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=12)
    parser.add_argument("--baseline", type=Path, required=True, help="the src folder to compare")
    parser.add_argument("--data", type=Path, default=None, help="PUMS.csv (1,000 rows)")
    args = parser.parse_args()
    data = args.data or Path(os.environ.get("SNAPDP_SHARED_DATA", ROOT.parent / "shared" / "data"))
    data = data / "PUMS.csv" if data.is_dir() else data
    work = Path(tempfile.mkdtemp(prefix="snapdp-parts-"))
    plan = work / "plan.toml"
    plan.write_text(PLAN.format(source=data.as_posix(), educ=", ".join(map(str, EDUC))), "utf-8")
    trees = {"baseline": args.baseline, "this tree": ROOT / "src"}
    for src in trees.values():  # bytecode written, certificates cached: not in the figures
        _one(src, plan, work, -1)
    seen: dict[str, list[dict[str, float]]] = {k: [] for k in trees}
    load0 = os.getloadavg()[0]
    for k in range(args.pairs):
        order = list(trees.items()) if k % 2 == 0 else list(trees.items())[::-1]
        for name, src in order:
            seen[name].append(_one(src, plan, work, k * 2 + (name == "this tree")))
    load1 = os.getloadavg()[0]
    print(f"nproc {os.cpu_count()}, load {load0:.2f} → {load1:.2f}, {args.pairs} alternating "
          "pairs, CPU ms inside each process, median (min)\n")  # fmt: skip
    print("| part | baseline | this tree |\n|---|---|---|")
    for part in seen["baseline"][0]:
        cells = []
        for name in trees:
            v = [run.get(part, 0.0) for run in seen[name]]
            cells.append(f"{stats.median(v):.1f} ({min(v):.1f})")
        print(f"| {part} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
