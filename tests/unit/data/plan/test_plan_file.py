"""Plan files: the example loads as written; bad files name the file, the line and the key."""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path

import pytest

from snapdp.data import Plan
from snapdp.data.frontends._toml import KeyLocator
from snapdp.errors import ParameterError

EXAMPLE = Path(__file__).resolve().parents[4] / "docs" / "examples" / "plan.toml"


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "plan.toml"
    p.write_text(text, encoding="utf-8")
    return p


def test_the_example_plan_loads_as_written() -> None:
    plan = Plan.load(EXAMPLE)
    s = plan.schema
    assert s.privacy_unit == "pid" and s.bounds.max_rows_per_unit == 2
    assert plan.total_epsilon == 20
    assert s.column("sex").keys == (0, 1) and s.column("educ").keys == tuple(range(1, 17))
    assert s.column("income").upper == 500000 and s.column("income").type == "decimal"
    q = [pq.query for pq in plan.queries]
    assert [x.statistic for x in q] == ["count", "mean", "quantiles", "count"]
    assert q[0].by == ("sex", "educ") and plan.queries[0].epsilon == Fraction(1, 2)
    assert plan.queries[1].accuracy == 10000 and plan.queries[1].confidence == 0.95
    assert q[2].quantiles == (Fraction(1, 4), Fraction(1, 2), Fraction(3, 4))
    assert q[3].bins == (("age", tuple(Fraction(e) for e in (0, 18, 30, 45, 65, 101))),)
    assert plan.queries[3].weight == 1
    assert plan.queries[1].group_size is None  # no default: two-phase (docs/plans.md)
    assert plan.queries[1].two_phase and not plan.queries[2].two_phase
    assert (plan.queries[2].accuracy, plan.queries[2].group_size) == (10, 1500)
    assert Path(str(plan.source_path())) == EXAMPLE.parent / "PUMS_dup.csv"


HEAD = """[data]
source = "d.csv"
privacy_unit = "pid"
max_rows_per_unit = 2
total_epsilon = 1

[columns]
age = { type = "integer", lower = 0, upper = 100 }
sex = { type = "integer", keys = [0, 1] }
"""


@pytest.mark.parametrize(
    ("body", "line", "key", "rule"),
    [
        # unknown column
        ('[[query]]\nstatistic = "count"\nby = ["nope"]\nepsilon = 0.5\n', 13, "query[1].by",
         "'nope' is not declared"),
        # keys of the wrong type
        (None, 9, "columns.sex.keys", "a key must be an integer"),
        # a target that cannot be met within the total
        ('[[query]]\nstatistic = "count"\naccuracy = 0.5\n', 5, "data.total_epsilon",
         "cannot be met within total_epsilon = 1"),
        # a missing bound
        ('[[query]]\nstatistic = "mean"\ncolumn = "sex"\nepsilon = 0.5\n', 9, "columns.sex",
         "needs `lower` and `upper` bounds"),
        # an unknown key
        ('[[query]]\nstatistic = "count"\nepsilom = 0.5\n', 13, "query[1].epsilom",
         "unknown key 'epsilom'"),
        # neither epsilon nor accuracy nor weight
        ('[[query]]\nstatistic = "count"\n', 11, "query[1]", "exactly one of"),
        # a grouping column without keys or bins
        ('[[query]]\nstatistic = "count"\nby = "age"\nepsilon = 1\n', 13, "query[1].by",
         "no declared `keys` or `bins`"),
    ],
)  # fmt: skip
def test_bad_plan_files_name_file_line_and_key(
    tmp_path: Path, body: str | None, line: int, key: str, rule: str
) -> None:
    text = HEAD + "\n" + (body or '[[query]]\nstatistic = "count"\nepsilon = 1\n')
    if body is None:
        text = text.replace("keys = [0, 1]", 'keys = ["a", "b"]')
    path = _write(tmp_path, text)
    with pytest.raises(ParameterError) as info:
        Plan.load(path).preview()
    message = str(info.value)
    assert message.startswith(f"{path}, line {line}, key `{key}`: "), message
    assert rule in message
    assert "\n" not in message


def test_second_query_is_located(tmp_path: Path) -> None:
    body = (
        '[[query]]\nstatistic = "count"\nepsilon = 0.5\n\n'
        '[[query]]\nstatistic = "sum"\ncolumn = "income"\nepsilon = 0.5\n'
    )
    path = _write(tmp_path, HEAD + "\n" + body)
    with pytest.raises(ParameterError, match=re.escape("line 17, key `query[2].column`")):
        Plan.load(path)


def test_toml_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, HEAD + "\n[[query]]\nstatistic = count\n")
    with pytest.raises(ParameterError, match=re.escape(f"{path}, line 12: not valid TOML")):
        Plan.load(path)


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ParameterError, match="cannot be read"):
        Plan.load(tmp_path / "absent.toml")


def test_aliases_and_bins_tables(tmp_path: Path) -> None:
    text = HEAD.replace("privacy_unit", "unit").replace("max_rows_per_unit", "k") + (
        '\n[[query]]\nstat = "count"\ngroup_by = ["sex", "age"]\n'
        "bins = { age = [0, 50, 101] }\ntarget = 40\nconfidence = 0.9\ngroup_size = 500\n"
    )
    plan = Plan.load(_write(tmp_path, text))
    pq = plan.queries[0]
    assert plan.schema.privacy_unit == "pid" and plan.schema.bounds.max_rows_per_unit == 2
    assert pq.query.bins == (("age", (Fraction(0), Fraction(50), Fraction(101))),)
    assert (pq.accuracy, pq.confidence, pq.group_size) == (40, 0.9, 500)


def test_decimals_are_exact(tmp_path: Path) -> None:
    text = HEAD.replace("upper = 100 }", "upper = 100.1 }") + (
        '\n[[query]]\nstatistic = "sum"\ncolumn = "age"\nepsilon = 0.1\n'
    )
    plan = Plan.load(_write(tmp_path, text))
    assert plan.schema.column("age").upper == Fraction(1001, 10)
    assert plan.queries[0].epsilon == Fraction(1, 10)


def test_locator_finds_dotted_quoted_and_inline_keys() -> None:
    loc = KeyLocator(
        '[data]\nsource = "x"\n"total_epsilon" = 1\n[columns]\n'
        'a = { type = "integer", lower = 0 }\nb.type = "text"\n[[query]]\n[[query]]\nepsilon = 1\n'
    )
    assert loc.line(("data", "total_epsilon")) == 3
    assert loc.line(("columns", "a", "lower")) == 5
    assert loc.line(("columns", "b", "type")) == 6
    assert loc.line(("query", 1, "epsilon")) == 9
    assert loc.line(("query", 1, "weight")) == 8  # the nearest located parent
