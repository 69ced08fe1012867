"""Numbers a user writes are checked for size before they are built (docs/data.md, "Numbers").

Every front end — SQL (WHERE, CLAMP, OPTIONS, ORDER BY, contribution bounds), plan files, CLI
flags, the page's fields, predicates as JSON and the declaration itself — reads a number through
one parser (:func:`snapdp._validation.exact_decimal`) that refuses more than 100 digits or an
exponent beyond 1000 before it builds anything. Before, ``1e30000000`` took 44 s to expand into
an exact fraction, and a literal of over 4,300 digits ended in "unexpected error (ValueError)".
Each test asserts the refusal's kind and that it names the input; that it returns at once
follows from the check being on the text.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest
from click.testing import CliRunner

from snapdp._validation import (
    MAX_DIGITS,
    MAX_EXPONENT,
    NumberSizeError,
    check_epsilon,
    exact_decimal,
    exact_value,
)
from snapdp.cli import main
from snapdp.data import Column, Schema
from snapdp.data.frontends.toml import load_plan
from snapdp.data.model.codec import predicate_from_dict
from snapdp.data.model.workload import Declaration
from snapdp.errors import ParameterError

HUGE_EXPONENT = "1e30000000"
HUGE_BOUND = "1e10000000"
LONG = "7" * 5000  # over Python's 4,300-digit limit for int(str)
RULE = "at most 100 digits"
TOO_LARGE = (HUGE_EXPONENT, HUGE_BOUND, LONG)
IDS = ("1e30000000", "1e10000000", "5000 digits")


# -- the one parser ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "value"),
    [("0.1", Fraction(1, 10)), (" 3 ", Fraction(3)), ("-2.5e-3", Fraction(-1, 400)),
     (".5", Fraction(1, 2)), ("5.", Fraction(5)), ("+7", Fraction(7)),
     ("1e1000", Fraction(10**1000)), ("1e-1000", Fraction(1, 10**1000)),
     ("0e-5000", Fraction(0)), ("0" * 500 + "1", Fraction(1)),
     ("9" * MAX_DIGITS, Fraction(10**MAX_DIGITS - 1))],
)  # fmt: skip
def test_accepted_numbers(text: str, value: Fraction) -> None:
    assert exact_decimal(text, name="x") == value


def test_rationals_where_they_were_accepted() -> None:
    assert exact_decimal("1/3", name="x", rational=True) == Fraction(1, 3)
    assert exact_value("1/3", name="epsilon") == Fraction(1, 3)
    assert exact_value(Decimal("0.50"), name="epsilon") == Fraction(1, 2)
    with pytest.raises(ParameterError):
        exact_decimal("1/3", name="x")  # a decimal-only place keeps refusing it
    with pytest.raises(ParameterError, match="zero denominator"):
        exact_decimal("1/0", name="x", rational=True)


@pytest.mark.parametrize(
    "text",
    [*TOO_LARGE, "1e1001", "1e-1001", "0e-99999999999", "1" * (MAX_DIGITS + 1), "1." + "0" * 100,
     "1" * 101 + "/3", "1/" + "3" * 101],
)  # fmt: skip
def test_too_large_numbers_are_refused_by_name(text: str) -> None:
    with pytest.raises(NumberSizeError) as e:
        exact_decimal(text, name="upper", rational=True)
    message = str(e.value)
    assert e.value.parameter == "upper" and message.startswith("`upper` must be a number of")
    assert f"at most {MAX_DIGITS} digits" in message and f"at most {MAX_EXPONENT}" in message
    assert "Numbers" in message and len(message) < 300  # a long literal is shown cut short


def test_epsilon_and_declared_values() -> None:
    for text in TOO_LARGE:
        with pytest.raises(NumberSizeError, match="`epsilon` must be a number of at most"):
            check_epsilon("epsilon", text)
        with pytest.raises(NumberSizeError, match=r"`age\.upper`"):
            Column("age", "decimal", lower=0, upper=text)
        with pytest.raises(NumberSizeError, match=r"`age\.bins`"):
            Column("age", "decimal", bins=("0", text))
    with pytest.raises(NumberSizeError, match="`epsilon`"):
        check_epsilon("epsilon", Decimal(HUGE_BOUND))
    with pytest.raises(NumberSizeError, match=r"`age\.upper`"):
        Column("age", "decimal", lower=0, upper=Decimal(HUGE_BOUND))
    with pytest.raises(NumberSizeError, match=r"column 'age' \(integer\): a key must be an"):
        Column("age", "integer", keys=(LONG,))
    assert check_epsilon("epsilon", "0.25") == Fraction(1, 4)


def test_predicate_literals_from_json_and_code() -> None:
    for text in TOO_LARGE:
        for kind in ("integer", "decimal"):
            doc = {"op": ">", "column": "age", "value": {kind: text}}
            with pytest.raises(NumberSizeError, match="`where`"):
                predicate_from_dict(doc)


# -- SQL -----------------------------------------------------------------------------------------
DECL = Declaration(
    Schema(
        (
            Column("age", "integer", Fraction(0), Fraction(100)),
            Column("income", "decimal", Fraction(0), Fraction(1000)),
            Column("sex", "integer", keys=(1, 2)),
        )
    ),
    "people.csv",
)


def _sql_error(text: str, **how: object) -> str:
    from snapdp.data.frontends.sql import SqlError, parse_sql

    with pytest.raises(SqlError) as e:
        parse_sql(text, DECL, **({"epsilon": 1} | how))
    return str(e.value)


@pytest.mark.parametrize("number", TOO_LARGE, ids=IDS)
def test_sql_numbers_are_refused_with_a_caret(number: str) -> None:
    pytest.importorskip("sqlglot")
    queries = [
        f"SELECT COUNT(*) FROM people WHERE age > {number}",
        f"SELECT COUNT(*) FROM people WHERE income IN (1, {number})",
        f"SELECT SUM(CLAMP(income, 0, {number})) FROM people",
        f"SELECT PERCENTILE_CONT(income, {number}) FROM people",
        f"SELECT sex, COUNT(*) AS n FROM people GROUP BY sex HAVING n > {number}",
        f"SELECT SUM(income, contribution_bounds_per_group => (0, {number})) FROM people",
    ]
    for q in queries:
        message = _sql_error(q)
        assert "line 1, column" in message and RULE in message, (q, message)
        assert "^" in message and "unexpected" not in message
    message = _sql_error(
        f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon = {number}) COUNT(*) FROM people",
        epsilon=None,
    )
    assert "epsilon must have at most 100 digits" in message and "^" in message


def test_sql_long_integers_elsewhere() -> None:
    pytest.importorskip("sqlglot")
    message = _sql_error(f"SELECT sex, COUNT(*) FROM people GROUP BY sex ORDER BY {LONG}")
    assert RULE in message and "^" in message
    message = _sql_error(
        f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(max_groups_contributed = {LONG}) "
        "COUNT(*) FROM people"
    )
    assert RULE in message and "^" in message


def test_sql_where_flag_and_accepted_forms() -> None:
    pytest.importorskip("sqlglot")
    from snapdp.data.frontends.sql import SqlError, parse_predicate, parse_sql

    with pytest.raises(SqlError) as e:
        parse_predicate(f"age > {HUGE_EXPONENT}", DECL, label="`--where`")
    assert str(e.value).startswith("`--where`, line 1, column 7") and RULE in str(e.value)
    # the forms accepted before stay accepted: ε = 1/3 in OPTIONS, long but legal numbers
    text = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon = 1/3) COUNT(*) FROM people"
    (planned,) = parse_sql(text, DECL).workload.queries
    assert planned.epsilon == Fraction(1, 3)
    parse_predicate("income > 1e-300 AND age < 99.5", DECL)


# -- plan files ----------------------------------------------------------------------------------
PLAN = """[data]
source = "t.csv"
total_epsilon = 3

