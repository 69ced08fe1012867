"""Released statistics lie within their stated ± in >= (1 − α) of repeated releases (PUMS).

Fixed seeds; the number of misses per statistic is compared with the (1 − 1e-6) quantile of
Binomial(n, α), so a correct implementation fails with probability < 1e-6 (and with these seeds,
never). α is large (0.2) so that a too-small ± shows up as too many misses. The truth is computed
independently with pandas (clamp, group, mean/variance), never by the engine. PUMS_pid has one
row per unit, so contribution bounding keeps every row and the engine's aggregates are the same
for every hash key: they are computed once and the noise is drawn many times.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import msgspec.structs
import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom
from tests.unit.data._engines import local_engine

from snapdp.data import Column, ContributionBounds, PrivateTable, Query, Schema
from snapdp.data.engines.base import AggregatePlan, Aggregates

CONFIDENCE = 0.8
REPEATS = 120


class _Cached:
    """The engine's aggregates, computed once per plan (any hash key gives the same here)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.cache: dict[AggregatePlan, Aggregates] = {}

    def column_names(self) -> list[str]:
        return list(self.inner.column_names())

    def describe(self) -> str:
        return "PUMS_pid"

    def aggregate(self, plan: AggregatePlan) -> Aggregates:
        key = msgspec.structs.replace(plan, hash_key="0" * 32)
        if key not in self.cache:
            self.cache[key] = self.inner.aggregate(key)
        return self.cache[key]


def _allowed_misses(n: int) -> int:
    return int(binom.ppf(1 - 1e-6, n, 1 - CONFIDENCE))


def test_every_statistic_covers_its_truth(pums: Path) -> None:
    path = pums / "PUMS_pid.csv"
    df = pd.read_csv(path)
    schema = Schema(
        (
            Column("age", "integer", 18, 90),
            Column("income", "decimal", 0, 200_000),
            Column("sex", "integer", keys=(0, 1)),
            Column("married", "integer", keys=(0, 1)),
            Column("educ", "integer", bins=(1, 9, 13, 17)),
        ),
        privacy_unit="pid",
        bounds=ContributionBounds(max_rows_per_unit=1),
    )
    df["age_c"] = df.age.clip(18, 90)
    df["income_c"] = df.income.clip(0, 200_000)
    df["educ_bin"] = pd.cut(df.educ, [1, 9, 13, 17], right=False, labels=False)
    cross = df.groupby(["sex", "married"]).size()
    by_sex = df.groupby("sex")
    by_educ = df.groupby("educ_bin")
    truths: dict[str, list[float]] = {
        "count by sex, married": [float(cross.get((s, m), 0)) for s in (0, 1) for m in (0, 1)],
        "sum(income) by sex": [float(by_sex.income_c.sum()[s]) for s in (0, 1)],
        "mean(age) by sex": [float(by_sex.age_c.mean()[s]) for s in (0, 1)],
        "variance(income)": [float(df.income_c.var(ddof=0))],
        "std(age) by educ": [float(by_educ.age_c.std(ddof=0)[b]) for b in (0, 1, 2)],
        "variance(age) by sex": [float(by_sex.age_c.var(ddof=0)[s]) for s in (0, 1)],
    }
    queries = [
        Query("count", by=("sex", "married")),
        Query("sum", "income", ("sex",)),
        Query("mean", "age", ("sex",)),
        Query("variance", "income"),
        Query("std", "age", ("educ",)),
        Query("variance", "age", ("sex",)),
    ]
    engine, rng = _Cached(local_engine(path)), np.random.default_rng(2026)
    misses = dict.fromkeys(truths, 0)
    for _ in range(REPEATS):
        # a table per run on one engine and one generator: the values of one table releasing
        # REPEATS times, without its ledger (read and checked whole at every release) growing
        table = PrivateTable(schema=schema, engine=engine, total_epsilon=10**9, rng=rng)
        for r in table.release(queries, Fraction(6, 5), confidence=CONFIDENCE):
            for row, truth in zip(r.rows, truths[r.label], strict=True):
                misses[r.label] += abs(row.value - truth) > row.accuracy
    for label, m in misses.items():
        n = REPEATS * len(truths[label])
        assert m <= _allowed_misses(n), (label, m, n)


def test_quantiles_cover_their_rank_accuracy(pums: Path) -> None:
    """Each released p-quantile lies within one leaf of a value whose true rank is within the
    stated rank ± of p·n (checked with the true counts below/at the window's ends)."""
    pytest.importorskip("snapdp.data.statistics.math.quantile_tree")
    path = pums / "PUMS_pid.csv"
    df = pd.read_csv(path)
    schema = Schema(
        (Column("age", "integer", 0, 100), Column("income", "decimal", 0, 200_000),
         Column("sex", "integer", keys=(0, 1))),
        privacy_unit="pid",
        bounds=ContributionBounds(max_rows_per_unit=1),
    )  # fmt: skip
    probs = (Fraction(1, 10), Fraction(1, 2), Fraction(9, 10))
    queries = [
        Query("quantiles", "age", quantiles=probs),
        Query("quantiles", "income", ("sex",), quantiles=probs),
    ]
    table = PrivateTable(
        schema=schema,
        engine=_Cached(local_engine(path)),
        total_epsilon=10**9,
        rng=np.random.default_rng(7),
    )
    values = {
        ((), "age"): np.sort(df.age.clip(0, 100).to_numpy()),
        ((0,), "income"): np.sort(df.income[df.sex == 0].clip(0, 200_000).to_numpy()),
        ((1,), "income"): np.sort(df.income[df.sex == 1].clip(0, 200_000).to_numpy()),
    }
    statements = table.accuracy(queries, 1, confidence=CONFIDENCE)
    leaf = {s.query.column: s.leaf_width for s in statements}
    misses = trials = 0
    for _ in range(40):
        for r in table.release(queries, 1, confidence=CONFIDENCE):
            assert r.query.column is not None
            for row in r.rows:
                xs = values[(row.keys, r.query.column)]
                target = float(row.quantile or 0) * len(xs)
                w = leaf[r.query.column] or 0.0
                at_most = np.searchsorted(xs, row.value + w, side="right")
                below = np.searchsorted(xs, row.value - w, side="left")
                assert row.rank_accuracy is not None
                misses += at_most < target - row.rank_accuracy
                misses += below > target + row.rank_accuracy
                trials += 1
    assert misses <= _allowed_misses(trials), (misses, trials)
