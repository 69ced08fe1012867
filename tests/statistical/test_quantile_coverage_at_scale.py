"""Quantiles lie within their stated 95% ± of a p-quantile of the data in >= 95% of repeated
releases, on a synthetic table with groups of 100, 1,000 and 10,000 rows, for the median and the
quartiles, by the tree and by the exponential mechanism, on an integer and a decimal column
(docs/utility.md, "Quantiles: the tree or the exponential mechanism").

The claim checked is the value interval's: some p-quantile t of the group's values (a value
with #(x < t) <= p·n <= #(x <= t)) lies within ± of the released value, and in the released
interval. The p-quantiles of n sorted values x₍₁₎ <= … <= x₍ₙ₎ are the closed interval
[x₍⌈pn⌉₎, x₍⌊pn⌋+1₎], computed here with numpy, never by the engine.

Fixed seeds; the misses per (method, column, group, probability) are compared with the
(1 − 1e-6) quantile of Binomial(runs, 0.05), so a correct ± fails with probability < 1e-6. The
engine's aggregates are computed once and only the noise is drawn again. :func:`ratios` gives
the stated ± over the observed 95th percentile of the distance (docs/utility.md quotes it).
"""

from __future__ import annotations

import csv
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binom
from tests.statistical.test_release_coverage import _Cached
from tests.unit.data._engines import local_engine

from snapdp.data import Column, PrivateTable, Query, Schema

CONFIDENCE = 0.95
RUNS = 200
SIZES = (100, 1000, 10_000)
PROBABILITIES = ((Fraction(1, 2),), (Fraction(1, 4), Fraction(1, 2), Fraction(3, 4)))
METHODS = ("tree", "exponential")
COLUMNS = ("v", "x")  # integer [0, 100]; decimal [0, 100] at resolution 1/2

Key = tuple[str, str, int, int, Fraction]  # method, column, #probabilities, group, p


def _table(path: Path) -> dict[int, np.ndarray]:
    """Three groups: values around 30, spread evenly, piled towards the upper bound."""
    rng = np.random.default_rng(2034)
    groups = {
        0: np.clip(rng.normal(30.0, 12.0, SIZES[0]), 0, 100),
        1: rng.uniform(0, 100, SIZES[1]),
        2: np.maximum(100 - rng.exponential(20.0, SIZES[2]), 0),
    }
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["g", "v", "x"])
        for g, values in groups.items():
            out.writerows([g, round(v), repr(float(v))] for v in values)
    return groups


def quantile_set(values: np.ndarray, p: Fraction) -> tuple[float, float]:
    """[x₍⌈pn⌉₎, x₍⌊pn⌋+1₎]: every t with #(x < t) <= p·n <= #(x <= t) (0 < p < 1)."""
    x = np.sort(values)
    n = len(x)
    return float(x[math.ceil(p * n) - 1]), float(x[math.floor(p * n)])


def _distance(value: float, interval: tuple[float, float]) -> float:
    return max(0.0, interval[0] - value, value - interval[1])


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> dict[Key, np.ndarray]:
    """Per key: rows of (distance to the p-quantiles, stated ±, 1 if the interval misses)."""
    return _releases(tmp_path_factory.mktemp("quantile_scale") / "groups.csv", RUNS)


def _releases(path: Path, runs: int) -> dict[Key, np.ndarray]:
    groups = _table(path)
    schema = Schema(
        (
            Column("g", "integer", keys=(0, 1, 2)),
            Column("v", "integer", 0, 100),
            Column("x", "decimal", 0, 100),
        )
    )
    truth = {
        (c, g, p): quantile_set(np.round(x) if c == "v" else x, p)
        for c in COLUMNS
        for g, x in groups.items()
        for probs in PROBABILITIES
        for p in probs
    }
    queries = [
        Query("quantiles", c, ("g",), quantiles=probs, method=m,  # type: ignore[arg-type]
              resolution=Fraction(1, 2) if c == "x" else None)
        for m in METHODS for c in COLUMNS for probs in PROBABILITIES
    ]  # fmt: skip
    table = PrivateTable(
        schema=schema, engine=_Cached(local_engine(path)), total_epsilon=10**9,
        rng=np.random.default_rng(3306),
    )  # fmt: skip
    out: dict[Key, list[tuple[float, float, float]]] = {}
    for _ in range(runs):
        results = table.release(queries, [Fraction(1)] * len(queries), confidence=CONFIDENCE)
        for q, r in zip(queries, results, strict=True):
            for row in r.rows:
                g = int(row.keys[0])  # type: ignore[arg-type]
                assert row.quantile is not None and row.interval is not None
                p = Fraction(row.quantile)
                qset = truth[(q.column, g, p)]  # type: ignore[index]
                lo, hi = (float(e) for e in row.interval)
                missed = float(hi < qset[0] or lo > qset[1])
                key = (q.method, str(q.column), len(q.quantiles), g, p)
                out.setdefault(key, []).append(
                    (_distance(float(row.value), qset), float(row.accuracy), missed)
                )
    return {k: np.array(v) for k, v in out.items()}


def ratios(releases: dict[Key, np.ndarray]) -> dict[Key, float]:
    """The median stated ± over the observed 95th percentile of the distance (inf when that is
    0: then any nonzero statement exceeds it)."""
    out = {}
    for key, e in releases.items():
        observed = float(np.quantile(e[:, 0], CONFIDENCE))
        stated = float(np.median(e[:, 1]))
        out[key] = stated / observed if observed > 0 else math.inf
    return out


def test_every_configuration_was_released(releases: dict[Key, np.ndarray]) -> None:
    rows = sum(len(probs) for probs in PROBABILITIES) * len(METHODS) * len(COLUMNS) * len(SIZES)
    assert len(releases) == rows
    assert all(len(e) == RUNS for e in releases.values())


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("column", COLUMNS)
def test_a_p_quantile_lies_within_the_stated_95_percent(
    releases: dict[Key, np.ndarray], method: str, column: str
) -> None:
    allowed = int(binom.ppf(1 - 1e-6, RUNS, 1 - CONFIDENCE))
    for key, e in releases.items():
        if key[:2] != (method, column):
            continue
        assert int((e[:, 0] > e[:, 1]).sum()) <= allowed, key
        assert int(e[:, 2].sum()) <= allowed, key


def test_the_quantile_set_oracle() -> None:
    x = np.array([1.0, 2.0, 3.0, 4.0])
    assert quantile_set(x, Fraction(1, 2)) == (2.0, 3.0)  # 2 <= n/2 = 2 at every t in [2, 3]
    assert quantile_set(x, Fraction(1, 4)) == (1.0, 2.0)
    assert quantile_set(np.array([5.0, 1.0, 3.0]), Fraction(1, 2)) == (3.0, 3.0)
    assert quantile_set(x, Fraction(3, 4)) == (3.0, 4.0)
