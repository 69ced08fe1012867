"""The exact exponential mechanism at the release level (docs/exponential.md; DESIGN §2.7,
§8.1): a release of D and of D plus one row reads exactly as many words of randomness, so the
work and the random bits a release consumes say nothing of the data; their outputs differ only
in the released values."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from tests.unit.data.test_exponential_quantiles import QUERY
from tests.unit.data.test_release_neighbours import AWKWARD, _Recorder, _schema, _table

from snapdp.data import ContributionBounds, Ledger, PrivateTable, Query

EXTRA = {"pid": "901", "g": "1", "h": "x", "v": "3.9", "w": "10"}


def _run(rows: list[dict[str, Any]], queries: list[Query]) -> tuple[Any, ...]:
    schema = _schema(ContributionBounds(max_rows_per_unit=1))
    gen = np.random.default_rng(5)
    table = PrivateTable(schema=schema, engine=_Recorder(rows), ledger=Ledger(None, 10), rng=gen)
    results = table.release(queries, 2)
    # a quantile's ± is read from its released draws (post-processing): it moves with them
    shape = [
        (r.epsilon, r.delta, r.notes, r.mechanisms, [(x.keys, _pm(r.query, x)) for x in r.rows])
        for r in results
    ]
    return gen.bit_generator.state["state"], shape, [[x.value for x in r.rows] for r in results]


def _pm(query: Query, row: Any) -> float | None:
    return None if query.statistic == "quantiles" else float(row.accuracy)


@pytest.mark.parametrize(
    "queries",
    [
        [QUERY, Query("count")],
        [Query("quantiles", "w", quantiles=(Fraction(1, 2),), method="exponential")],
    ],
)
@pytest.mark.parametrize("extra", [EXTRA, AWKWARD["huge value"], AWKWARD["duplicate unit"]])
def test_a_neighbour_reads_the_same_words(queries: list[Query], extra: dict[str, Any]) -> None:
    rows = _table(np.random.default_rng(3), 20)
    state, shape, _ = _run(rows, queries)
    state2, shape2, _ = _run([*rows, extra], queries)
    assert state2 == state  # the same words were read
    assert shape2 == shape


def test_the_values_do_move() -> None:
    """The comparison above is not vacuous: a neighbour with many rows moves some value."""
    rows = _table(np.random.default_rng(3), 20)
    q = [Query("quantiles", "w", quantiles=(Fraction(1, 2),), method="exponential")]
    many = [{**EXTRA, "pid": str(900 + i)} for i in range(40)]
    assert _run(rows, q)[2] != _run([*rows, *many], q)[2]
