"""Benchmark: the DuckDB engine on a CSV file, one record per line, against another checkout.

Usage: PYTHONPATH=src python benchmarks/bench_csv.py [--rows N] [--rounds R]
       [--base OTHER/src] [--plans count,sum,unit] [--quoted]

Writes a CSV of N rows (g: i mod 50, an integer; x: a decimal in [0, 1000) with 2 decimals; pid:
an integer, N/4 units; with ``--quoted`` every x is written "quoted") to a temporary directory,
then runs each plan R times in fresh processes, alternating this checkout's engine with the one
under ``--base`` (e.g. the engine before the record-per-line rule: ``git worktree add /tmp/base
<commit>`` then ``--base /tmp/base/src``). Each process reports the second of two runs: wall
time and CPU time of ``aggregate`` alone, and its peak RSS. Prints a Markdown table of medians
(docs/performance.md, "CSV input, one record per line").

Plans: ``count`` (rows, no column read), ``sum`` (count and Σ quanta of x by the 50 declared keys
of g), ``unit`` (the same with privacy unit pid, k = 1).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

_TASK = """
import json, resource, sys, time
from fractions import Fraction
from snapdp.data.engines.base import AggregatePlan, ValueColumn
from snapdp.data.engines.duckdb.engine import DuckDBEngine
from snapdp.data.model.schema import Column, ContributionBounds
path, plan_name = sys.argv[1], sys.argv[2]
g = Column("g", "integer", keys=tuple(range(50)))
x = ValueColumn(Column("x", "decimal", lower=Fraction(0), upper=Fraction(1000)), 2, 0, 100000)
plans = {
    "count": AggregatePlan(),
    "sum": AggregatePlan(groupings=(g,), values=(x,)),
    "unit": AggregatePlan((g,), (x,), Column("pid", "integer"), "drop",
                          ContributionBounds(max_rows_per_unit=1), "0123456789abcdef" * 2),
}
engine = DuckDBEngine(path)
for _ in range(2):
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t = time.perf_counter()
    agg = engine.aggregate(plans[plan_name])
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_SELF)
cpu = r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"wall": wall, "cpu": cpu, "rss": rss, "rows": sum(agg.rows)}))
"""


def generate(path: Path, rows: int, quoted: bool) -> None:
    x = "round(random() * 1000, 2)::DECIMAL(8, 2)" + ("::VARCHAR" if quoted else "")
    force = ", FORCE_QUOTE (x)" if quoted else ""
    code = (
        "import duckdb, sys\n"
        'duckdb.connect().execute(f"COPY (SELECT (i % 50)::BIGINT AS g, '
        + x
        + " AS x, (i * 7919 % {int(sys.argv[2]) // 4})::BIGINT AS pid FROM range({sys.argv[2]}) "
        "t(i)) TO '{sys.argv[1]}' (HEADER, DELIMITER ','" + force + ')")\n'
    )
    subprocess.run([sys.executable, "-c", code, str(path), str(rows)], check=True)


def run(src: str, path: Path, plan: str) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=src)
    out = subprocess.run(
        [sys.executable, "-c", _TASK, str(path), plan],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--base", default=None, help="another checkout's src folder")
    parser.add_argument("--plans", default="count,sum,unit")
    parser.add_argument("--quoted", action="store_true")
    args = parser.parse_args()
    here = str(Path(__file__).resolve().parent.parent / "src")
    engines = {"this": here} | ({"base": args.base} if args.base else {})
    plans = [p for p in args.plans.split(",") if p]
    with tempfile.TemporaryDirectory(prefix="snapdp-csv-") as d:
        path = Path(d) / "data.csv"
        generate(path, args.rows, args.quoted)
        size = path.stat().st_size
        results: dict[tuple[str, str], list[dict[str, float]]] = {}
        for r in range(args.rounds):
            for plan in plans:
                order = list(engines) if r % 2 == 0 else list(reversed(engines))
                for name in order:
                    res = run(engines[name], path, plan)
                    results.setdefault((plan, name), []).append(res)
                    print(f"# {r} {plan} {name}: {res}", file=sys.stderr)
    print(f"{args.rows:,} rows, {size / 2**20:.0f} MiB{', x quoted' if args.quoted else ''}\n")
    print("| plan | engine | wall (median) | CPU (median) | peak RSS | × base (wall) |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for plan in plans:
        for name in engines:
            runs = results[(plan, name)]
            wall = statistics.median(x["wall"] for x in runs)
            cpu = statistics.median(x["cpu"] for x in runs)
            rss = max(x["rss"] for x in runs)
            base = results.get((plan, "base"))
            ratio = f"{wall / statistics.median(x['wall'] for x in base):.2f}" if base else "-"
            print(f"| {plan} | {name} | {wall:.2f} s | {cpu:.2f} s | {rss:.0f} MiB | {ratio} |")


if __name__ == "__main__":
    main()
