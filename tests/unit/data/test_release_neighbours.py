"""Neighbours at the release level (DESIGN §8.1, §8.3–8.4; docs/data.md).

* Brute force: on small random tables with privacy units, for every unit, the table without it
  is a neighbour; every part of every statistic (count, sum, mean, variance parts) must move each
  cell by at most its stated per-cell sensitivity, all cells together by at most its L1
  sensitivity, and at most the stated number of cells — under k, L0 and L∞ bounds.
* Awkward rows: D and D + one awkward row (null key, undeclared key, text in a numeric column, an
  empty cell, NaN, ±inf, a huge value, a null unit, a duplicate unit) released with the same seed
  give the same messages and structure, and pre-noise aggregates within Δ.
* Sentinels: a unique string planted in a value, key, unit cell never appears in any output,
  error or ledger row.
"""

from __future__ import annotations

import importlib.util
import json
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from tests.unit.data._engines import oracle_engine

from snapdp.data import Column, ContributionBounds, Ledger, PrivateTable, Query, Schema
from snapdp.data.engines.base import AggregatePlan, Aggregates
from snapdp.data.statistics import compile_query, exact_inputs

QUERIES = [
    Query("count"),
    Query("count", by=("g",)),
    Query("count", by=("g", "h")),
    Query("sum", "v", by=("g",)),
    Query("mean", "v", by=("h",)),
    Query("variance", "v", by=("g",)),
    Query("std", "w"),
]
if (
    importlib.util.find_spec("snapdp.data.statistics.math.quantile_tree") is not None
):  # the stats module is merged
    QUERIES.append(
        Query(
            "quantiles",
            "v",
            by=("h",),
            quantiles=(Fraction(1, 2),),
            resolution=Fraction(1, 2),
            method="tree",
        )  # the tree's histogram parts (the exponential losses are checked in
        # tests/unit/data/test_exponential_neighbours.py)
    )


def _schema(bounds: ContributionBounds) -> Schema:
    return Schema(
        (
            Column("g", "integer", keys=(0, 1, 2, 3)),
            Column("h", "text", keys=("x", "y")),
            Column("v", "decimal", Fraction(-3, 2), 4),
            Column("w", "integer", 0, 10),
        ),
        privacy_unit="pid",
        bounds=bounds,
    )


def _table(rng: np.random.Generator, units: int) -> list[dict[str, Any]]:
    rows = []
    for u in range(units):
        for _ in range(int(rng.integers(1, 6))):
            rows.append(
                {
                    "pid": str(u),
                    "g": str(int(rng.integers(0, 5))),  # 4 is not a declared key
                    "h": "xyz"[int(rng.integers(0, 3))],
                    "v": "" if rng.random() < 0.1 else f"{rng.uniform(-3, 6):.3f}",
                    "w": str(int(rng.integers(-2, 13))),
                }
            )
    return rows


def _inputs(schema: Schema, rows: list[dict[str, Any]], key: str) -> list[dict[str, list[Any]]]:
    engine = oracle_engine(rows)
    out = []
    for q in QUERIES:
        c = compile_query(q, schema, Fraction(1))
        plan = AggregatePlan(
            c.engine_groupings,
            () if c.value is None else (c.value,),
            Column("pid", "text"),
            "drop",
            schema.bounds,
            key,
        )
        out.append(exact_inputs(c, engine.aggregate(plan), None if c.value is None else 0))
    return out


BOUNDS = [
    ContributionBounds(max_rows_per_unit=3),
    ContributionBounds(max_groups_per_unit=2, max_rows_per_group=1),
    ContributionBounds(max_rows_per_unit=4, max_groups_per_unit=2, max_rows_per_group=2),
    ContributionBounds(max_rows_per_group=2),
]


@pytest.mark.parametrize("bounds", BOUNDS, ids=str)
def test_brute_force_sensitivity_of_every_part(bounds: ContributionBounds) -> None:
    rng = np.random.default_rng(11)
    schema = _schema(bounds)
    compiled = [compile_query(q, schema, Fraction(1)) for q in QUERIES]
    for trial in range(3):
        rows = _table(rng, 12)
        key = f"{trial:032x}"
        full = _inputs(schema, rows, key)
        for unit in {r["pid"] for r in rows}:
            without = _inputs(schema, [r for r in rows if r["pid"] != unit], key)
            for c, a, b in zip(compiled, full, without, strict=True):
                for part in c.parts:
                    diffs = [abs(x - y) for x, y in zip(a[part.name], b[part.name], strict=True)]
                    assert max(diffs) <= part.per_cell, (c.query.label, part.name)
                    assert sum(diffs) <= part.l1, (c.query.label, part.name)
                    touched = c.reach.cells if part.cells is None else part.cells
                    assert sum(d != 0 for d in diffs) <= touched, c.query.label


