"""Row filters (snapdp.data.model.predicate): random WHERE predicates give identical exact
aggregates on the reference engine and DuckDB (and a few on Spark, in test_filters_spark.py);
three-valued logic by hand; the typed-literal checks; the JSON form round-trips; a filter changes
no sensitivity."""

from __future__ import annotations

import datetime as dt
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.data_oracle import OracleEngine

from snapdp.data.engines.base import AggregatePlan, ValueColumn
from snapdp.data.model.codec import predicate_from_dict, predicate_to_dict
from snapdp.data.model.predicate import (
    And,
    Compare,
    InList,
    IsNull,
    Not,
    Or,
    Predicate,
    between,
    check_predicate,
    evaluate,
    to_sql,
)
from snapdp.data.model.query import Query
from snapdp.data.model.schema import Column, ContributionBounds, Schema
from snapdp.data.statistics import compile_query
from snapdp.errors import ParameterError

duckdb_engine = pytest.importorskip("snapdp.data.engines.duckdb.engine")

A = Column("a", "integer", Fraction(-5), Fraction(50))
X = Column("x", "decimal", Fraction(-2), Fraction(2))
S = Column("s", "text", keys=("p", "q", "r"))
B = Column("b", "boolean")
D = Column("d", "date")
U = Column("u", "text")
SCHEMA = Schema((A, X, S, B, D, U), privacy_unit="u", bounds=ContributionBounds(2, None, 1))
COLUMNS = {c.name: c for c in (A, X, S, B, D)}

# cells as a CSV would hold them: awkward on purpose (spaces, exponents, empty, not a value)
CELLS: dict[str, list[str | None]] = {
    "a": ["1", "-3", " 7 ", "3.0", "1e1", "2.5", "", "x", "49", "0"],
    "x": ["0.1", "-0.1", "1.5", "", "abc", "2", "0.30000000000000004", "-2.0", "1e-1", "0"],
    "s": ["p", "q", "r", "", "P", " p", "z", "q", "p", "r"],
    "b": ["true", "no", "T", "", "maybe", "1", "0", "FALSE", "yes", "f"],
    "d": [
        "2024-01-31",
        "2024-02-30",
        "",
        "2023-12-31",
        "x",
        "2024-01-01",
        "2024-02-29",
        "2020-06-15",
        "2024-01-31",
        "1999-01-01",
    ],
    "u": ["u1", "u2", "u3", "u1", "", "u2", "u4", "u5", "u1", "u6"],
}
LITERALS: dict[str, list[Any]] = {
    "a": [0, 1, 3, 7, 10, -3, 49, Fraction(5, 2), 1 << 64],
    "x": [Fraction(1, 10), Fraction(-1, 10), Fraction(3, 2), 0, 2, Fraction(3, 10)],
    "s": ["p", "q", "z", "P", ""],
    "b": [True, False],
    "d": [dt.date(2024, 1, 31), dt.date(2024, 1, 1), dt.date(2023, 12, 31)],
}


def _atoms(name: str) -> st.SearchStrategy[Predicate]:
    lits = st.sampled_from(LITERALS[name])
    return st.one_of(
        st.builds(Compare, st.just(name), st.sampled_from(["=", "<>", "<", "<=", ">", ">="]), lits),
        st.builds(InList, st.just(name), st.lists(lits, min_size=1, max_size=3).map(tuple)),
        st.builds(IsNull, st.just(name)),
        st.builds(lambda lo, hi: between(name, lo, hi), lits, lits),
    )


ATOMS = st.one_of(*[_atoms(n) for n in COLUMNS])
PREDICATES = st.recursive(
    ATOMS,
    lambda inner: st.one_of(
        st.builds(Not, inner),
        st.lists(inner, min_size=2, max_size=3).map(lambda ts: And(tuple(ts))),
        st.lists(inner, min_size=2, max_size=3).map(lambda ts: Or(tuple(ts))),
    ),
    max_leaves=6,
)


def _rows(picks: list[int]) -> list[dict[str, str | None]]:
    return [{k: CELLS[k][(i * (j + 3)) % 10] for j, k in enumerate(CELLS)} for i in picks]


