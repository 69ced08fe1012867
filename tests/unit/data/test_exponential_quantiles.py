"""Quantiles by the exact exponential mechanism through the release path (docs/data.md,
"Quantiles by the exponential mechanism"): neighbours by brute force on the losses, an awkward
row changes nothing but the released values, the rank ± holds in seeded releases, and the
declaration routes (API, TOML) choose it."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.unit.data._engines import oracle_engine
from tests.unit.data.test_release_neighbours import AWKWARD, _Recorder, _schema, _table

from snapdp.data import Column, ContributionBounds, Ledger, Plan, PrivateTable, Query, Schema
from snapdp.data.engines.base import AggregatePlan
from snapdp.data.statistics import compile_query, exact_inputs
from snapdp.data.statistics.kinds import quantiles as quantiles_kind
from snapdp.data.statistics.math import exponential_grid as expq
from snapdp.errors import ParameterError

QUERY = Query(
    "quantiles",
    "v",
    by=("h",),
    quantiles=(Fraction(1, 4), Fraction(1, 2)),
    resolution=Fraction(1, 2),
    method="exponential",
)


def _losses(schema: Schema, rows: list[dict[str, Any]], key: str) -> dict[str, list[list[int]]]:
    """Per part, per group: the losses the mechanism draws from."""
    c = compile_query(QUERY, schema, Fraction(1))
    plan = AggregatePlan(c.engine_groupings, (), Column("pid", "text"), "drop", schema.bounds, key)
    exact = exact_inputs(c, oracle_engine(rows).aggregate(plan), None)
    m = c.grid.cells
    out = {}
    for part in c.parts:
        counts = [int(x) for x in exact[part.name]]
        assert part.probability is not None
        out[part.name] = [
            expq.losses(counts[i : i + m], part.probability, part.offset, part.middle)
            for i in range(0, len(counts), m)
        ]
    return out


@pytest.mark.parametrize(
    "bounds",
    [
        ContributionBounds(max_rows_per_unit=3),
        ContributionBounds(max_groups_per_unit=2, max_rows_per_group=1),
        ContributionBounds(max_rows_per_unit=4, max_groups_per_unit=2, max_rows_per_group=2),
    ],
    ids=str,
)
def test_brute_force_loss_sensitivity_over_groups(bounds: ContributionBounds) -> None:
    """Removing any unit moves each group's losses by at most d_g (its largest change), with
    Σ_g d_g <= the part's sensitivity: what the per-group full-ε claim needs."""
    rng = np.random.default_rng(12)
    schema = _schema(bounds)
    c = compile_query(QUERY, schema, Fraction(1))
    sens = {p.name: p.l1 for p in c.parts}
    worst = 0
    for trial in range(3):
        rows = _table(rng, 12)
        key = f"{trial:032x}"
        full = _losses(schema, rows, key)
        for unit in {r["pid"] for r in rows}:
            without = _losses(schema, [r for r in rows if r["pid"] != unit], key)
            for name, groups in full.items():
                moved = sum(
                    max(abs(x - y) for x, y in zip(a, b, strict=True))
                    for a, b in zip(groups, without[name], strict=True)
                )
                assert moved <= sens[name], (name, unit)
                worst = max(worst, moved)
    assert worst > 0


def _release(rows: list[dict[str, Any]], schema: Schema) -> tuple[Any, ...]:
    engine = _Recorder(rows)
    book = Ledger(None, 10)
    table = PrivateTable(schema=schema, engine=engine, ledger=book, rng=np.random.default_rng(5))
    results = table.release([QUERY, Query("count")], 2)
    return results, book.entries()