AWKWARD: dict[str, dict[str, Any]] = {
    "null key": {"pid": "900", "g": None, "h": "x", "v": "1", "w": "1"},
    "undeclared numeric key": {"pid": "900", "g": "2.5", "h": "x", "v": "1", "w": "1"},
    "text in a numeric column": {"pid": "900", "g": "1", "h": "x", "v": "Alice", "w": "x"},
    "empty cells": {"pid": "900", "g": "", "h": "", "v": "", "w": ""},
    "NaN": {"pid": "900", "g": "1", "h": "y", "v": float("nan"), "w": float("nan")},
    "+inf": {"pid": "900", "g": "1", "h": "y", "v": float("inf"), "w": "1"},
    "-inf": {"pid": "900", "g": "1", "h": "y", "v": float("-inf"), "w": "1"},
    "huge value": {"pid": "900", "g": "1", "h": "y", "v": "1e308", "w": "99999999999999999999"},
    "null unit": {"pid": None, "g": "1", "h": "y", "v": "1", "w": "1"},
    "duplicate unit": {"pid": "0", "g": "3", "h": "y", "v": "4", "w": "10"},
}


class _Recorder:
    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.inner = oracle_engine(rows)
        self.aggregates: list[Aggregates] = []

    def column_names(self) -> list[str]:
        return list(self.inner.column_names())

    def describe(self) -> str:
        return "table"

    def aggregate(self, plan: AggregatePlan) -> Aggregates:
        out: Aggregates = self.inner.aggregate(plan)
        self.aggregates.append(out)
        return out


def _release(rows: list[dict[str, Any]], schema: Schema) -> tuple[Any, ...]:
    engine = _Recorder(rows)
    book = Ledger(None, 10)
    table = PrivateTable(schema=schema, engine=engine, ledger=book, rng=np.random.default_rng(5))
    results = table.release(QUERIES, 2)
    return results, engine.aggregates, book.entries()


@pytest.mark.parametrize("name", list(AWKWARD))
def test_an_awkward_row_changes_nothing_but_the_noise(name: str) -> None:
    schema = _schema(ContributionBounds(max_rows_per_unit=1))
    rows = _table(np.random.default_rng(3), 20)
    r1, agg1, led1 = _release(rows, schema)
    r2, agg2, led2 = _release([*rows, AWKWARD[name]], schema)
    for a, b in zip(r1, r2, strict=True):
        assert (a.key_columns, a.epsilon, a.delta, a.notes, a.confidence) == (
            b.key_columns,
            b.epsilon,
            b.delta,
            b.notes,
            b.confidence,
        )
        assert [x.keys for x in a.rows] == [x.keys for x in b.rows]
        assert a.mechanisms == b.mechanisms
    assert [(e.what, e.query) for e in led1] == [(e.what, e.query) for e in led2]
    compiled = [compile_query(q, schema, Fraction(2, 7)) for q in QUERIES]
    # one engine call per distinct grouping, in first-use order
    groupings = list(dict.fromkeys(c.engine_groupings for c in compiled))
    for c in compiled:
        i = groupings.index(c.engine_groupings)
        members = [x for x in compiled if x.engine_groupings == c.engine_groupings]
        values = list(dict.fromkeys(x.value for x in members if x.value is not None))
        j = None if c.value is None else values.index(c.value)
        a, b = exact_inputs(c, agg1[i], j), exact_inputs(c, agg2[i], j)
        for part in c.parts:
            diffs = [abs(x - y) for x, y in zip(a[part.name], b[part.name], strict=True)]
            assert max(diffs) <= part.per_cell, (name, c.query.label, part.name)
            assert sum(diffs) <= 2 * part.l1, (name, c.query.label, part.name)


SENTINEL = "Zq7SENTINELx9"


def test_sentinels_never_appear_in_outputs_errors_or_the_ledger() -> None:
    schema = _schema(ContributionBounds(max_rows_per_unit=1))
    rows = _table(np.random.default_rng(4), 10)
    rows += [
        {"pid": SENTINEL, "g": "1", "h": "x", "v": "1", "w": "1"},
        {"pid": "5", "g": SENTINEL, "h": SENTINEL, "v": SENTINEL, "w": SENTINEL},
    ]
    results, _, entries = _release(rows, schema)
    text = json.dumps([r.as_dict() for r in results], default=str)
    text += json.dumps([(e.what, e.dataset, e.query) for e in entries], default=str)
    assert SENTINEL not in text