def _plan(where: Predicate, bounded: bool) -> AggregatePlan:
    checked = check_predicate(where, SCHEMA)
    vx = ValueColumn(X, 1, -20, 20, None, True)
    return AggregatePlan(
        groupings=(S,),
        values=(vx,),
        unit=U if bounded else None,
        bounds=SCHEMA.bounds if bounded else ContributionBounds(),
        hash_key="0123456789abcdef0123456789abcdef",
        where=checked,
        where_columns=tuple(COLUMNS[c] for c in ("a", "x", "s", "b", "d")),
    )


def _csv(tmp_path: Any, rows: list[dict[str, str | None]]) -> str:
    def cell(v: str | None) -> str:
        return "" if v is None else '"' + v.replace('"', '""') + '"'

    lines = [",".join(CELLS)] + [",".join(cell(r[k]) for k in CELLS) for r in rows]
    path = tmp_path / "t.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    where=PREDICATES,
    picks=st.lists(st.integers(0, 9), min_size=0, max_size=14),
    bounded=st.booleans(),
)
def test_random_filters_oracle_equals_duckdb(
    tmp_path: Any, where: Predicate, picks: list[int], bounded: bool
) -> None:
    rows = _rows(picks)
    path = _csv(tmp_path, rows)
    plan = _plan(where, bounded)
    expected = OracleEngine(path).aggregate(plan)
    got = duckdb_engine.DuckDBEngine(path).aggregate(plan)
    assert got == expected
    if not bounded:  # the oracle's filter agrees with the library's own definition
        from tests.data_oracle import cast

        kept = 0
        for r in rows:
            cast_row = {n: cast(c.type, r[n]) for n, c in COLUMNS.items()}
            if evaluate(plan.where, cast_row) is True and cast("text", r["s"]) in S.keys:  # type: ignore[arg-type, operator]
                kept += 1
        assert sum(expected.rows) == kept


def test_three_valued_logic_by_hand() -> None:
    row = {"a": None, "x": 0.1, "s": "p"}
    assert evaluate(Compare("a", "=", 1), row) is None
    assert evaluate(Not(Compare("a", "=", 1)), row) is None
    assert evaluate(Or((Compare("a", "=", 1), Compare("s", "=", "p"))), row) is True
    assert evaluate(And((Compare("a", "=", 1), Compare("s", "=", "q"))), row) is False
    assert evaluate(And((Compare("a", "=", 1), Compare("s", "=", "p"))), row) is None
    assert evaluate(IsNull("a"), row) is True
    # decimal values are doubles and meet the double nearest the literal
    assert evaluate(Compare("x", "=", Fraction(1, 10)), row) is True
    assert evaluate(Compare("x", ">", Fraction(1, 10)), row) is False


def test_duckdb_keeps_exactly_the_rows_the_predicate_holds_for() -> None:
    import pandas as pd

    frame = pd.DataFrame({"x": ["0.1", "0.2", None, "0.3"], "s": ["p", "q", "p", "r"]})
    where = check_predicate(Or((Compare("x", "<=", Fraction(1, 10)), IsNull("x"))), SCHEMA)
    plan = AggregatePlan(groupings=(S,), where=where, where_columns=(X,))
    assert duckdb_engine.DuckDBEngine(frame).aggregate(plan).rows == [2, 0, 0]


@pytest.mark.parametrize(
    ("where", "message"),
    [
        (Compare("nope", "=", 1), "not declared"),
        (Compare("a", "=", "1"), "compare it with a number"),
        (Compare("s", "=", 1), "quoted string"),
        (Compare("d", "=", "2024-02-30"), "date"),
        (Compare("x", "=", None), "IS NULL"),
    ],
)
def test_literals_are_checked_against_the_declaration(where: Predicate, message: str) -> None:
    with pytest.raises(ParameterError, match=message) as info:
        check_predicate(where, SCHEMA)
    assert info.value.parameter == "where"


