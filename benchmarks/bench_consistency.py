"""The numbers of docs/data.md, "Tables that add up": nested counts on PUMS, alone and fitted.

    PYTHONPATH=src python benchmarks/bench_consistency.py [--releases 300] [--data PATH]

Releases the total, the count by sex and the count by sex × educ of PUMS.csv (1,000 rows) at a
total ε = 1 split equally, ``--releases`` times with seeded noise (NOT private: a benchmark), and
reports for each level the mean absolute error of the values released on their own and after
the joint fit (``consistent``: "wls", "nonnegative", "integer"), the mean stated ± and how
often the ± held. Takes under a minute on 2 cores.
"""

from __future__ import annotations

import argparse
import csv
from collections import Counter
from pathlib import Path

import numpy as np

from snapdp.data import Column, NullRule, PrivateTable, Query, Schema

DATA = Path("/work/shared/data/PUMS.csv")
LEVELS = ("total", "by sex", "by sex × educ")
MODES = ("alone", "wls", "nonnegative", "integer")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", type=int, default=300)
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    with args.data.open(newline="") as f:
        rows = list(csv.DictReader(f))
    cells = Counter((int(r["sex"]), int(r["educ"])) for r in rows)
    sexes, educs = (0, 1), tuple(range(1, 17))
    truth = [
        np.array([len(rows)], dtype=float),
        np.array([sum(cells[(s, e)] for e in educs) for s in sexes], dtype=float),
        np.array([cells[(s, e)] for s in sexes for e in educs], dtype=float),
    ]
    # bins over all of int64 with nulls imputed: every row has a cell of each grouping column,
    # so the three counts count the same rows and are fitted together (docs/data.md, "Tables
    # that add up")
    top, impute = 1 << 63, NullRule("impute", 0)
    schema = Schema(
        (
            Column("sex", "integer", bins=(-top, 1, top), nulls=impute),
            Column("educ", "integer", bins=(-top, *educs[1:], top), nulls=NullRule("impute", 1)),
        )
    )
    queries = [Query("count"), Query("count", by=("sex",)), Query("count", by=("sex", "educ"))]
    err = {m: [0.0] * 3 for m in MODES}
    acc = {m: [0.0] * 3 for m in MODES}
    held = {m: [0] * 3 for m in MODES}
    for seed in range(args.releases):
        for mode in MODES[1:]:
            table = PrivateTable(
                str(args.data), schema, total_epsilon=10, rng=np.random.default_rng(seed)
            )
            results = table.release(queries, 1, consistent=mode)
            for k, (r, x) in enumerate(zip(results, truth, strict=True)):
                v = np.array([row.value for row in r.rows])
                a = np.array([row.accuracy for row in r.rows])
                err[mode][k] += float(np.abs(v - x).mean())
                acc[mode][k] += float(a.mean())
                held[mode][k] += int((np.abs(v - x) <= a).sum())
                if mode == "wls":  # the same seed: the independent values are the same draws
                    alone = np.array([row.independent for row in r.rows])
                    a0 = table.accuracy([queries[k]], 1 / 3)[0].accuracy or 0.0
                    err["alone"][k] += float(np.abs(alone - x).mean())
                    acc["alone"][k] += a0
                    held["alone"][k] += int((np.abs(alone - x) <= a0).sum())
    n = args.releases
    print(f"PUMS {len(rows)} rows; ε = 1 split over 3 counts; {n} seeded releases; 95% ±")
    print("| level | values | " + " | ".join(f"MAE {m}" for m in MODES) + " | "
          + " | ".join(f"± {m}" for m in MODES) + " | " + " | ".join(f"held {m}" for m in MODES)
          + " |")  # fmt: skip
    print("|" + " --- |" * (2 + 3 * len(MODES)))
    for k, level in enumerate(LEVELS):
        size = len(truth[k])
        line = [level, str(size)]
        line += [f"{err[m][k] / n:.2f}" for m in MODES]
        line += [f"{acc[m][k] / n:.1f}" for m in MODES]
        line += [f"{held[m][k] / (n * size):.3f}" for m in MODES]
        print("| " + " | ".join(line) + " |")


if __name__ == "__main__":
    main()
