"""PrivateTable over a declared Schema: the order of a release, the budget, exact ε, accuracy
before spending, the notes, reproducibility with a seeded rng (docs/data.md, "The API")."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from tests.unit.data._engines import oracle_engine

from snapdp.data import (
    Column,
    ContributionBounds,
    Ledger,
    PrivateTable,
    Query,
    Schema,
)
from snapdp.data.engines.base import AggregatePlan, Aggregates
from snapdp.errors import ParameterError, PrivacyBudgetError

SCHEMA = Schema(
    (
        Column("age", "integer", 0, 100),
        Column("sex", "integer", keys=(0, 1)),
        Column("region", "text", keys=("a", "b", "c")),
    ),
    privacy_unit="pid",
    bounds=ContributionBounds(max_rows_per_unit=1),  # one cell per unit: no L1 calibration
)


def _rows(n: int = 600) -> list[dict[str, Any]]:
    return [
        {"pid": str(i // 2), "age": str(20 + i % 50), "sex": str(i % 2), "region": "abc"[i % 3]}
        for i in range(n)
    ]


class _Recording:
    """Wraps an engine: records the plans and aggregates; can refuse to be read at all."""

    def __init__(self, inner: Any = None) -> None:
        self.inner = inner
        self.plans: list[AggregatePlan] = []
        self.aggregates: list[Aggregates] = []

    def column_names(self) -> list[str]:
        if self.inner is None:
            return ["pid", "age", "sex", "region"]
        return list(self.inner.column_names())

    def describe(self) -> str:
        return "recorded"

    def aggregate(self, plan: AggregatePlan) -> Aggregates:
        if self.inner is None:
            raise AssertionError("the data was read")
        self.plans.append(plan)
        out: Aggregates = self.inner.aggregate(plan)
        self.aggregates.append(out)
        return out


QUERIES = [
    Query("count"),
    Query("count", by=("sex", "region")),
    Query("sum", "age"),
    Query("mean", "age", by=("sex",)),
    Query("variance", "age"),
    Query("std", "age", by=("region",)),
]


def test_accuracy_spends_nothing_and_never_reads_the_data() -> None:
    table = PrivateTable(schema=SCHEMA, engine=_Recording(), total_epsilon=1)
    statements = table.accuracy(QUERIES, "0.6")
    assert [s.epsilon for s in statements] == [Fraction(1, 10)] * 6
    assert statements[0].accuracy is not None and statements[0].accuracy > 0
    assert statements[3].accuracy is None and statements[3].per_count is not None
    assert statements[3].at(1000) < statements[3].at(100)
    assert table.spent == 0 and table.ledger.entries() == []


def test_release_is_one_ledger_entry_with_exact_epsilon() -> None:
    book = Ledger(None, 1)
    table = PrivateTable(schema=SCHEMA, engine=oracle_engine(_rows()), ledger=book)
    results = table.release(QUERIES, ["0.1", "0.1", "0.1", "0.1", "0.1", "0.1"])
    assert [r.epsilon for r in results] == [Fraction(1, 10)] * 6
    (entry,) = book.entries()
    assert entry.query["epsilon"] == ["1/10"] * 6
    assert [len(r.rows) for r in results] == [1, 6, 1, 2, 1, 3]
    assert results[1].rows[4].keys == (1, "b")  # typed keys, row-major
    assert results[1].key_columns == ("sex", "region")


def test_split_weights_and_bad_epsilon() -> None:
    table = PrivateTable(schema=SCHEMA, engine=_Recording(), total_epsilon=1)
    a, b = table.accuracy([Query("count"), Query("sum", "age")], 1, split=[1, 3])
    assert (a.epsilon, b.epsilon) == (Fraction(1, 4), Fraction(3, 4))
    with pytest.raises(ParameterError, match="epsilon"):
        table.accuracy([Query("count")], 0)
    with pytest.raises(ParameterError, match="2 value"):
        table.accuracy([Query("count")], ["0.1", "0.2"])


def test_a_refused_release_reads_nothing_and_records_nothing() -> None:
    engine = _Recording()
    table = PrivateTable(schema=SCHEMA, engine=engine, ledger=Ledger(None, Fraction(1, 2)))
    with pytest.raises(PrivacyBudgetError):
        table.release([Query("count")], 1)
    assert table.ledger.entries() == [] and engine.plans == []


def test_a_column_missing_from_the_source_is_refused_before_anything_is_spent() -> None:
    table = PrivateTable(schema=SCHEMA, engine=oracle_engine([{"pid": "1", "age": "3"}]),
                         total_epsilon=1)  # fmt: skip
    with pytest.raises(ParameterError, match="column 'sex' is not in") as info:
        table.release([Query("count", by=("sex",))], 1)
    assert info.value.parameter == "data" and table.ledger.entries() == []


def test_declaration_errors_name_the_parameter() -> None:
    table = PrivateTable(schema=SCHEMA, engine=_Recording(), total_epsilon=1)
    with pytest.raises(ParameterError, match="not declared") as info:
        table.accuracy([Query("sum", "income")], 1)
    assert info.value.parameter == "columns"
    with pytest.raises(ParameterError, match="keys or bins") as info:
        table.accuracy([Query("count", by=("age",))], 1)
    assert info.value.parameter == "by"
    unbounded = Schema((), privacy_unit="pid", bounds=ContributionBounds(max_groups_per_unit=2))
    with pytest.raises(ParameterError, match="needs a bound on its rows"):
        PrivateTable(schema=unbounded, engine=_Recording(), total_epsilon=1).accuracy(
            [Query("count")], 1
        )


def test_seeded_releases_are_reproducible_including_the_hash_key() -> None:
    def run(seed: int) -> tuple[list[Any], str]:
        engine = _Recording(oracle_engine(_rows()))
        table = PrivateTable(
            schema=SCHEMA, engine=engine, total_epsilon=1, rng=np.random.default_rng(seed)
        )
        results = table.release(QUERIES, 1)
        return [r.rows for r in results], engine.plans[0].hash_key

    a, b, c = run(7), run(7), run(8)
    assert a == b
    assert a[1] != c[1] and a[0] != c[0]


def test_grouped_parts_are_l1_calibrated_when_certified() -> None:
    """k = 2 over 6 cells: per-cell composition would give each cell ε/2 at Δ = 2; the certified
    L1 calibration gives each cell about ε at Δ₁ = 2, half the noise."""
    schema = Schema(SCHEMA.columns, "pid", bounds=ContributionBounds(max_rows_per_unit=2))
    table = PrivateTable(schema=schema, engine=_Recording(), total_epsilon=1)
    (grouped,) = table.accuracy([Query("count", by=("sex", "region"))], 1)
    (single,) = table.accuracy([Query("count")], 1)
    assert any("calibrated to the whole table's L1 sensitivity 2" in n for n in grouped.notes)
    assert grouped.accuracy is not None and single.accuracy is not None
    assert grouped.accuracy == pytest.approx(single.accuracy, rel=0.01)  # not twice as large


def test_notes_state_the_rules_and_the_row_bound() -> None:
    schema = Schema(SCHEMA.columns, "pid", bounds=ContributionBounds(2), max_rows=5000, rows=4000)
    table = PrivateTable(schema=schema, engine=_Recording(), total_epsilon=1)
    (mean,) = table.accuracy([Query("mean", "age")], 1)
    assert "± holds for tables of at most 5,000 rows (declared)" in mean.notes
    assert any("values clamped to [0, 100]" in n for n in mean.notes)
    assert any("null pid: dropped" in n for n in mean.notes)
    with pytest.raises(ParameterError, match="one row per unit"):
        table.accuracy([Query("mean", "age", method="substitute")], 1)
    one = Schema(SCHEMA.columns, rows=4000)
    (sub,) = PrivateTable(schema=one, engine=_Recording(), total_epsilon=1).accuracy(
        [Query("mean", "age", method="substitute")], 1
    )
    assert sub.accuracy is not None
    assert any("tables of n = 4,000 rows" in n for n in sub.notes)


def test_substitute_mean_uses_the_declared_count_never_the_data() -> None:
    """A wrong declared n gives a (wrong) value, never an error: nothing compares it."""
    rows = [{"age": str(a)} for a in range(100)]
    for declared in (100, 1234):
        schema = Schema((Column("age", "integer", 0, 100),), rows=declared)
        table = PrivateTable(
            schema=schema,
            engine=oracle_engine(rows),
            total_epsilon=100,
            rng=np.random.default_rng(1),
        )
        (r,) = table.release([Query("mean", "age", method="substitute")], 50)
        assert r.rows[0].value == pytest.approx(4950 / declared, abs=0.5)


def test_json_form_is_columnar() -> None:
    table = PrivateTable(
        schema=SCHEMA, engine=oracle_engine(_rows()), total_epsilon=1, rng=np.random.default_rng(0)
    )
    (r,) = table.release([Query("count", by=("sex", "region"))], "0.5")
    doc = r.as_dict()
    assert doc["keys"] == {"sex": [0, 0, 0, 1, 1, 1], "region": ["a", "b", "c"] * 2}
    assert len(doc["value"]) == 6 and doc["epsilon"] == "0.5"


class _Executors(_Recording):
    """An engine that draws the noise itself when asked (as Spark executors do)."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.requests: list[Any] = []

    def wants_executor_noise(self, n_cells: int) -> bool:
        return True

    def noisy_aggregate(self, plan: AggregatePlan, requests: Any) -> dict[str, Any]:
        self.requests += list(requests)
        return {r.key: np.full(plan.n_cells, 7.0) for r in requests}


def test_executor_noise_is_used_unless_a_seeded_rng_is_asked_for() -> None:
    # (a ratio mean sums deviations from the centre, which the engine does not draw: its noise
    # is drawn here, docs/utility.md "Means"; a sum's is the engine's)
    queries = [Query("count", by=("sex",)), Query("sum", "age", by=("sex",))]
    engine = _Executors(oracle_engine(_rows()))
    (count, total) = PrivateTable(schema=SCHEMA, engine=engine, total_epsilon=1).release(queries, 1)
    assert [r.source for r in engine.requests] == ["rows", "sum0"]
    assert [row.value for row in count.rows] == [7, 7] and engine.plans == []
    assert [row.value for row in total.rows] == [7.0, 7.0]
    seeded = _Executors(oracle_engine(_rows()))
    PrivateTable(
        schema=SCHEMA, engine=seeded, total_epsilon=1, rng=np.random.default_rng(0)
    ).release(queries, 1)
    assert seeded.requests == [] and len(seeded.plans) == 1
