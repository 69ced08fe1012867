"""Groups from the data (docs/sql.md, "Groups from the data"): GROUP BY a column without declared
keys, its groups chosen privately at a δ."""

from __future__ import annotations

import csv
import datetime as dt
from collections import Counter
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from snapdp.data.model.predicate import Compare
from snapdp.data.model.query import Query
from snapdp.data.model.schema import Column, Schema
from snapdp.data.release.table import PrivateTable
from snapdp.errors import ParameterError

SCHEMA = Schema((Column("city", "text"), Column("income", "integer", 0, 100)))


def _table(rows: list[dict[str, object]], seed: int, schema: Schema = SCHEMA) -> PrivateTable:
    return PrivateTable(
        pd.DataFrame(rows), schema, total_epsilon=100, rng=np.random.default_rng(seed)
    )


def _people(extra: list[str] = ()) -> list[dict[str, object]]:  # type: ignore[assignment]
    cities = ["a"] * 300 + ["b"] * 200 + ["c"] * 3 + list(extra)
    return [{"city": c, "income": 10 + i % 50} for i, c in enumerate(cities)]


def test_refused_without_delta_before_any_noise() -> None:
    t = _table(_people(), 1)
    with pytest.raises(ParameterError) as err:
        t.release([Query("count", by=("city",))], 1)
    text = str(err.value)
    assert "--delta" in text and "OPTIONS(delta" in text and "\n" not in text
    assert "docs/sql.md" in text and t.spent == 0


def test_count_and_mean_share_the_count_and_state_epsilon_delta() -> None:
    t = _table(_people(), 2)
    count, mean = t.release(
        [Query("count", by=("city",)), Query("mean", "income", by=("city",))], 1, delta="1e-6"
    )
    assert {r.keys for r in count.rows} == {("a",), ("b",)}
    assert {r.keys for r in mean.rows} == {("a",), ("b",)}
    assert 1e-12 < count.delta <= 1.01e-6 and mean.delta < 1e-20  # the selection's δ, once
    assert t.spent == 1


def test_mean_alone_takes_half_its_epsilon_for_the_count() -> None:
    t = _table(_people(), 3)
    (mean,) = t.release([Query("mean", "income", by=("city",))], 1, delta="1e-6")
    assert mean.epsilon == 1 and t.spent == 1
    assert any("1/2 of its ε" in n for n in mean.notes)


def test_neighbours_differ_only_in_noise_and_the_new_key() -> None:
    for seed in range(10):
        d = _table(_people(), seed).release([Query("count", by=("city",))], 1, delta="1e-6")[0]
        d2 = _table(_people(["new"]), seed).release(
            [Query("count", by=("city",))], 1, delta="1e-6"
        )[0]
        assert (d.label, d.epsilon, d.delta, d.notes, d.key_columns) == (
            d2.label, d2.epsilon, d2.delta, d2.notes, d2.key_columns,
        )  # fmt: skip
        assert {r.keys for r in d.rows} == {r.keys for r in d2.rows} == {("a",), ("b",)}


def test_never_a_key_not_in_the_data() -> None:
    schema = Schema((Column("day", "date"),))
    rows = [{"day": "2024-01-01"}] * 50 + [{"day": "2024-01-02"}] * 50
    seen: set[tuple[object, ...]] = set()
    for seed in range(20):
        (r,) = _table(rows, seed, schema).release([Query("count", by=("day",))], 1, delta="0.4")
        seen |= {row.keys for row in r.rows}
    assert seen <= {(dt.date(2024, 1, 1),), (dt.date(2024, 1, 2),)}
    assert seen


def _shape(r: object) -> dict[str, object]:
    """A result without its values and shown keys (what may differ through the noise)."""
    d = dict(r.as_dict())  # type: ignore[attr-defined]
    for noisy in ("keys", "value", "accuracy", "quantile", "rank_accuracy", "interval"):
        d.pop(noisy, None)
    d.pop("independent_value", None)
    return d


