"""Benchmark: peak memory of the DuckDB engine's CSV reader with one very long line.

Usage: PYTHONPATH=src python benchmarks/bench_csv_long_line.py [--rows N] [--mb M]
       [--base OTHER/src] [--max-line-bytes B]

Writes two CSV files of N rows (g: i mod 50; x: a decimal; default N = 10^6): D, and D' = D
plus one line holding a quoted field of M MB (default 100) in the middle. Then, each in a fresh
process, counts the rows and sums x by the 50 keys of g with this checkout's engine (and the
one under ``--base``, e.g. ``git worktree add /tmp/base main`` then ``--base /tmp/base/src``),
and prints the peak RSS of each run as a Markdown table (docs/performance.md, "A long CSV
line"). Memory outside DuckDB's ``memory_limit`` is the reader's: a few blocks of lines, each
at most 2 MiB plus ``max_line_bytes`` (docs/data.md, "CSV input").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

_TASK = """
import json, resource, sys
from fractions import Fraction
from snapdp.data.engines.base import AggregatePlan, ValueColumn
from snapdp.data.engines.duckdb.engine import DuckDBEngine
from snapdp.data.model.schema import Column, CsvOptions
path, limit = sys.argv[1], int(sys.argv[2])
g = Column("g", "integer", keys=tuple(range(50)))
x = ValueColumn(Column("x", "decimal", lower=Fraction(0), upper=Fraction(1000)), 2, 0, 100000)
try:
    csv = CsvOptions(max_line_bytes=limit) if limit else CsvOptions()
except TypeError:  # an engine before max_line_bytes
    csv = CsvOptions()
agg = DuckDBEngine(path, csv=csv, memory_limit="1GB").aggregate(AggregatePlan((g,), (x,)))
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"rows": sum(agg.rows), "peak_mib": peak}))
"""


def _write(path: Path, rows: int, mb: int) -> None:
    with path.open("wb") as f:
        f.write(b"g,x,note\n")
        for start in range(0, rows, 100_000):
            chunk = range(start, min(rows, start + 100_000))
            f.write(b"".join(b"%d,%d.%02d,n\n" % (i % 50, i % 1000, i % 100) for i in chunk))
            if mb and start <= rows // 2 < start + 100_000:
                f.write(b'1,2.5,"')
                for _ in range(mb):
                    f.write(b"z" * 1_000_000)
                f.write(b'"\n')


def _run(src: str, path: Path, limit: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": src}
    out = subprocess.run(
        [sys.executable, "-c", _TASK, str(path), str(limit)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--base", default=None, help="another checkout's src folder")
    parser.add_argument("--max-line-bytes", type=int, default=0, help="0: the default")
    args = parser.parse_args()
    here = str(Path(__file__).resolve().parents[1] / "src")
    engines = [("this checkout", here)] + ([("base", args.base)] if args.base else [])
    with tempfile.TemporaryDirectory() as tmp:
        d, d2 = Path(tmp) / "d.csv", Path(tmp) / "d2.csv"
        _write(d, args.rows, 0)
        _write(d2, args.rows, args.mb)
        print(f"| engine | D ({args.rows:,} rows) | D' (+ one {args.mb} MB line) |")
        print("| --- | ---: | ---: |")
        for name, src in engines:
            a, b = _run(src, d, args.max_line_bytes), _run(src, d2, args.max_line_bytes)
            print(
                f"| {name} | {a['peak_mib']:.0f} MiB ({a['rows']:.0f} rows) | "
                f"{b['peak_mib']:.0f} MiB ({b['rows']:.0f} rows) |"
            )


if __name__ == "__main__":
    main()