@pytest.mark.parametrize("name", ["null key", "text in a numeric column", "huge value", "-inf"])
def test_an_awkward_row_changes_nothing_but_the_values(name: str) -> None:
    schema = _schema(ContributionBounds(max_rows_per_unit=1))
    rows = _table(np.random.default_rng(3), 20)
    r1, led1 = _release(rows, schema)
    r2, led2 = _release([*rows, AWKWARD[name]], schema)
    for a, b in zip(r1, r2, strict=True):
        assert (a.key_columns, a.epsilon, a.delta, a.notes, a.mechanisms) == (
            b.key_columns,
            b.epsilon,
            b.delta,
            b.notes,
            b.mechanisms,
        )
        # the value ± is read from the released draws (post-processing): it moves with them
        assert [(x.keys, x.quantile, x.rank_accuracy) for x in a.rows] == [
            (x.keys, x.quantile, x.rank_accuracy) for x in b.rows
        ]
    assert r1[0].delta == 0.0  # exact: pure ε
    assert [(e.what, e.query, e.epsilon) for e in led1] == [
        (e.what, e.query, e.epsilon) for e in led2
    ]


def test_seeded_releases_hold_the_rank_bound() -> None:
    """200 seeded releases of a median and a 0.9-quantile of 400 skewed integers: the released
    value's true rank distance exceeds the stated rank ± at most as often as the binomial
    threshold at 10^-6 allows for α = 0.05 (19+ misses of 200 has probability < 10^-6 ... the
    bound is conservative, so in practice none)."""
    rng = np.random.default_rng(8)
    values = np.minimum(rng.exponential(12, size=400).astype(int), 60)
    rows = [{"x": str(v)} for v in values]
    schema = Schema((Column("x", "integer", Fraction(0), Fraction(60)),))
    query = Query(
        "quantiles", "x", quantiles=(Fraction(1, 2), Fraction(9, 10)), method="exponential"
    )
    engine, rng = oracle_engine(rows), np.random.default_rng(9)
    misses, total, exact_hits, value_misses = 0, 0, 0, 0
    for _ in range(200):
        # a table per run on one engine and one generator: the values of one table releasing
        # 200 times, without its ledger (read and checked whole at every release) growing
        table = PrivateTable(schema=schema, engine=engine, ledger=Ledger(None, 10**6), rng=rng)
        result = table.release([query], Fraction(1, 2))[0]
        for row in result.rows:
            assert row.rank_accuracy is not None and row.quantile is not None
            v, target = row.value, float(row.quantile) * len(values)
            below, upto = int(np.sum(values < v)), int(np.sum(values <= v))
            dist = max(below - target, target - upto, 0.0)
            misses += dist > row.rank_accuracy
            exact_hits += dist == 0
            truth = float(np.quantile(values, float(row.quantile), method="inverted_cdf"))
            value_misses += abs(v - truth) > row.accuracy
            total += 1
    assert misses <= 2  # P(Binomial(400, 0.05) <= 2) < 1e-6: the test could fail
    assert misses == 0 or misses <= 0.05 * total
    assert value_misses <= 2  # the value ± from the brackets holds as often (same threshold)
    assert exact_hits > total // 8  # and it is accurate: the true quantile often exactly


def test_the_accuracy_is_stated_before_spending_and_names_the_method() -> None:
    schema = Schema((Column("x", "integer", Fraction(0), Fraction(100)),))
    table = PrivateTable(schema=schema, engine=oracle_engine([{"x": "1"}]), ledger=Ledger(None, 10))
    exp = Query("quantiles", "x", quantiles=(Fraction(1, 2),), method="exponential")
    tree = Query("quantiles", "x", quantiles=(Fraction(1, 2),), method="tree")
    a_exp, a_tree = table.accuracy([exp, tree], 1)
    assert a_exp.rank is not None and a_tree.rank is not None
    assert a_exp.rank < a_tree.rank / 2  # the point of the method, for one quantile
    assert "exponential" in a_exp.describe() or "for every n" in a_exp.describe()
    assert any("exponential mechanism" in n for n in a_exp.notes)
    assert table.ledger.entries() == []


def test_method_is_checked_by_name() -> None:
    with pytest.raises(ParameterError) as info:
        Query("quantiles", "x", quantiles=(Fraction(1, 2),), method="substitute")
    assert info.value.parameter == "method"
    with pytest.raises(ParameterError) as info:
        Query("mean", "x", method="exponential")
    assert info.value.parameter == "method"


