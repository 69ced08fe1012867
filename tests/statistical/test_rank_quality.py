"""The contribution-bounding rank orders each unit's rows like a random permutation (issue 25).

Privacy does not depend on it (any rank that looks only at a unit's own rows keeps the bounds;
docs/data.md, "Contribution bounding"), but accuracy does: a rank that favoured some values, or
made neighbouring units choose alike, would bias the bounded statistics. For fixed keys and
units that are consecutive, random, or 2^32 apart, each unit's row of lowest rank among ten rows
(ten values in one cell, or one value in ten cells) must be uniform over the ten, and the choices
of consecutive units independent: chi-square statistics against their (1 − 1e-6) quantiles, so a
random rank fails with probability below 1e-6 per check (and, with these keys, never).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest
from scipy.stats import chi2

from snapdp.data.engines.base import AggregatePlan, ValueColumn, row_rank
from snapdp.data.model.schema import Column, ContributionBounds

KEYS = ("0" * 32, "5bc8fbbc0d3c6b1e9a7f22c4e1d0a9b3", "d76d4330ffeeddccbbaa998877665544")
UNITS: dict[str, Callable[[int], int]] = {
    "consecutive": lambda i: i,
    "random": lambda i: (i * 0x9E3779B97F4A7C15) % (1 << 63),
    "2^32 apart": lambda i: i << 32,
}
N = 6000


def _plan(key: str) -> AggregatePlan:
    g = Column("g", "integer", keys=tuple(range(50)))
    x = Column("x", "integer", lower=0, upper=100000)
    return AggregatePlan(
        (g,), (ValueColumn(x, 0, 0, 100000),), Column("u", "integer"),
        bounds=ContributionBounds(1), hash_key=key,
    )  # fmt: skip


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("units", list(UNITS))
@pytest.mark.parametrize("rows", ["ten values", "ten cells"])
def test_lowest_ranked_row_is_uniform_and_independent_across_units(
    key: str, units: str, rows: str
) -> None:
    plan = _plan(key)

    def kept(u: int) -> int:
        if rows == "ten values":
            return min(range(10), key=lambda q: row_rank(plan, u, 3, [500 + q]))
        return min(range(10), key=lambda c: row_rank(plan, u, 10 + c, [500]))

    choice = [kept(UNITS[units](i)) for i in range(N)]
    counts = Counter(choice)
    marginal = sum((counts[v] - N / 10) ** 2 / (N / 10) for v in range(10))
    assert marginal < chi2.isf(1e-6, 9)
    pairs = Counter(zip(choice[::2], choice[1::2], strict=True))
    m = N // 2
    joint = sum((pairs[(a, b)] - m / 100) ** 2 / (m / 100) for a in range(10) for b in range(10))
    assert joint < chi2.isf(1e-6, 99)
