"""How long the ledger takes to check and record one spend, against the length of its history.

Every read validates every row and the SHA-256 chain (docs/data.md, "Budgets and the ledger"), so
the cost of one spend grows with the number of recorded releases. This script builds ledgers of
N spends (written with the ledger's own schema and digest functions in one transaction, since N
calls of ``Ledger.spend`` would take O(N²)) and times ``Ledger(...)``, ``check`` and ``spend`` of
one more, best of several repeats.

    PYTHONPATH=src python benchmarks/bench_ledger.py [--sizes 0 100 1000 10000]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import tempfile
import time
from fractions import Fraction
from pathlib import Path

from snapdp.data.budget import store
from snapdp.data.budget.ledger import Ledger

_QUERY = {
    "statistics": ["count", "mean(income)"],
    "bounds": {"mean(income)": [0, 500000]},
    "by": "sex",
    "keys": [0, 1],
}


def _build(path: Path, n: int) -> None:
    """A valid ledger of ``n`` spends of 1/1000 on dataset "default" (total n + 10)."""
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("BEGIN")
    for statement in store._SCHEMA:
        con.execute(statement)
    store._init_meta(con)
    store._insert_budget(con, store.DEFAULT_DATASET, Fraction(n + 10))
    created = con.execute("SELECT value FROM meta WHERE key = 'created'").fetchone()[0]
    head = store._genesis(created)
    query = json.dumps(_QUERY, sort_keys=True)
    for _ in range(n):
        fields = [
            store._now(),
            "1/1000",
            "0.0",
            "count",
            store.DEFAULT_DATASET,
            "data.csv",
            query,
        ]
        head = store._digest(head, fields)
        con.execute(
            "INSERT INTO spends (time, epsilon, delta, what, dataset, label, query, digest) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (*fields, head),
        )
    con.execute("UPDATE meta SET value = ? WHERE key = 'head'", (head,))
    con.execute("COMMIT")
    con.close()


def _time_one(template: Path, n: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "b.sqlite"
            if template.exists():
                shutil.copy(template, path)
            start = time.perf_counter()
            book = Ledger(path, n + 10)
            book.check("0.001")
            book.spend("0.001", 0.0, "count", "data.csv", _QUERY)
            best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[0, 100, 1000, 10000])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print("| recorded releases | open + check + spend of one more (ms) |")
    print("|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            template = Path(tmp) / f"t{n}.sqlite"
            if n:
                _build(template, n)
            seconds = _time_one(template, n, args.repeats)
            if n:
                assert Ledger(template).spent() == Fraction(n, 1000)  # the file is valid
            print(f"| {n:,} | {seconds * 1000:,.1f} |", flush=True)


if __name__ == "__main__":
    main()