@pytest.mark.parametrize(
    "literal",
    [Fraction(5, 2), Fraction(-5, 2), Fraction(7), 1 << 63, -(1 << 63) - 1, 1 << 70, -(1 << 70)],
)
@pytest.mark.parametrize("op", ["=", "<>", "<", "<=", ">", ">="])
def test_integer_column_with_any_numeric_literal_compares_exactly(
    literal: int | Fraction, op: str
) -> None:
    """Rewritten into integer literals (what an engine can compare), with the same truth value
    as the exact rational comparison, including unknown for a null, also under NOT."""
    checked = check_predicate(Compare("a", op, literal), SCHEMA)  # type: ignore[arg-type]
    for p in (checked, Not(checked)):
        assert all(
            isinstance(c.value, int) and -(1 << 63) <= c.value < 1 << 63 for c in _compares(p)
        )
    import operator

    exact = {"=": operator.eq, "<>": operator.ne, "<": operator.lt, "<=": operator.le,
             ">": operator.gt, ">=": operator.ge}[op]  # fmt: skip
    for v in (-(1 << 63), -3, -2, 0, 2, 3, 6, 7, 8, (1 << 63) - 1):
        assert evaluate(checked, {"a": v}) is exact(v, literal), (v, checked)
        assert evaluate(Not(checked), {"a": v}) is (not exact(v, literal))
    assert evaluate(checked, {"a": None}) is None
    assert evaluate(Not(checked), {"a": None}) is None


def test_integer_in_list_drops_values_no_integer_equals() -> None:
    got = check_predicate(InList("a", (1, Fraction(3, 2), Fraction(4), 1 << 64)), SCHEMA)
    assert got == InList("a", (1, 4))
    never = check_predicate(InList("a", (Fraction(1, 2),)), SCHEMA)
    assert evaluate(never, {"a": 0}) is False and evaluate(never, {"a": None}) is None


def _compares(p: Predicate) -> list[Compare]:
    if isinstance(p, Compare):
        return [p]
    if isinstance(p, Not):
        return _compares(p.term)
    if isinstance(p, (And, Or)):
        return [c for t in p.terms for c in _compares(t)]
    return []


def test_literals_are_typed_by_the_declaration() -> None:
    checked = check_predicate(
        And((Compare("x", ">", 1), Compare("d", ">=", "2024-01-01"), Compare("b", "=", True))),
        SCHEMA,
    )
    assert checked == And(
        (
            Compare("x", ">", Fraction(1)),
            Compare("d", ">=", dt.date(2024, 1, 1)),
            Compare("b", "=", True),
        )
    )


@settings(max_examples=40, deadline=None)
@given(PREDICATES)
def test_json_round_trip(where: Predicate) -> None:
    import json

    assert predicate_from_dict(json.loads(json.dumps(predicate_to_dict(where)))) == where


def test_readable_sql() -> None:
    where = And(
        (
            Compare("a", ">=", 18),
            Not(InList("s", ("p", "it's"))),
            Not(IsNull("x")),
            Or((Compare("b", "=", True), Compare("d", "<", dt.date(2020, 1, 2)))),
        )
    )
    assert to_sql(where) == (
        "a >= 18 AND s NOT IN ('p', 'it''s') AND x IS NOT NULL AND "
        "(b = TRUE OR d < DATE '2020-01-02')"
    )
    assert Query("count", where=Compare("a", ">", 1)).label == "count where a > 1"


@pytest.mark.parametrize("statistic", ["count", "sum", "mean", "variance", "quantiles"])
def test_a_filter_changes_no_sensitivity(statistic: str) -> None:
    column = None if statistic == "count" else "a"
    qs = (Fraction(1, 2),) if statistic == "quantiles" else ()
    plain = Query(statistic, column, ("s",), quantiles=qs)  # type: ignore[arg-type]
    filtered = Query(statistic, column, ("s",), quantiles=qs,  # type: ignore[arg-type]
                     where=Compare("b", "=", True))  # fmt: skip
    a = compile_query(plain, SCHEMA, Fraction(1))
    b = compile_query(filtered, SCHEMA, Fraction(1))
    assert a.parts == b.parts and a.reach == b.reach
    assert b.where == Compare("b", "=", True) and [c.name for c in b.where_columns] == ["b"]


def test_query_refuses_a_non_predicate() -> None:
    with pytest.raises(ParameterError, match="must be a filter"):
        Query("count", where="a > 1")  # type: ignore[arg-type]
