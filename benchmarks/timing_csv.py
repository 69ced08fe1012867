"""Timing differential of the CSV reader: one block of plain rows against the same block with odd
rows (docs/data.md, "Run time"; docs/performance.md, "Run time by what the rows hold").

The block holds ``--lines`` lines (g, x, pid as in ``benchmarks/bench_csv.py``); the odd block
is the same with a few rows changed: a CR line end, a byte-order mark, a blank line, a line of
blanks, a leading blank, non-ASCII text, undecodable bytes, a quoted field, a quote inside a
field, too few fields. Each is parsed ``--rounds`` times by the stream's own block parser (the
step a release runs per block), alternating, for fields (``lists``, a query reading columns) and
for record flags (a count); prints the medians, their ratio, and exits 1 when a ratio is
outside 1 ± ``--tolerance``.

    PYTHONPATH=src python3 benchmarks/timing_csv.py [--lines 200000] [--rounds 41]
"""

from __future__ import annotations

import argparse
import statistics
import time

from snapdp.data.engines.csv.records import CsvLines


def plain_rows(n: int) -> list[bytes]:
    return [
        f"{i % 50},{(i * 37) % 1000}.{i % 100:02d},{i * 7919 % 50000}".encode() for i in range(n)
    ]


def odd_rows(rows: list[bytes]) -> list[bytes]:
    """The same rows with ten of them odd, spread over the block."""
    out = list(rows)
    step = len(out) // 11
    odd = [
        out[step] + b"\r",
        b"\xef\xbb\xbf" + out[2 * step],
        b"",
        b" \t ",
        b" " + out[5 * step],
        "é,ü,1".encode(),
        b"\xff\xfe,1,2",
        b'"7","1,5",3',
        b'a"b,1,2',
        b"1,2",
    ]
    for j, row in enumerate(odd, start=1):
        out[j * step] = row
    return out


def medians(stream: CsvLines, blocks: dict[str, bytes], rounds: int) -> dict[str, float]:
    """The median time (s) of parsing each block, the blocks alternating."""
    times: dict[str, list[float]] = {name: [] for name in blocks}
    for r in range(rounds):
        order = list(blocks) if r % 2 == 0 else list(reversed(blocks))
        for name in order:
            start = time.perf_counter()
            stream._parse(blocks[name], False, 3)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=41)
    parser.add_argument("--tolerance", type=float, default=0.10)
    args = parser.parse_args(argv)
    rows = plain_rows(args.lines)
    blocks = {
        "plain": b"\n".join(rows) + b"\n",
        "odd": b"\n".join(odd_rows(rows)) + b"\n",
    }
    size = len(blocks["plain"]) / 2**20
    print(f"{args.lines:,} lines, {size:.1f} MiB per block, median of {args.rounds}\n")
    print("| parse | plain rows | with odd rows | odd / plain |")
    print("| --- | ---: | ---: | ---: |")
    worst = 0.0
    for lists in (True, False):
        stream = CsvLines([], "utf-8", False, ",", 3, lists=lists)
        m = medians(stream, blocks, args.rounds)
        ratio = m["odd"] / m["plain"]
        worst = max(worst, abs(ratio - 1))
        what = "fields" if lists else "record flags"
        print(f"| {what} | {m['plain'] * 1e3:.1f} ms | {m['odd'] * 1e3:.1f} ms | {ratio:.3f} |")
    return 0 if worst <= args.tolerance else 1


if __name__ == "__main__":
    raise SystemExit(main())
