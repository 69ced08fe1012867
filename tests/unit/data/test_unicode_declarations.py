"""Declared text must be valid Unicode text (docs/data.md, "The declaration").

A Python string may hold a lone surrogate (``'\\ud800'``: from the API, a JSON escape, or a
command-line argument whose bytes are not UTF-8). It has no UTF-8 form, so no engine can hold it in
its SQL: before, a text key, imputed value or filter literal holding one let the declaration pass
and every release then failed in the engine with "`data` ... could not be read", as if the data
were at fault; a column name, privacy unit or CSV delimiter holding one ended in "unexpected error
(UnicodeEncodeError)", and a query's or dataset's name only failed when the ledger recorded the
spend, after the aggregates were computed. Each is now refused where it is declared, from the
declaration alone, with a message naming what holds it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from snapdp.cli import main
from snapdp.data import (
    Column,
    ContributionBounds,
    CsvOptions,
    Ledger,
    NullRule,
    PrivateTable,
    Query,
    Schema,
)
from snapdp.data.frontends._sqltext import SqlError
from snapdp.data.frontends.sql import parse_predicate
from snapdp.data.model.codec import predicate_from_dict
from snapdp.data.model.predicate import Compare, InList
from snapdp.data.model.workload import Declaration
from snapdp.errors import ParameterError

LONE = ("\ud800", "\udfff", "\udcff")  # high, low, and what a non-UTF-8 argv byte becomes
RULE = "must be valid Unicode text"


@pytest.mark.parametrize("lone", LONE)
def test_a_text_key_with_a_lone_surrogate_is_refused_when_the_column_is_built(lone: str) -> None:
    with pytest.raises(ParameterError) as info:
        Column("region", "text", keys=("north", f"so{lone}uth"))
    message = str(info.value)
    assert info.value.parameter == "keys"
    assert message.startswith("column 'region' (text): a key " + RULE)
    assert f"'so\\u{ord(lone):04x}uth' holds a lone surrogate at character 3" in message
    assert "\n" not in message and message.encode("utf-8")  # one printable line


def test_an_imputed_text_value_with_a_lone_surrogate_is_refused() -> None:
    with pytest.raises(ParameterError, match=RULE) as info:
        Column("region", "text", nulls=NullRule("impute", "\ud800"))
    assert "column 'region'" in str(info.value)


def test_valid_text_outside_the_basic_plane_is_a_key_as_before() -> None:
    keys = ("é", "\U0001f600", "a\u0301", "")  # a non-BMP character, a combining accent, empty
    assert Column("k", "text", keys=keys).keys == keys


def test_a_release_over_such_keys_counts_them_in_duckdb() -> None:
    pd = pytest.importorskip("pandas")
    keys = ("é", "\U0001f600")
    frame = pd.DataFrame({"k": ["é", "\U0001f600", "\U0001f600", "x"]})
    table = PrivateTable(frame, Schema((Column("k", "text", keys=keys),)), total_epsilon=30,
                         rng=np.random.default_rng(5))  # fmt: skip
    (result,) = table.release([Query("count", by=("k",))], 30)
    assert [row.keys for row in result.rows] == [("é",), ("\U0001f600",)]
    assert [round(row.value) for row in result.rows] == [1, 2]


@pytest.mark.parametrize("where", [Compare("k", "=", "\ud800"), InList("k", ("a", "b\udcff"))])
def test_a_filter_literal_with_a_lone_surrogate_is_refused_before_anything_is_read(
    where: Compare | InList,
) -> None:
    schema = Schema((Column("k", "text", keys=("a",)),))
    table = PrivateTable(schema=schema, engine=_Unreadable(), total_epsilon=1)
    with pytest.raises(ParameterError) as info:
        table.validate([Query("count", where=where)], 1)
    assert info.value.parameter == "where"
    assert str(info.value).startswith("column 'k' (text): a literal " + RULE)


def test_a_filter_from_json_holds_the_same_rule() -> None:
    schema = Schema((Column("k", "text", keys=("a",)),))
    escaped = json.loads('{"op": "=", "column": "k", "value": {"text": "\\ud800"}}')
    where = predicate_from_dict(escaped)
    table = PrivateTable(schema=schema, engine=_Unreadable(), total_epsilon=1)
    with pytest.raises(ParameterError, match=RULE):
        table.validate([Query("count", where=where)], 1)


@pytest.mark.parametrize(
    ("build", "parameter", "what"),
    [
        (lambda: Column("a\ud800", "text"), "columns", "a column name"),
        (lambda: Schema(privacy_unit="p\udcff", bounds=ContributionBounds(1)), "privacy_unit",
         "`privacy_unit`"),
        (lambda: CsvOptions(delimiter="\ud800"), "delimiter", "`delimiter`"),
        (lambda: CsvOptions(header=False, column_names=("a", "b\udcff")), "column_names",
         "a name in `column_names`"),
        (lambda: Query("count", name="n\ud800"), "name", "`name`"),
        (lambda: Ledger(None, 1, dataset="d\ud800"), "dataset", "`dataset`"),
    ],
)  # fmt: skip
def test_other_declared_text_holds_the_same_rule(build: object, parameter: str, what: str) -> None:
    with pytest.raises(ParameterError) as info:
        build()  # type: ignore[operator]
    assert info.value.parameter == parameter
    assert str(info.value).startswith(f"{what} {RULE}")


def test_a_delimiter_that_is_not_text_is_refused_by_a_parameter_error() -> None:
    with pytest.raises(ParameterError, match="must be one character") as info:
        CsvOptions(delimiter=b",")  # type: ignore[arg-type]
    assert info.value.parameter == "delimiter"


def test_a_dataset_name_given_to_a_table_holds_the_same_rule() -> None:
    schema = Schema((Column("k", "text", keys=("a",)),))
    with pytest.raises(ParameterError, match=RULE) as info:
        PrivateTable(schema=schema, engine=_Unreadable(), ledger=Ledger(None, 1), dataset="\udcff")
    assert info.value.parameter == "dataset"


def test_sql_text_with_a_lone_surrogate_is_refused_at_its_position() -> None:
    schema = Schema((Column("k", "text", keys=("a",)),))
    table = PrivateTable(schema=schema, engine=_Unreadable(), total_epsilon=1)
    with pytest.raises(SqlError) as info:
        table.sql("SELECT COUNT(*) FROM t\nWHERE k = 'a\ud800'", 1)
    message = str(info.value)
    assert message.startswith("query, line 2, column 13: the text " + RULE)
    assert "'\\ud800' is a lone surrogate" in message
    assert message.encode("utf-8")  # the line is not echoed with the surrogate in it
    with pytest.raises(SqlError, match=r"^`--where`, line 1, column 8: the text "):
        parse_predicate("k IN ('\udcff')", Declaration(schema), label="`--where`")


def test_the_command_line_names_the_flag(tmp_path: Path) -> None:
    data = tmp_path / "t.csv"
    data.write_text("k\na\nb\n", encoding="utf-8")
    base = ["release", str(data), "--epsilon", "1", "--count"]
    runner = CliRunner()
    out = runner.invoke(main, [*base, "--keys", "k=a,\udcff"])
    assert out.exit_code == 2, out.output
    assert "--keys: column 'k' (text): a key " + RULE in out.output
    assert "could not be read" not in out.output
    out = runner.invoke(main, [*base, "--keys", "k=a", "--delimiter", "\udcff"])
    assert out.exit_code == 2 and "`--delimiter` " + RULE in out.output, out.output


class _Unreadable:
    """An engine whose data must never be read."""

    def column_names(self) -> list[str]:
        return ["k"]

    def describe(self) -> str:
        return "unreadable"

    def aggregate(self, plan: object) -> object:
        raise AssertionError("the data was read")