_PLAN = """
[data]
source = "x.csv"
total_epsilon = 5

[columns]
age = { type = "integer", lower = 0, upper = 100 }

[[query]]
statistic = "quantiles"
column = "age"
quantiles = [0.5]
method = "exponential"
"""


def test_a_plan_chooses_the_method_and_refuses_a_value_target(tmp_path: Path) -> None:
    path = tmp_path / "plan.toml"
    path.write_text(_PLAN + "epsilon = 0.5\n", encoding="utf-8")
    plan = Plan.load(path)
    assert plan.queries[0].query.method == "exponential"
    assert "exponential" in plan.queries[0].query.label
    path.write_text(_PLAN + "accuracy = 3\ngroup_size = 1000\n", encoding="utf-8")
    with pytest.raises(ParameterError) as info:
        Plan.load(path)
    assert info.value.parameter == "accuracy"


def test_the_default_method_is_the_one_with_the_smaller_planned_pm() -> None:
    """Issue 33: a median by default is released by the exponential mechanism (its planned ±,
    the half-width compared before spending, is smaller than the tree's at this ε), with a note
    naming it and a value ± well inside the range; `method = "tree"` still wins; a CDF of nine
    probabilities keeps the tree."""
    rng = np.random.default_rng(4)
    rows = [{"x": str(v)} for v in rng.integers(20, 70, size=1000)]
    schema = Schema((Column("x", "integer", Fraction(0), Fraction(100)),))
    table = PrivateTable(
        schema=schema, engine=oracle_engine(rows), ledger=Ledger(None, 100), rng=rng
    )
    median = Query("quantiles", "x", quantiles=(Fraction(1, 2),))
    deciles = Query("quantiles", "x", quantiles=tuple(Fraction(i, 10) for i in range(1, 10)))
    tree = Query("quantiles", "x", quantiles=(Fraction(1, 2),), method="tree")
    median_expo = Query("quantiles", "x", quantiles=(Fraction(1, 2),), method="exponential")
    auto, nine, forced = table.release([median, deciles, tree], 1)
    assert any("exponential mechanism, chosen" in n for n in auto.notes)
    assert any("the tree, chosen" in n for n in nine.notes)
    assert not any("chosen" in n for n in forced.notes)
    assert all(r.interval is not None and r.accuracy < 10 for r in auto.rows)
    # The choice is made before spending, from public parameters only, on the half-width in
    # ranks of the interval each method reads its value ± from (the tree's rₚ + c at every edge,
    # the exponential mechanism's K + its brackets' rank ±): the exponential mechanism's is the
    # smaller here, and the chosen one is always the smaller of the two. The tree reads its
    # interval from the released CDF (two stages, stop-loss tails) and states its rank ± as
    # min((1 + p)·c, rₚ), so after the release its value ± and rank ± can be the smaller ones
    # on a dense table like this one: docs/utility.md, "The default: whichever states the
    # smaller ±".
    each = Fraction(1, 3)  # the release's ε, split evenly over its three queries
    expo_half = quantiles_kind._exponential_half(compile_query(median_expo, schema, each))
    tree_half = quantiles_kind._tree_half(compile_query(tree, schema, each))
    assert expo_half < tree_half
    lo, hi = auto.rows[0].interval
    assert lo <= auto.rows[0].value <= hi and (hi - lo) / 2 <= auto.rows[0].accuracy


def test_a_grid_past_the_candidate_cap_is_refused_before_any_edge_is_built() -> None:
    """Bounds near 2^62 with one integer per cell: m is counted and refused first (the default
    method compiles the exponential grid for every quantile query, so this must be cheap)."""
    from snapdp.data.statistics.math.exponential_grid import quantile_grid

    with pytest.raises(ParameterError, match="resolution"):
        quantile_grid(Fraction(0), Fraction(2**62), True, None)
    with pytest.raises(ParameterError, match="resolution"):
        quantile_grid(Fraction(0), Fraction(1), False, Fraction(1, 2**62))
