"""A ``Decimal`` cell in a pandas ``object`` column declared numeric is read by its exact decimal
text, as the same text in a CSV file (a database driver's NUMERIC values arrive as ``Decimal``);
it was null in releases. An infinite one is null, as ``inf`` is (docs/data.md)."""

from __future__ import annotations

import decimal
from pathlib import Path

import numpy as np
import pandas as pd

from snapdp.data.engines.base import AggregatePlan, ValueColumn
from snapdp.data.engines.duckdb.engine import DuckDBEngine
from snapdp.data.model.query import Query
from snapdp.data.model.schema import Column, Schema
from snapdp.data.release.table import PrivateTable

TEXTS = ["0.1", "2.5", "-3E+1", "1E-9", "40", "0.30000000000000004", "12345678901234567890.5"]
KEYS = ["a", "b", "a", "b", "a", "b", "a"]
SCHEMA = Schema(
    (
        Column("k", "text", keys=("a", "b")),
        Column("x", "decimal", -100, 100),
        Column("n", "integer", -100, 100),
    )
)
QUERIES = [Query("sum", "x", by=("k",)), Query("mean", "x"), Query("sum", "n")]


def _released(source: object, seed: int) -> list[list[tuple[object, float]]]:
    table = PrivateTable(source, SCHEMA, total_epsilon=100, rng=np.random.default_rng(seed))
    return [[(r.keys, r.value) for r in res.rows] for res in table.release(QUERIES, 3)]


def test_decimal_cells_release_as_the_same_text_in_a_csv(tmp_path: Path) -> None:
    ints = ["7", "-2", "3E+1", "4.0", "x", "5", "6"]
    csv = tmp_path / "t.csv"
    csv.write_text(
        "k,x,n\n" + "".join(f"{k},{x},{n}\n" for k, x, n in zip(KEYS, TEXTS, ints, strict=True))
    )
    frame = pd.DataFrame(
        {
            "k": KEYS,
            "x": [decimal.Decimal(t) for t in TEXTS],
            "n": [decimal.Decimal(t) if t != "x" else "x" for t in ints],
        }
    )
    assert frame["x"].dtype == object
    for seed in range(3):
        assert _released(frame, seed) == _released(csv, seed)
    # the engine's exact sums, in quanta of 10^-9: every cell was read (they were null before)
    x = ValueColumn(SCHEMA.columns[1], 9, -100 * 10**9, 100 * 10**9)
    plan = AggregatePlan(groupings=(SCHEMA.columns[0],), values=(x,))
    got, want = DuckDBEngine(frame).aggregate(plan), DuckDBEngine(csv).aggregate(plan)
    assert got == want and got.counts[0] == [4, 3]


def test_an_infinite_decimal_is_null() -> None:
    inf = pd.DataFrame(
        {"k": ["a", "a"], "x": [decimal.Decimal("Infinity"), decimal.Decimal(1)], "n": [1, 1]}
    )
    missing = pd.DataFrame({"k": ["a", "a"], "x": [None, decimal.Decimal(1)], "n": [1, 1]})
    for seed in range(3):
        assert _released(inf, seed) == _released(missing, seed)
