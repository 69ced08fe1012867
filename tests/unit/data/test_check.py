"""``snapdp check`` (issue 11, item 3): the owner's report, WITHOUT privacy, counted by hand."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from snapdp.cli import main
from snapdp.data.model.schema import Column, ContributionBounds, NullRule, Schema
from snapdp.data.owner.check import WARNING, check

CSV = (
    "g,v,u,t,d\n"
    "0,1.5,a,x,2024-01-01\n"
    "1,2.5,a,y,2024-02-30\n"
    "1,Alice,b,x,2024-01-01\n"
    "2.5,3,b,z,\n"
    ",4,c,x,2024-01-01\n"
    "1e0,70,,x,2024-01-01\n"
    "0,100,d,q,2024-01-01\n"
    "0,5,a,x,2024-01-01\n"
    "0,-1,a,x,2024-01-01\n"
    "broken,line\n"
)
SCHEMA = Schema(
    (
        Column("g", "integer", keys=(0, 1, 2)),
        Column("v", "decimal", lower=Fraction(0), upper=Fraction(10)),
        Column("t", "text", keys=("x", "y"), nulls=NullRule("impute", "x")),
        Column("d", "date"),
    ),
    privacy_unit="u",
    bounds=ContributionBounds(2, 1, 1),
    rows=8,
)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    f = tmp_path / "c.csv"
    f.write_text(CSV)
    return f


def test_report_counts_by_hand(data: Path) -> None:
    r = check(data, SCHEMA)
    assert r.rows == 9 and r.declared_rows == 8 and not r.fits  # the malformed line is skipped
    g, v, t, d = r.columns
    assert (g.nulls, g.cast_failures, g.examples, g.outside_domain) == (1, 1, ["2.5"], 0)
    assert (v.nulls, v.cast_failures, v.examples, v.below, v.above) == (0, 1, ["Alice"], 1, 2)
    assert t.outside_domain == 2 and t.undeclared == [("q", 1), ("z", 1)]
    assert (d.nulls, d.cast_failures, d.examples, d.below, d.outside_domain) == (
        1, 1, ["2024-02-30"], None, None,
    )  # fmt: skip
    assert r.unit is not None
    u = r.unit
    assert (u.null_units, u.units, u.max_rows_per_unit) == (1, 4, 4)
    # unit a: 4 rows (k = 2: 2 beyond); cells (g, t): a has (0,x)×3, (1,y)×1 → 2 cells (1 beyond
    # L0 = 1); (a,(0,x)) has 3 rows (2 beyond L∞ = 1); b: "1,Alice,b,x" → (1,x); "2.5" has a
    # null g → no cell.
    assert u.over_rows_per_unit == (1, 2)
    assert u.over_groups_per_unit == (1, 1)
    assert u.over_rows_per_group == (1, 2)


def test_a_fitting_table_fits(tmp_path: Path) -> None:
    f = tmp_path / "ok.csv"
    f.write_text("g,v\n0,1\n1,2\n2,3\n")
    schema = Schema(
        (Column("g", "integer", keys=(0, 1, 2)), Column("v", "integer", lower=0, upper=5)), rows=3
    )
    r = check(f, schema)
    assert r.fits and "every cell fits" in r.to_text()
    assert r.to_text().endswith("fits the declaration")


def test_pandas_input(tmp_path: Path) -> None:
    frame = pd.DataFrame({"g": [0, 1, None, 7], "v": [1.0, float("nan"), 3.0, 50.0]})
    schema = Schema(
        (Column("g", "integer", keys=(0, 1)), Column("v", "decimal", lower=0, upper=10))
    )
    g, v = check(frame, schema).columns
    assert g.nulls == 1 and g.outside_domain == 1 and g.undeclared == [("7.0", 1)]
    assert v.nulls == 1 and v.above == 1


def test_cli_text_json_and_warning_first(data: Path) -> None:
    args = [
        "check", str(data), "--column", "v:decimal:0:10", "--keys", "g=0,1,2", "--keys", "t=x,y",
        "--privacy-unit", "u", "--max-rows-per-unit", "2", "--rows", "8",
    ]  # fmt: skip
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[0] == WARNING and "WITHOUT privacy" in WARNING
    assert "'Alice'" in res.output and "DOES NOT match the declared rows = 8" in res.output
    res = CliRunner().invoke(main, [*args, "--json"])
    assert res.exit_code == 0
    out = json.loads(res.output)
    assert out["warning"] == WARNING and out["rows"] == 9 and out["fits"] is False
    assert out["unit"]["over_rows_per_unit"] == [1, 2]


def test_cli_keys_take_their_type_from_the_literals(tmp_path: Path) -> None:
    f = tmp_path / "k.csv"
    f.write_text("g\n1\n1.0\n2\n00\nx\n")
    res = CliRunner().invoke(main, ["check", str(f), "--keys", "g=1,2", "--json"])
    g = json.loads(res.output)["columns"][0]
    assert g["type"] == "integer" and g["cast_failures"] == 1 and g["outside_domain"] == 1
    assert g["undeclared"] == [["00", 1]]  # "00" is the integer 0, not a declared key


def test_cli_never_opens_a_ledger_and_errors_are_one_line(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["check", str(tmp_path / "nope.csv")])
    assert res.exit_code == 2 and "not found" in res.output and "Traceback" not in res.output
    res = CliRunner().invoke(main, ["check", "x.csv", "--ledger", "l.db"])
    assert res.exit_code == 2  # no such option: check spends nothing
    assert not list(tmp_path.glob("*.db"))
    res = CliRunner().invoke(main, ["check", "x.csv", "--column", "v:decimal:0"])
    assert res.exit_code == 2 and "--column" in res.output
