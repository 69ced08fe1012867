"""Several grouping columns from the data in one query (docs/sql.md, "Groups from the data"):
the cells are the observed tuples, never the product of each column's observed keys."""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import pandas as pd
import pytest
from tests.unit.data._engines import local_engine, oracle_engine

from snapdp.data.engines.base import AggregatePlan, Aggregates
from snapdp.data.engines.observed import observed_keys
from snapdp.data.model.query import Query
from snapdp.data.model.schema import Column, Schema
from snapdp.data.release.table import PrivateTable

SCHEMA = Schema(
    (
        Column("sex", "integer", keys=(1, 2)),
        Column("city", "text"),
        Column("n", "integer", 0, 10),
        Column("day", "date"),
    )
)


def _rows(extra: list[dict[str, Any]] = ()) -> list[dict[str, Any]]:  # type: ignore[assignment]
    rows = [
        {"sex": 1 + i % 2, "city": "ab"[i % 2], "n": i % 3, "day": f"2024-01-0{1 + i % 2}"}
        for i in range(300)
    ]
    return [*rows, *extra]


def _release(engine: Any, queries: list[Query], seed: int, delta: str = "1e-6") -> list[Any]:
    t = PrivateTable(
        schema=SCHEMA, engine=engine, total_epsilon=100, rng=np.random.default_rng(seed)
    )
    return list(t.release(queries, 1, delta=delta))


def _shown(results: list[Any]) -> list[list[tuple[Any, ...]]]:
    return [[(row.keys, row.value) for row in r.rows] for r in results]


QUERIES = [
    Query("count", by=("city", "n")),
    Query("mean", "n", by=("sex", "city", "day")),
]


def test_duckdb_and_the_reference_engine_agree_for_one_seed() -> None:
    """Two data-keyed columns, and one declared with two data-keyed: the same shown tuples and
    values on DuckDB and on the reference engine for one seed (the keyed-hash order of the whole
    tuple draws the noise in the same order)."""
    rows = _rows()
    for seed in range(3):
        duck = _shown(_release(local_engine(pd.DataFrame(rows)), QUERIES, seed))
        ref = _shown(_release(oracle_engine(rows), QUERIES, seed))
        assert duck == ref
        assert {k for k, _ in duck[0]} == {(c, n) for c in "ab" for n in range(3)}
        # only the observed tuples: sex 1 is always city a on day 1
        assert {k for k, _ in duck[1]} <= {
            (1, "a", dt.date(2024, 1, 1)),
            (2, "b", dt.date(2024, 1, 2)),
        }


class _Counting:
    """An engine that records the cells of every plan it aggregates."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.cells: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def observed_keys(self, *args: Any) -> list[tuple[Any, ...]]:
        return observed_keys(self.inner, *args)

    def aggregate(self, plan: AggregatePlan) -> Aggregates:
        self.cells.append(plan.n_cells)
        out: Aggregates = self.inner.aggregate(plan)
        return out


@pytest.mark.parametrize("which", ["duckdb", "reference"])
def test_the_domain_is_the_observed_tuples_never_the_product(which: str) -> None:
    """300 rows, 300 distinct values in each of two columns: at most 300 cells are aggregated
    and drawn (the product would be 90,000)."""
    schema = Schema((Column("a", "text"), Column("b", "integer")))
    rows = [{"a": f"x{i}", "b": 7 * i} for i in range(300)]
    inner = local_engine(pd.DataFrame(rows)) if which == "duckdb" else oracle_engine(rows)
    engine = _Counting(inner)
    t = PrivateTable(schema=schema, engine=engine, total_epsilon=10, rng=np.random.default_rng(1))
    (r,) = t.release([Query("count", by=("a", "b"))], 1, delta="0.4")
    assert engine.cells and max(engine.cells) <= 300
    assert {row.keys for row in r.rows} <= {(f"x{i}", 7 * i) for i in range(300)}


def _shape(r: Any) -> dict[str, Any]:
    d = dict(r.as_dict())
    for noisy in ("keys", "value", "accuracy"):
        d.pop(noisy, None)
    return d


def test_one_person_with_a_new_tuple_changes_only_noise_and_that_tuple() -> None:
    """D′ adds one person whose tuple is new although each of its values is not ("a", 2 is
    seen, day 2 is seen; "a" with day 2 is not): the results differ only in noisy values and
    in whether that tuple is shown (same notes, mechanisms, ε, δ)."""
    new = {"sex": 1, "city": "a", "n": 2, "day": "2024-01-02"}
    q = [Query("count", by=("city", "day")), Query("mean", "n", by=("sex", "city", "day"))]
    for seed in range(5):
        d = _release(oracle_engine(_rows()), q, seed)
        d2 = _release(oracle_engine(_rows([new])), q, seed)
        assert [_shape(r) for r in d] == [_shape(r) for r in d2]
        for r, r2 in zip(d, d2, strict=True):
            keys = {row.keys for row in r.rows}
            keys2 = {row.keys for row in r2.rows}
            assert keys2 - keys <= {("a", dt.date(2024, 1, 2)), (1, "a", dt.date(2024, 1, 2))}
            assert keys == keys2  # at δ = 1e-6 the one-person tuple is not shown here


def test_a_tuple_absent_from_the_data_is_never_shown() -> None:
    """Each value of each column is frequent, but only two of the four combinations occur: the
    other two are never shown, even at a large δ."""
    schema = Schema((Column("a", "text"), Column("b", "integer")))
    rows = [{"a": "p", "b": 1}] * 60 + [{"a": "q", "b": 2}] * 60
    seen: set[tuple[Any, ...]] = set()
    for seed in range(20):
        t = PrivateTable(
            pd.DataFrame(rows), schema, total_epsilon=100, rng=np.random.default_rng(seed)
        )
        (r,) = t.release([Query("count", by=("a", "b"))], 1, delta="0.4")
        seen |= {row.keys for row in r.rows}
    assert seen == {("p", 1), ("q", 2)}