def test_no_row_and_one_row_give_results_of_one_shape() -> None:
    """D: no row passes the filter; D′: one does (its key is almost never shown). The results
    must not differ in anything but values and shown keys: notes, mechanisms, ε, δ."""
    schema = Schema((Column("name", "text"), Column("income", "integer", 0, 100)))
    base = [{"name": "bob", "income": 5}] * 20
    q = [
        Query("count", by=("name",), where=Compare("name", "=", "alice")),
        Query("mean", "income", by=("name",), where=Compare("name", "=", "alice")),
    ]
    for seed in range(20):
        d = _table(base, seed, schema).release(q, 1, delta="1e-6")
        d2 = _table([*base, {"name": "alice", "income": 7}], seed, schema).release(
            q, 1, delta="1e-6"
        )
        assert [_shape(r) for r in d] == [_shape(r) for r in d2]


def test_a_date_beyond_python_years_is_no_key_and_no_error(tmp_path: Path) -> None:
    """A native date past year 9999 (Parquet) is dropped as no key: D and D′ release alike,
    and no message ever quotes it."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    schema = Schema((Column("day", "date"),))
    day = (dt.date(2024, 1, 1) - dt.date(1970, 1, 1)).days
    far = 3_000_000  # about the year 10,183
    for name, days in (("d", [day] * 60), ("d2", [day] * 60 + [far])):
        pq.write_table(
            pa.table({"day": pa.array(days, type=pa.date32())}), tmp_path / f"{name}.parquet"
        )
    out = []
    for name in ("d", "d2"):
        t = PrivateTable(
            str(tmp_path / f"{name}.parquet"),
            schema,
            total_epsilon=10,
            rng=np.random.default_rng(1),
        )
        (r,) = t.release([Query("count", by=("day",))], 1, delta="1e-6")
        out.append((_shape(r), {row.keys for row in r.rows}))
    assert out[0][0] == out[1][0]
    assert out[0][1] <= {(dt.date(2024, 1, 1),)} and out[1][1] <= {(dt.date(2024, 1, 1),)}


def test_an_extra_count_states_its_own_snapping_delta() -> None:
    from snapdp.data.release import groups

    schema = SCHEMA
    _, (alone,) = groups.plan_selections(
        schema, [Query("mean", "income", by=("city",))], [Fraction(1)], [Fraction(1, 10**6)]
    )
    _, (shared,) = groups.plan_selections(
        schema, [Query("count", by=("city",))], [Fraction(1)], [Fraction(1, 10**6)]
    )
    assert alone.counter is None and alone.delta > alone.rule.delta
    assert shared.delta == shared.rule.delta


def test_mixed_with_declared_keys() -> None:
    schema = Schema((Column("sex", "integer", keys=(1, 2)), Column("city", "text")))
    rows = [{"sex": 1 + i % 2, "city": "a"} for i in range(200)] + [{"sex": 3, "city": "b"}] * 90
    (r,) = _table(rows, 4, schema).release([Query("count", by=("sex", "city"))], 1, delta="1e-6")
    assert {row.keys for row in r.rows} == {(1, "a"), (2, "a")}


def test_pums_ages(pums: Path, tmp_path: Path) -> None:
    """PUMS acceptance: GROUP BY age at ε = 1, δ = 1e-6 shows ≥ 80% of the ages held by ≥ 40
    people, never an age not in the data, and a one-person age in at most 2 of 60 runs. PUMS.csv
    (1,000 people) holds no age of 40 people and none of one, so the table here is PUMS.csv four
    times over (each row a person) plus one person aged 120."""
    lines = (pums / "PUMS.csv").read_text().splitlines()
    table_csv = tmp_path / "pums4.csv"
    table_csv.write_text("\n".join([lines[0], *lines[1:] * 4, "120,1,9,1,0,1"]) + "\n")
    with open(table_csv, newline="") as f:
        ages = Counter(int(r["age"]) for r in csv.DictReader(f))
    big = {a for a, n in ages.items() if n >= 40}
    single = {a for a, n in ages.items() if n == 1}
    assert len(big) >= 10 and single == {120}
    schema = Schema((Column("age", "integer"),))
    table = PrivateTable(str(table_csv), schema, total_epsilon=1000, rng=np.random.default_rng(35))
    singles = 0
    for _ in range(60):
        (r,) = table.release([Query("count", by=("age",))], 1, delta="1e-6")
        shown = {row.keys[0] for row in r.rows}
        assert shown <= set(ages)
        assert len(shown & big) >= 0.8 * len(big)
        singles += bool(shown & single)
    assert singles <= 2


def test_ledger_records_delta_and_refuses_beyond_the_delta_budget(tmp_path: Path) -> None:
    from snapdp.errors import PrivacyBudgetError

    book = tmp_path / "ledger.db"
    q = [Query("count", by=("city",))]
    no_budget = PrivateTable(
        pd.DataFrame(_people()), SCHEMA, ledger=book, total_epsilon=10, dataset="people"
    )
    with pytest.raises(PrivacyBudgetError, match="--total-delta"):
        no_budget.release(q, 1, delta="1e-6")
    assert not book.exists()  # refused before anything was written
    t = PrivateTable(
        pd.DataFrame(_people()),
        SCHEMA,
        ledger=book,
        total_epsilon=10,
        dataset="people",
        total_delta="1.5e-6",
    )
    for _ in range(4):  # each asks δ = 1e-6 and records the δ its selection reaches (≤ 1e-6)
        try:
            t.release(q, 1, delta="1e-6")
        except PrivacyBudgetError as exc:
            assert "δ budget exceeded" in str(exc)
            break
    else:
        raise AssertionError("the δ budget never refused")
    deltas = [e.delta for e in t.ledger.entries()]
    assert deltas and all(0 < d <= 1.01e-6 for d in deltas)
    assert sum(deltas) <= 1.5e-6 < sum(deltas) + deltas[0]
    assert t.spent == len(deltas)
    again = PrivateTable(
        pd.DataFrame(_people()), SCHEMA, ledger=book, dataset="people", total_delta="1e-3"
    )
    with pytest.raises(ParameterError, match="never changed"):
        again.release(q, 1, delta="1e-9")


def test_every_front_end_carries_delta(tmp_path: Path) -> None:
    """SQL (flag and OPTIONS), a plan file ([data] and per query), the page's JSON and the
    codec all carry δ to the workload; without one the SQL refusal names what to add."""
    from snapdp.data.frontends.sql import SqlError, parse_sql
    from snapdp.data.frontends.toml import load_workload
    from snapdp.data.model.codec import workload_from_dict, workload_to_dict
    from snapdp.data.model.workload import Declaration
    from snapdp.ui._workload_json import workload_from_document

    decl = Declaration(SCHEMA, "people.csv", dataset="people")
    text = "SELECT city, COUNT(*), AVG(income) FROM people GROUP BY city"
    with pytest.raises(SqlError, match=r"--delta 1e-6 or OPTIONS\(delta = 1e-6\)"):
        parse_sql(text, decl, epsilon=1)
    w = parse_sql(text, decl, epsilon=1, delta="1e-6").workload
    assert {pq.delta for pq in w.queries} == {Fraction(1, 10**6)}
    prefixed = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon = 1, delta = 1e-6) " + text[7:]
    assert parse_sql(prefixed, decl).workload.delta == Fraction(1, 10**6)
    assert workload_from_dict(workload_to_dict(w)) == w
    plan = tmp_path / "plan.toml"
    plan.write_text(
        '[data]\nsource = "people.csv"\nname = "people"\ndelta = 1e-6\n'
        '[columns]\ncity = { type = "text" }\n'
        '[[query]]\nstatistic = "count"\nby = "city"\nepsilon = 1\n'
        '[[query]]\nstatistic = "count"\nby = "city"\nepsilon = 1\ndelta = 1e-7\n'
    )
    assert [pq.delta for pq in load_workload(plan).queries] == [
        Fraction(1, 10**6), Fraction(1, 10**7),
    ]  # fmt: skip
    doc = {
        "data": {"delta": "1e-6"},
        "columns": [{"name": "city", "type": "text"}],
        "queries": [{"statistic": "count", "by": "city", "how": "epsilon", "value": "1"}],
    }
    page, _ = workload_from_document(doc, "people.csv", tmp_path)
    assert page.queries[0].delta == Fraction(1, 10**6)


def test_a_privacy_unit_without_a_bound_on_its_groups_is_refused_before_reading() -> None:
    """With a privacy unit, groups from the data need L0 or k: a unit could otherwise hold any
    number of keys, and the selection's δ grows with that number (docs/data.md, "Privacy
    units"). With one of them the unit is accepted (test_groups_from_data_units.py)."""
    from snapdp.data.model.schema import ContributionBounds

    rows = [{"pid": i // 3, "city": "abc"[i % 3], "income": 5} for i in range(900)]
    schema = Schema(
        (Column("pid", "integer"), *SCHEMA.columns),
        privacy_unit="pid",
        bounds=ContributionBounds(max_rows_per_group=1),
    )
    with pytest.raises(ParameterError, match="max_groups_per_unit") as err:
        _table(rows, 1, schema).release([Query("count", by=("city",))], 1, delta="1e-6")
    assert err.value.parameter == "max_groups_per_unit" and "`pid`" in str(err.value)


def test_private_table_sql_takes_delta_from_options_and_from_the_call() -> None:
    from snapdp.data import PrivateTable as SqlTable

    rows = _people()
    for text, delta in (
        ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(delta = 1e-6) city, COUNT(*) AS n "
         "FROM t GROUP BY city", None),
        ("SELECT city, COUNT(*) AS n FROM t GROUP BY city", "1e-6"),
    ):  # fmt: skip
        t = SqlTable(pd.DataFrame(rows), SCHEMA, total_epsilon=10, rng=np.random.default_rng(3))
        (r,) = t.sql(text, 1, delta=delta)
        assert {row.keys for row in r.rows} == {("a",), ("b",)}
        assert r.delta > 0


def test_a_data_keyed_columns_note_names_no_declared_keys() -> None:
    """Was: "rows whose city is not a declared key are dropped" for a column whose keys came
    from the data (review, 2026-11-27); a declared column beside it keeps its note."""
    schema = Schema((Column("sex", "integer", keys=(1, 2)), Column("city", "text")))
    rows = [{"sex": 1 + i % 2, "city": "a"} for i in range(200)]
    (r,) = _table(rows, 5, schema).release([Query("count", by=("sex", "city"))], 1, delta="1e-6")
    city = [n for n in r.notes if n.startswith("city: ")]
    sex = [n for n in r.notes if n.startswith("sex: ")]
    assert city == [
        "city: cells that are not text count as null; nulls dropped; groups from the data"
    ]
    assert sex and sex[0].endswith("rows whose sex is not a declared key are dropped")


def test_data_keys_with_a_binned_column_are_refused_before_reading() -> None:
    """Review of 2026-11-27: the groups found in the data held the binned column's raw values
    (ages 25 and 30 for the bin [20, 40)) or no row at all; refused, naming both columns."""
    age = Column("age", "integer", 0, 59, bins=tuple(Fraction(e) for e in (0, 20, 40, 60)))
    schema = Schema((Column("city", "text"), age))
    rows = [{"city": "a", "age": 25 + 5 * (i % 2)} for i in range(300)]
    t = _table(rows, 6, schema)
    with pytest.raises(ParameterError) as err:
        t.release([Query("count", by=("city", "age"))], 1, delta="1e-6")
    text = str(err.value)
    assert "`city`" in text and "`age`" in text and "bins" in text and "\n" not in text
    assert t.spent == 0


def test_an_automatic_quantile_method_stays_the_placeholders_on_the_kept_keys() -> None:
    """Groups from the data: the query is recompiled on the kept keys with the placeholder's
    parts (calibrated before any data was read). Its tree or grid must be the placeholder's
    method too, even where the comparison on the kept keys would choose the other one."""
    from msgspec.structs import replace

    from snapdp.data import statistics
    from snapdp.data.model.observed import with_keys
    from snapdp.data.release.groups import _recompiled

    schema = Schema(columns=(Column("g", "text"), Column("x", "integer", lower=0, upper=100)))
    quartiles = (Fraction(1, 4), Fraction(1, 2), Fraction(3, 4))
    auto = Query("quantiles", "x", by=("g",), quantiles=quartiles)
    eps = Fraction(1)
    assert statistics.compile_query(auto, schema, eps).grid is None  # here the tree is chosen
    # a placeholder whose automatic choice was the exponential mechanism
    chosen = statistics.compile_query(replace(auto, method="exponential"), schema, eps)
    placeholder = replace(chosen, query=auto)
    kept = with_keys(schema, ["g"], [["a", "b"]])
    got = _recompiled(placeholder, kept, [("a",), ("b",)])
    assert got.grid is not None and got.tree is None
    assert got.query == auto and got.parts == placeholder.parts
    assert got.leaf == statistics.compile_fresh(replace(auto, method="exponential"), kept, eps).leaf


def test_a_target_beside_groups_from_the_data_is_refused_by_its_query() -> None:
    """A release with groups from the data takes no target ± in any of its queries; the refusal
    names the query that has one (a plan decision: nothing read, nothing spent)."""
    from snapdp.data.release import session

    count = session.Step(Query("count", by=("city",)), Fraction(1), delta=Fraction(1, 10**6))
    median = Query("quantiles", column="income", quantiles=(0.5,))
    targeted = session.Step(median, Fraction(1), two_phase=object())  # type: ignore[arg-type]
    with pytest.raises(ParameterError) as err:
        session.prepare(SCHEMA, [count, targeted], None, confidence=0.95)  # type: ignore[arg-type]
    assert err.value.parameter == "accuracy" and repr(median.label) in str(err.value)
    assert "every query" in str(err.value) and "docs/sql.md" in str(err.value)


_PLAN_WITH_DATA_KEYS = """[data]
source = "people.csv"
total_epsilon = 2
{consistent}
[columns]
city = {{ type = "text" }}
income = {{ type = "integer", lower = 0, upper = 100 }}

[[query]]
statistic = "count"
by = ["city"]
epsilon = 1
delta = 1e-6

[[query]]
statistic = "mean"
column = "income"
{second}
"""


@pytest.mark.parametrize(
    ("consistent", "second", "key", "parameter"),
    [
        ("", "accuracy = 5", "query[2].accuracy", "accuracy"),
        ("consistent = true", "epsilon = 0.5", "data.consistent", "consistent"),
    ],
)
def test_the_planner_refuses_what_a_release_with_data_keys_would(
    tmp_path: Path, consistent: str, second: str, key: str, parameter: str
) -> None:
    """A draft and `snapdp plan` refuse a two-phase target ± or `consistent` beside groups from
    the data, naming the key, as the run does (the page's draft accepted them, then its run was
    refused)."""
    from snapdp.data import Plan

    plan_file = tmp_path / "plan.toml"
    plan_file.write_text(_PLAN_WITH_DATA_KEYS.format(consistent=consistent, second=second))
    plan = Plan.load(plan_file)
    for presume in (True, False):
        with pytest.raises(ParameterError) as err:
            plan.preview(presume_certified=presume)
        assert err.value.parameter == parameter and f"`{key}`" in str(err.value)
        assert "groups from the data" in str(err.value) and "docs/sql.md" in str(err.value)
    # the same plan with declared keys is planned
    declared = _PLAN_WITH_DATA_KEYS.replace('{ type = "text" }', '{ type = "text", keys = ["a"] }')
    plan_file.write_text(declared.format(consistent=consistent, second=second))
    assert Plan.load(plan_file).preview(presume_certified=True).allocations
