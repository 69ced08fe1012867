"""Released statistics lie within their reported accuracy in >= (1 − α) of repeated releases.

Fixed seeds; the number of misses is compared with the (1 − 1e-6) quantile of Binomial(n, α), so
a correct implementation fails with probability < 1e-6 (and with these seeds, never).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import binom

from snapdp.data import Count, Mean, PrivateTable, Sum

ALPHA = 0.2  # large, so that a too-small accuracy would show up as too many misses
REPEATS = 150


def _allowed_misses(n: int, alpha: float) -> int:
    return int(binom.ppf(1 - 1e-6, n, alpha))


def test_grouped_releases_within_accuracy(pums: Path) -> None:
    df = pd.read_csv(pums / "PUMS_pid.csv")
    keys = ["0", "1"]
    truth_count = [int((df.sex == int(k)).sum()) for k in keys]
    truth_sum = [float(df.income[df.sex == int(k)].clip(0, 200_000).sum()) for k in keys]
    truth_mean = [df.age[df.sex == int(k)].clip(18, 90).mean() for k in keys]
    table = PrivateTable(
        pums / "PUMS_pid.csv", max_rows=1000, total_epsilon=1e9, privacy_unit="pid",
        rng=np.random.default_rng(2026),
    )  # fmt: skip
    stats = [Count(), Sum("income", 0, 200_000), Mean("age", 18, 90)]
    misses = {s.label: 0 for s in stats}
    for _ in range(REPEATS):
        results = table.release(stats, 0.3, alpha=ALPHA, by="sex", keys=keys)
        for r, truth in zip(results, (truth_count, truth_sum, truth_mean), strict=True):
            for v, a, t in zip(r.values, r.accuracy, truth, strict=True):
                misses[r.statistic] += abs(v - t) > a
    n = REPEATS * len(keys)
    for label, m in misses.items():
        assert m <= _allowed_misses(n, ALPHA), (label, m, n)


def test_substitute_mean_within_accuracy(pums: Path) -> None:
    df = pd.read_csv(pums / "PUMS_pid.csv")
    truth = df.age.clip(0, 100).mean()
    table = PrivateTable(pums / "PUMS_pid.csv", max_rows=1000, total_epsilon=1e9,
                         rng=np.random.default_rng(7))  # fmt: skip
    misses, n = 0, 120
    for _ in range(n):
        r = table.mean("age", 0, 100, 0.1, method="substitute", alpha=ALPHA)
        assert "substitute" in r.relation
        misses += abs(r.value - truth) > r.accuracy[0]
    assert misses <= _allowed_misses(n, ALPHA)
