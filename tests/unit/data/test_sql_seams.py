"""The SQL front end's seams (issue 30 items 2, 9, 10, 11, 12, 14; docs/sql.md): OPTIONS cannot
set or change the privacy unit; every part of the tree is on an allow-list (nothing silently
ignored); the pre-pass reads tokens, never comments or literals; output names are unique; OPTIONS
errors have a caret and no Python repr; `snapdp sql` refuses from the parameters before it opens
the source."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from snapdp.cli import main
from snapdp.data import Column, ContributionBounds, PrivateTable, Query, Schema
from snapdp.data.frontends.sql import SqlError, parse_predicate, parse_sql
from snapdp.data.model.predicate import Compare
from snapdp.data.model.workload import Declaration
from snapdp.errors import ParameterError

pytest.importorskip("sqlglot")

COLUMNS = (
    Column("age", "integer", Fraction(0), Fraction(100), bins=(0, 18, 65, 100)),
    Column("sex", "integer", keys=(1, 2)),
    Column("income", "decimal", Fraction(0), Fraction(1000)),
    Column("city", "text", keys=("a", "b", "c")),
    Column("x", "decimal"),
    Column("pid", "text"),
)
ROWS = Schema(COLUMNS)  # no privacy unit: the neighbour is one row
UNIT = Schema(COLUMNS, "pid", bounds=ContributionBounds(1, None, None))
DECL = Declaration(ROWS, "people.csv")
PREFIX = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS("


def _refusal(text: str, decl: Declaration = DECL, **kw: Any) -> tuple[str, str, str]:
    with pytest.raises(SqlError) as info:
        parse_sql(text, decl, **({"epsilon": 1} | kw))
    first, shown, caret = str(info.value).split("\n")
    assert "Fraction(" not in first  # no Python repr
    return first, shown, caret


def _caret_under(shown: str, caret: str) -> str:
    """The text the caret is drawn under."""
    start = caret.index("^")
    return shown[start : start + caret.count("^")]


class _Untouched:
    """An engine that fails if anything of the data is read."""

    def column_names(self) -> list[str]:
        raise AssertionError("the source was opened")

    def aggregate(self, plan: object) -> Any:
        raise AssertionError("the data was read")

    def describe(self) -> str:
        return "untouched"


# -- item 2: OPTIONS cannot set or change who is protected ----------------------------------------
@pytest.mark.parametrize(
    ("schema", "unit"),
    [(ROWS, "pid"), (ROWS, "city"), (UNIT, "city"), (UNIT, "'city'")],
)
def test_options_privacy_unit_other_than_the_declared_one_is_refused(
    schema: Schema, unit: str
) -> None:
    """D and D' differ in one row (the declared neighbour without a unit). Were OPTIONS to make
    pid the unit with max_rows_contributed = 1, D' = D plus a row of a person already in D could
    keep the new row instead of the old one: a count by city moves by 1 in two cells, sensitivity
    2 against the 1 calibrated. So the query is refused on D and on D' alike, before the data is
    read and with nothing spent."""
    text = PREFIX + f"privacy_unit_column = {unit}, max_rows_contributed = 1) city, COUNT(*) " \
        "FROM people GROUP BY city"  # fmt: skip
    first, shown, caret = _refusal(text, Declaration(schema, "people.csv"))
    assert "privacy_unit_column" in first and "set in the declaration" in first
    assert _caret_under(shown, caret) == f"privacy_unit_column = {unit}"
    for _ in ("D", "D'"):  # whatever the rows: no engine is touched, nothing is spent
        table = PrivateTable(schema=schema, engine=_Untouched(), total_epsilon=5)
        with pytest.raises(SqlError, match="privacy_unit_column"):
            table.sql(text, 1)
        assert table.remaining == 5


def test_options_restating_the_declared_unit_still_releases(tmp_path: Path) -> None:
    path = tmp_path / "people.csv"
    lines = ["pid,age,sex,income,city,x"] + [
        f"{i % 7},{i % 90},{1 + i % 2},{i * 3 % 1000},{'abc'[i % 3]},0.5" for i in range(60)
    ]
    path.write_text("\n".join(lines) + "\n")
    text = PREFIX + "privacy_unit_column = pid, max_rows_contributed = 2) city, COUNT(*) AS n " \
        "FROM people GROUP BY city"  # fmt: skip
    q = parse_sql(text, Declaration(UNIT), epsilon=1)
    assert q.workload.schema.privacy_unit == "pid"
    assert q.workload.schema.bounds == ContributionBounds(2, None, None)
    table = PrivateTable(str(path), UNIT, total_epsilon=5, rng=np.random.default_rng(1))
    (result,) = table.sql(text, 1)
    assert result.query.name == "n" and len(result.rows) == 3
    assert table.remaining == 4


# -- item 9: an allow-list over the whole tree ----------------------------------------------------
IGNORED = [
    ("SELECT COUNT(*) FROM people TABLESAMPLE (10 PERCENT)", "TABLESAMPLE", "TABLESAMPLE"),
    ("SELECT COUNT(*) FROM people USING SAMPLE 10%", "USING SAMPLE", "USING"),
    ("SELECT sex, COUNT(*) AS n FROM people GROUP BY sex QUALIFY n > 3", "QUALIFY", "QUALIFY"),
    ("SELECT COUNT(*) FROM people PIVOT (SUM(income) FOR sex IN (1, 2))", "PIVOT", "PIVOT"),
    ("SELECT COUNT(*) INTO t FROM people", "INTO", "INTO"),
    ("SELECT COUNT(*) FROM people FOR UPDATE", "FOR UPDATE", "FOR"),
    ("SELECT sex, COUNT(*) FROM people GROUP BY ALL", "GROUP BY ALL", "ALL"),
    ("SELECT COUNT(*) FROM other.people", "qualified table name", "other"),
    ("SELECT COUNT(*) FROM db.other.people", "qualified table name", "other"),
    ("SELECT SUM(income) FILTER (WHERE age > 3) FROM people", "FILTER", "SUM"),
    (PREFIX + "garbage) COUNT(*) FROM people", "name = value", "garbage"),
    (PREFIX + "epsilon = 1, epsilon = 2) COUNT(*) FROM people", "epsilon twice", "epsilon = 2"),
    (PREFIX + "epsilon 1) COUNT(*) FROM people", "name = value", "epsilon 1"),
    (PREFIX + "epsilon = 1,) COUNT(*) FROM people", "name = value", ")"),
    (PREFIX + "max_rows_contributed = 1 2) COUNT(*) FROM people", "one number", "1 2"),
]


@pytest.mark.parametrize(("text", "word", "under"), IGNORED)
def test_a_clause_the_release_would_ignore_is_refused(text: str, word: str, under: str) -> None:
    first, shown, caret = _refusal(text)
    assert word in first, first
    assert _caret_under(shown, caret) == under


ACCEPTED = [
    "SELECT COUNT(*), COUNT(income) FROM people",
    "SELECT sex, SUM(income), AVG(income) FROM people WHERE city IN ('a', 'c') GROUP BY sex",
    "SELECT age, VAR_POP(income), STDDEV_SAMP(income) FROM people WHERE x > 0 GROUP BY age",
    "SELECT sex, city, COUNT(*) AS n FROM people GROUP BY sex, city HAVING n > 2 ORDER BY n DESC",
    "SELECT COUNT(*) FROM people WHERE NOT (sex = 1 OR income < 100.5) AND x <> 0",
    "SELECT PERCENTILE_CONT(income, 0.25), QUANTILE_CONT(age, 0.75), VAR_SAMP(income), "
    "STDDEV_POP(income), VARIANCE(x), STDDEV(x), MEDIAN(x) FROM people "
    "WHERE sex IN (1, 2) AND age > 20.5 AND age NOT IN (3) AND age NOT BETWEEN 4 AND 5",
    "SELECT sex, PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY income) AS med FROM people "
    "GROUP BY sex ORDER BY 2 ASC NULLS LAST, sex",
    "SELECT SUM(CLAMP(x, -1, 1)), AVG(x, contribution_bounds_per_group => (-1, 1)) FROM people",
    "select p.SEX, count(1) as N from PEOPLE as p where P.Age >= 18 AND p.\"city\" = 'a' "
    "group by p.sex having count(1) > 3",
    "SELECT COUNT(*) FROM people WHERE day >= DATE '2024-01-02' AND day < CAST('2024-02-01' AS "
    "DATE) AND day IS NOT NULL",
    "SELECT COUNT(*) WHERE age BETWEEN -1 AND 5",
    PREFIX + "epsilon = 1, max_groups_contributed = 1, max_rows_contributed = 2) city, "
    "COUNT(*), AVG(income) FROM people WHERE age IS NOT NULL GROUP BY city",
]


@pytest.mark.parametrize("text", ACCEPTED)
def test_every_accepted_construct_still_compiles(text: str) -> None:
    schema = Schema((*COLUMNS, Column("day", "date")), "pid", bounds=UNIT.bounds)
    assert parse_sql(text, Declaration(schema), epsilon=1).queries


# -- item 10: the pre-pass reads tokens -----------------------------------------------------------
def test_bounds_in_a_comment_change_nothing() -> None:
    q = parse_sql(
        "SELECT SUM(x /* , contribution_bounds_per_group => (0, 5) */) FROM people",
        DECL, epsilon=1,
    )  # fmt: skip
    assert q.workload.schema.column("x").lower is None  # x stays without bounds
    q = parse_sql(
        "SELECT SUM(income -- , contribution_bounds_per_group => (0, 5)\n) FROM people",
        DECL, epsilon=1,
    )  # fmt: skip
    assert q.workload.schema.column("income").upper == 1000


def test_a_literal_that_looks_like_bounds_is_kept_verbatim() -> None:
    text = ", contribution_bounds_per_group => (0, 5)"
    schema = Schema((*COLUMNS[:3], Column("city", "text", keys=("a", text)), *COLUMNS[4:]))
    q = parse_sql(
        f"SELECT SUM(income) FROM people WHERE city = '{text}'", Declaration(schema), epsilon=1
    )
    assert q.queries == [Query("sum", "income", where=Compare("city", "=", text))]


def test_options_in_a_comment_or_a_literal_are_not_options() -> None:
    q = parse_sql(
        PREFIX + "epsilon = 1 /* , epsilon = 9 */) COUNT(*) FROM people -- OPTIONS(epsilon = 9)",
        DECL,
    )  # fmt: skip
    assert q.epsilons == [Fraction(1)]


# -- item 11: output names are unique -------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "under"),
    [
        ("SELECT sex, COUNT(*) AS sex FROM people GROUP BY sex HAVING sex > 5", "COUNT(*) AS sex"),
        ("SELECT COUNT(*) AS n, SUM(income) AS N FROM people", "SUM(income) AS N"),
        ("SELECT SUM(income), SUM(income) FROM people", "SUM(income)"),
    ],
)
def test_an_output_name_used_twice_is_refused_at_the_second(text: str, under: str) -> None:
    first, shown, caret = _refusal(text)
    assert "used twice" in first
    start = caret.index("^")
    assert shown[start:].startswith(under) and start == shown.rindex(under)


# -- item 12: OPTIONS messages ---------------------------------------------------------------------
def test_options_messages_name_the_option_with_a_caret_and_no_repr() -> None:
    first, shown, caret = _refusal(PREFIX + "privacy_unit_column = nosuch) COUNT(*) FROM people")
    assert "column 'nosuch' is not declared" in first and "bound" not in first
    assert _caret_under(shown, caret) == "privacy_unit_column = nosuch"
    first, shown, caret = _refusal(PREFIX + "epsilon = 0) COUNT(*) FROM people", epsilon=None)
    assert "epsilon must be > 0, not 0" in first and "--epsilon" not in first
    assert "Fraction" not in first and _caret_under(shown, caret) == "epsilon = 0"
    first, shown, caret = _refusal(PREFIX + "epsilon = -0.5) COUNT(*) FROM people", epsilon=None)
    assert "not -0.5" in first and _caret_under(shown, caret) == "epsilon = -0.5"
    first, shown, caret = _refusal(PREFIX + "max_rows_contributed = 'x') COUNT(*) FROM people")
    assert "max_rows_contributed must be an integer >= 1, not x" in first
    assert _caret_under(shown, caret) == "max_rows_contributed = 'x'"
    first, shown, caret = _refusal(PREFIX + "max_rows_contributed = 2) COUNT(*) FROM people")
    assert "`privacy_unit_column`" in first
    assert _caret_under(shown, caret) == "max_rows_contributed = 2"


# -- item 14: `snapdp sql` refuses from the parameters before it opens the source -----------------
def test_cli_refuses_a_too_large_epsilon_before_opening_a_missing_source(tmp_path: Path) -> None:
    decl = tmp_path / "decl.toml"
    decl.write_text(
        '[data]\nsource = "missing.csv"\n\n[columns]\nsex = { type = "integer", keys = [1, 2] }\n'
    )
    ledger = tmp_path / "budget.db"
    args = ["sql", "SELECT sex, COUNT(*) FROM missing GROUP BY sex", "--declaration", str(decl)]
    out = CliRunner().invoke(
        main, [*args, "--epsilon", "100000", "--ledger", str(ledger), "--total-epsilon", "1e6",
               "--json"],
    )  # fmt: skip
    assert out.exit_code == 2, out.output
    message = json.loads(out.output)["error"]
    assert "too large" in message and "epsilon" in message, message
    assert "missing" not in message and not ledger.exists()
    ok = CliRunner().invoke(main, [*args, "--epsilon", "1", "--json"])
    assert ok.exit_code != 0 and "missing.csv" in ok.output  # then the source: not found


@pytest.mark.parametrize(
    ("condition", "under"),
    [("age > 3 FOR UPDATE", "FOR"), ("age > 3 QUALIFY age > 5", "QUALIFY")],
)
def test_a_plan_condition_drops_nothing_after_it(condition: str, under: str) -> None:
    """A plan file's `where = "…"` (or `--where`) is checked on the same allow-list."""
    with pytest.raises(SqlError) as info:
        parse_predicate(condition, DECL)
    first, shown, caret = str(info.value).split("\n")
    assert first.startswith("where, line 1, column ") and under in first
    assert _caret_under(shown, caret) == under


def test_a_non_text_query_or_condition_is_named_by_its_type() -> None:
    with pytest.raises(ParameterError, match=r"must be text, not list$"):
        parse_sql(["SELECT COUNT(*)"], DECL, epsilon=1)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match=r"must be text, not int$"):
        parse_predicate(3, DECL)  # type: ignore[arg-type]


def test_api_refuses_a_too_large_epsilon_before_touching_the_engine() -> None:
    table = PrivateTable(schema=ROWS, engine=_Untouched(), total_epsilon=10**6)
    with pytest.raises(ParameterError, match="too large"):
        table.sql("SELECT COUNT(*) FROM people", 100000)
    assert table.remaining == 10**6
