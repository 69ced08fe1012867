"""The workload (snapdp.data.model.workload): its JSON form round-trips exactly, it hands the
planner the same queries, and malformed JSON names the key."""

from __future__ import annotations

import datetime as dt
import json
from fractions import Fraction

import pytest

from snapdp.data.api import Plan
from snapdp.data.model.codec import workload_from_dict, workload_to_dict
from snapdp.data.model.predicate import And, Compare, IsNull, Not
from snapdp.data.model.query import Query
from snapdp.data.model.schema import Column, ContributionBounds, NullRule, Schema
from snapdp.data.model.workload import Declaration, PlannedQuery, Workload, table_name
from snapdp.errors import ParameterError

SCHEMA = Schema(
    (
        Column("age", "integer", 0, 100, bins=(0, 18, 65, 100)),
        Column(
            "inc",
            "decimal",
            Fraction(-1, 3),
            Fraction(10**6),
            nulls=NullRule("impute", Fraction(1, 2)),
        ),
        Column("sex", "text", keys=("1", "2")),
        Column("d", "date", keys=(dt.date(2020, 1, 1),)),
        Column("b", "boolean", keys=(True, False)),
        Column("pid", "text"),
    ),
    privacy_unit="pid",
    bounds=ContributionBounds(max_rows_per_unit=3),
)


def _workload() -> Workload:
    d = Declaration(SCHEMA, "x/pums.csv", Fraction(2), 0.9, 500)
    where = And((Compare("age", ">=", 18), Not(IsNull("d"))))
    return Workload(
        d,
        (
            d.planned(Query("mean", "inc", ("sex",), where=where), epsilon="0.5"),
            d.planned(Query("quantiles", "age", quantiles=(Fraction(1, 2),)), accuracy="3"),
            d.planned(
                Query(
                    "count",
                    by=("age",),
                    bins=(("age", (Fraction(0), Fraction(50), Fraction(100))),),
                ),
                weight=1,
            ),
        ),
    )


def test_json_round_trip_is_exact() -> None:
    w = _workload()
    text = json.dumps(workload_to_dict(w))
    assert workload_from_dict(json.loads(text)) == w
    assert '"lower": "-1/3"' in text and '"epsilon": "0.5"' in text


def test_the_planner_gets_the_same_queries() -> None:
    w = _workload()
    plan = Plan.from_workload(w)
    assert isinstance(plan, Plan) and plan.queries == w.queries
    assert plan.total_epsilon == Fraction(2) and plan.schema is SCHEMA
    assert plan.to_workload(dataset=None) == w
    assert all(pq.confidence == 0.9 and pq.group_size == 500 for pq in w.queries)


def test_table_name() -> None:
    assert table_name(None, "data/pums.csv") == "pums"
    assert table_name(None, "data/pums.csv.gz") == "pums"
    assert table_name("people", "data/pums.csv") == "people"
    assert table_name(None, object()) is None


@pytest.mark.parametrize(
    ("mutate", "parameter"),
    [
        (lambda d: d.update(extra=1), "extra"),
        (lambda d: d["queries"][0].update(epsilon=0.5), "epsilon"),
        (lambda d: d["queries"][0].update(statistic="median"), "statistic"),
        (lambda d: d["declaration"]["schema"]["columns"]["age"].update(lower="x"), "lower"),
        (lambda d: d["queries"][0]["where"].update(op="xor"), "where"),
    ],
)
def test_malformed_json_names_the_key(mutate: object, parameter: str) -> None:
    data = json.loads(json.dumps(workload_to_dict(_workload())))
    mutate(data)  # type: ignore[operator]
    with pytest.raises(ParameterError) as info:
        workload_from_dict(data)
    assert info.value.parameter == parameter


def test_a_workload_needs_planned_queries() -> None:
    with pytest.raises(ParameterError, match="at least one query"):
        Workload(Declaration(SCHEMA), ())
    with pytest.raises(ParameterError, match="PlannedQuery"):
        Workload(Declaration(SCHEMA), (Query("count"),))  # type: ignore[arg-type]
    assert isinstance(Declaration(SCHEMA).planned(Query("count"), epsilon=1), PlannedQuery)