[columns]
age = {{ type = "integer", lower = 0, upper = {upper} }}
g = {{ type = "integer", bins = [0, {edge}] }}

[[query]]
statistic = "sum"
column = "age"
epsilon = {epsilon}
"""


@pytest.mark.parametrize(
    ("field", "key", "line"),
    [("upper", "columns.age.upper", 6), ("edge", "columns.g.bins", 7),
     ("epsilon", "query[1].epsilon", 12)],
)  # fmt: skip
@pytest.mark.parametrize("number", [HUGE_EXPONENT, HUGE_BOUND, "1." + "0" * 200], ids=IDS)
def test_plan_file_numbers(tmp_path: Path, field: str, key: str, line: int, number: str) -> None:
    values = {"upper": "100", "edge": "10", "epsilon": "1"} | {field: number}
    path = tmp_path / "plan.toml"
    path.write_text(PLAN.format(**values))
    with pytest.raises(ParameterError) as e:
        load_plan(path)
    message = str(e.value)
    assert f"line {line}, key `{key}`" in message and RULE in message, message


def test_plan_file_integer_over_python_limit(tmp_path: Path) -> None:
    path = tmp_path / "plan.toml"
    path.write_text(PLAN.format(upper=LONG, edge="10", epsilon="1"))
    with pytest.raises(ParameterError) as e:
        load_plan(path)
    assert "line 6" in str(e.value) and RULE in str(e.value) and LONG not in str(e.value)
    path.write_text(PLAN.format(upper="9" * 200, edge="10", epsilon="1"))  # under the int limit
    with pytest.raises(ParameterError, match=r"line 6, key `columns.age.upper`"):
        load_plan(path)


# -- flags ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("number", TOO_LARGE, ids=IDS)
def test_flags(tmp_path: Path, number: str) -> None:
    data = tmp_path / "t.csv"
    data.write_text("age,g\n1,2\n")
    base = ["release", str(data), "--dry-run"]
    cases = [
        ([*base, "--epsilon", number, "--count"], "--epsilon"),
        ([*base, "--epsilon", "1", "--sum", f"age:0:{number}"], "--sum"),
        ([*base, "--epsilon", "1", "--quantiles", f"age:0:100:0.5,{number}"], "--quantiles"),
        ([*base, "--epsilon", "1", "--column", f"age:integer:0:{number}", "--sum", "age"],
         "--column"),
        ([*base, "--epsilon", "1", "--count", "--by", "g", "--column", "g:integer", "--keys",
          f"g={number}"], "--keys"),
        ([*base, "--epsilon", "1", "--count", "--by", "g", "--bins", f"g=0,{number}"], "g.bins"),
        ([*base, "--epsilon", "1", "--count", "--where", f"age > {number}"], "--where"),
    ]  # fmt: skip
    for args, word in cases:
        out = CliRunner().invoke(main, args)
        assert out.exit_code != 0, (args, out.output)
        assert word in out.output and "unexpected" not in out.output, (args, out.output)
        # an integer key written with an exponent breaks the key's form first; any too long
        # number breaks the size rule
        assert RULE in out.output or (word == "--keys" and number != LONG), (args, out.output)


# -- the page ------------------------------------------------------------------------------------
def _document(**fields: str) -> dict[str, object]:
    from snapdp.ui._document import blank_document

    doc = blank_document()
    doc["data"] = {**doc["data"], "total_epsilon": "3"}  # type: ignore[dict-item]
    column = {k: "" for k in ("name", "type", "lower", "upper", "keys", "bins", "nulls")}
    doc["columns"] = [column | {"name": "age", "type": "integer"} | fields]
    return doc


@pytest.mark.parametrize("number", TOO_LARGE, ids=IDS)
def test_page_fields(tmp_path: Path, number: str) -> None:
    from snapdp.ui._document import FieldError
    from snapdp.ui._workload_json import load_plan

    for field, value in (("upper", number), ("keys", f"1, {number}"), ("bins", f"0, {number}")):
        doc = _document(lower="0", **{field: value})
        with pytest.raises(FieldError) as e:
            load_plan(doc, None, tmp_path)
        assert e.value.field == f"columns[0].{field}" and RULE in str(e.value)
    doc = _document()
    doc["queries"] = [{**doc["queries"][0], "how": "epsilon", "value": number}]  # type: ignore[index]
    with pytest.raises(FieldError) as e:
        load_plan(doc, None, tmp_path)
    assert e.value.field == "query[1].value" and RULE in str(e.value)
