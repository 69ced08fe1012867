"""The plan-file writer (snapdp.data.frontends.toml_writer): Plan.load(plan_to_toml(plan)) ==
plan, for plans drawn by hypothesis; decimals are written exactly (docs/plans.md, docs/ui.md)."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from snapdp.data import Plan, PlannedQuery
from snapdp.data.frontends.toml_writer import dumps, plan_to_toml
from snapdp.data.model.query import Query
from snapdp.data.model.schema import Column, ContributionBounds, CsvOptions, NullRule, Schema
from snapdp.errors import ParameterError
from snapdp.ui._document_io import document_from_plan, document_toml

_names = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=8)
_decimals = st.decimals(
    min_value=Decimal("-1e6"), max_value=Decimal("1e6"), allow_nan=False, allow_infinity=False
).map(Fraction)
_positive = st.decimals(
    min_value=Decimal("1e-6"), max_value=Decimal("1e6"), allow_nan=False, allow_infinity=False
).map(Fraction)


@st.composite
def _column(draw: Any, name: str) -> Column:
    kind = draw(st.sampled_from(["integer", "decimal", "text", "boolean", "date"]))
    kw: dict[str, Any] = {}
    if kind in ("integer", "decimal"):
        lo = draw(st.integers(-1000, 1000) if kind == "integer" else _decimals)
        hi = lo + draw(st.integers(1, 1000) if kind == "integer" else _positive)
        kw.update(lower=Fraction(lo), upper=Fraction(hi))
        grouping = draw(st.sampled_from(["none", "keys", "bins"]))
        if grouping == "keys":
            keys = draw(st.lists(st.integers(-50, 50), min_size=1, max_size=4, unique=True))
            kw["keys"] = tuple(keys if kind == "integer" else [Fraction(k, 4) for k in keys])
        elif grouping == "bins":
            edges = draw(st.lists(_decimals, min_size=2, max_size=4, unique=True))
            kw["bins"] = tuple(sorted(edges))
        if grouping == "none" and draw(st.booleans()):
            kw["nulls"] = NullRule("impute", lo)
    elif kind == "text":
        kw["keys"] = tuple(draw(st.lists(_names, min_size=1, max_size=3, unique=True)))
    elif kind == "boolean":
        kw["keys"] = tuple(draw(st.sampled_from([(True,), (False, True)])))
    else:
        days = draw(st.lists(st.integers(0, 20000), min_size=1, max_size=3, unique=True))
        kw["keys"] = tuple(dt.date(1970, 1, 1) + dt.timedelta(days=d) for d in days)
    return Column(name, kind, **kw)


@st.composite
def plans(draw: Any) -> Plan:
    names = draw(st.lists(_names, min_size=1, max_size=4, unique=True))
    columns = [draw(_column(n)) for n in names]
    bounded = [c.name for c in columns if c.lower is not None]
    grouping = [c.name for c in columns if c.is_grouping]
    unit = draw(st.one_of(st.none(), _names.filter(lambda n: n not in names)))
    bounds: dict[str, int] = {}
    if unit is not None:
        for k in ("max_rows_per_unit", "max_groups_per_unit", "max_rows_per_group"):
            if draw(st.booleans()):
                bounds[k] = draw(st.integers(1, 20))
    schema = Schema(
        tuple(columns),
        privacy_unit=unit,
        bounds=ContributionBounds(**bounds),
        max_rows=draw(st.sampled_from([1 << 40, 5000])),
        rows=draw(st.one_of(st.none(), st.integers(1, 5000))),
        csv=draw(
            st.sampled_from(
                [
                    CsvOptions(),
                    CsvOptions(
                        delimiter=";", header=False, column_names=("a", "b"), max_line_bytes=4096
                    ),
                    CsvOptions(delimiter="\t"),
                ]
            )
        ),
    )
    confidence = draw(st.floats(0.5, 0.999))
    queries = []
    for _ in range(draw(st.integers(1, 4))):
        stats = ["count"] + (["sum", "mean", "quantiles"] if bounded else [])
        statistic = draw(st.sampled_from(stats))
        kw: dict[str, Any] = {"statistic": statistic}
        if statistic != "count":
            kw["column"] = draw(st.sampled_from(bounded))
        if grouping and draw(st.booleans()):
            kw["by"] = (draw(st.sampled_from(grouping)),)
        if statistic == "quantiles":
            qs = draw(st.lists(st.integers(1, 99), min_size=1, max_size=3, unique=True))
            kw["quantiles"] = tuple(Fraction(q, 100) for q in qs)
        if draw(st.booleans()):
            kw["name"] = draw(_names)
        how = draw(st.sampled_from(["epsilon", "accuracy", "weight"]))
        queries.append(
            PlannedQuery(
                Query(**kw),
                confidence=confidence,
                group_size=draw(st.sampled_from([100_000, 1000])),
                **{how: draw(_positive)},
            )
        )
    total = draw(st.one_of(st.none(), _positive))
    source = draw(st.sampled_from(["data.csv", "my data/ü.parquet", 'a "quoted" \\ name.csv']))
    return Plan(schema, queries, source=source, total_epsilon=total)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(plan=plans())
def test_load_of_write_is_the_plan(plan: Plan, tmp_path: Path) -> None:
    path = tmp_path / "plan.toml"
    path.write_text(plan_to_toml(plan), encoding="utf-8")
    back = Plan.load(path)
    assert back.schema == plan.schema
    assert back.queries == plan.queries
    assert back.source == plan.source
    assert back.total_epsilon == plan.total_epsilon


def test_decimals_are_written_as_typed() -> None:
    text = dumps({"data": {"total_epsilon": Decimal("0.50"), "x": Decimal("1E+3")}})
    assert text == "[data]\ntotal_epsilon = 0.50\nx = 1E+3\n"


def test_exact_fractions_only() -> None:
    assert "epsilon = 0.1\n" in dumps({"query": [{"epsilon": Fraction(1, 10)}]})
    with pytest.raises(ParameterError, match="no exact decimal"):
        dumps({"query": [{"epsilon": Fraction(1, 3)}]})


def test_strings_are_escaped() -> None:
    import tomllib

    weird = 'a"b\\c\nd\x7fe\x00 ü 😀'
    text = dumps({"data": {weird: weird}})
    assert tomllib.loads(text) == {"data": {weird: weird}}


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(plan=plans())
def test_the_pages_document_keeps_the_plan(plan: Plan, tmp_path: Path) -> None:
    """Nothing is lost on the way through the page: a plan → the page's document (every field
    a string) → a plan file → the same plan."""
    doc = json.loads(json.dumps(document_from_plan(plan)))  # what the page holds and sends back
    assert isinstance(plan.source, str)
    path = tmp_path / "plan.toml"
    path.write_text(document_toml(doc, plan.source), encoding="utf-8")
    back = Plan.load(path)
    assert back.schema == plan.schema
    assert back.queries == plan.queries
    assert back.total_epsilon == plan.total_epsilon


def test_a_field_the_writer_does_not_know_is_refused_not_dropped() -> None:
    from msgspec import Struct

    from snapdp.data.frontends.toml_writer import _known_fields

    class Later(Struct):
        statistic: str = "count"
        where: str | None = None

    _known_fields(Later(), ("statistic",))  # at its default: nothing to write
    with pytest.raises(ParameterError, match="does not know `where`"):
        _known_fields(Later(where="age > 3"), ("statistic",))
