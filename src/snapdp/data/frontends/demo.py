"""A synthetic, census-like demo table, generated deterministically in code (not real people).

100,000 rows, one per person: ``pid, age, sex, educ, race, income, region``. Its public facts (the
row count and the group keys) are exported so the demo can declare them, as a real release would.
The generator is seeded because the *data* must be the same every time; the noise added to
releases over it still comes from the default CSPRNG (docs/mechanism.md).
"""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa

__all__ = ["DEMO_BOUNDS", "DEMO_DATASET", "DEMO_KEYS", "DEMO_ROWS", "demo_table"]

DEMO_ROWS = 100_000
#: the demo table's budget name in a ledger (an in-memory table has no file name of its own)
DEMO_DATASET = "demo"
REGIONS = ("north", "south", "east", "west", "central")
DEMO_KEYS: dict[str, tuple[str, ...]] = {
    "region": REGIONS,
    "sex": ("0", "1"),
    "race": tuple(str(r) for r in range(1, 7)),
    "educ": tuple(str(e) for e in range(1, 17)),
}
DEMO_BOUNDS: dict[str, tuple[float, float]] = {
    "age": (0.0, 100.0),
    "income": (0.0, 500_000.0),
    "educ": (1.0, 16.0),
}


@functools.lru_cache(maxsize=1)
def demo_table() -> pa.Table:
    """The demo table (cached: generated once per process, in about 0.1 s)."""
    rng = np.random.default_rng(20_190_601)
    n = DEMO_ROWS
    age = np.clip(rng.normal(42, 18, n), 0, 99).astype(np.int64)
    sex = rng.integers(0, 2, n)
    educ = np.clip(np.round(rng.normal(10 + 0.02 * (age - 40), 3, n)), 1, 16).astype(np.int64)
    race = rng.choice(np.arange(1, 7), size=n, p=[0.62, 0.13, 0.06, 0.01, 0.12, 0.06])
    region = rng.choice(np.array(REGIONS), size=n, p=[0.17, 0.38, 0.18, 0.24, 0.03])
    working = (age >= 18) & (age < 70) & (rng.random(n) < 0.8)
    income = np.where(
        working,
        np.round(np.minimum(rng.lognormal(10.3 + 0.06 * (educ - 10), 0.7, n), 2e6), -2),
        0.0,
    )
    return pa.table(
        {
            "pid": np.arange(1, n + 1, dtype=np.int64),
            "age": age,
            "sex": sex.astype(np.int64),
            "educ": educ,
            "race": race.astype(np.int64),
            "income": income,
            "region": region.astype(str),
        }
    )
