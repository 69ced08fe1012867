"""Messages name what the user wrote and show numbers as typed (issue 30, item 12): the flag or
the plan-file key actually used, the bounds exactly, numbers in labels capped in length, and never
a Python repr such as ``Fraction(0, 1)``."""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from snapdp._rational import shown_number, shown_rational
from snapdp._validation import check_epsilon, check_positive_finite
from snapdp.cli import main
from snapdp.data import Plan, Query
from snapdp.data.model.predicate import Compare
from snapdp.errors import ParameterError

HEAD = """[data]
source = "d.csv"
total_epsilon = 1

[columns]
age = { type = "integer", lower = 0, upper = 100 }
sex = { type = "integer", keys = [0, 1] }
"""


def _plan(tmp_path: Path, body: str, head: str = HEAD) -> Path:
    (tmp_path / "d.csv").write_text("age,sex\n5,1\n")
    path = tmp_path / "plan.toml"
    path.write_text(head + "\n" + body)
    return path


def _cli(*args: str) -> str:
    out = CliRunner().invoke(main, list(args))
    assert out.exit_code == 2, out.output
    return " ".join(out.output.split())


def test_shown_numbers_are_exact_and_short() -> None:
    assert shown_rational(Fraction("5.000000000000001")) == "5.000000000000001"
    assert shown_rational(Fraction(10) ** 400) == "1e400"
    assert shown_rational(Fraction("1.0000000000000001e400")) == "1.0000000000000001e400"
    assert shown_rational(Fraction(1, 3)) == "1/3"
    assert shown_rational(Fraction(1, 3 * 10**400)) == "≈3.33333333333e-401"
    assert shown_rational(-Fraction(7, 10**400)) == "-7e-400"
    assert shown_number(Fraction(0)) == "0"
    assert shown_number(Decimal("1E+2")) == "100"
    assert shown_number(np.float64(0.5)) == "0.5"
    assert shown_number(Decimal("NaN")) == "nan"


def test_epsilon_zero_prints_no_repr() -> None:
    """Was: "`epsilon` must be > 0, not Fraction(0, 1)"."""
    for zero in (Fraction(0), Decimal(0), 0, "0"):
        with pytest.raises(ParameterError) as info:
            check_epsilon("epsilon", zero)
        assert str(info.value) == "`epsilon` must be > 0, not " + (
            "'0'" if isinstance(zero, str) else "0"
        )
    with pytest.raises(ParameterError) as info:
        check_positive_finite("resolution", Fraction(-1, 3))
    assert str(info.value) == "`resolution` must be > 0, not -1/3"


def test_epsilon_zero_in_a_plan_file_names_its_key(tmp_path: Path) -> None:
    path = _plan(tmp_path, '[[query]]\nstatistic = "count"\nepsilon = 0\n')
    want = f"{path}, line 11, key `query[1].epsilon`: `epsilon` must be > 0, not 0"
    with pytest.raises(ParameterError) as info:
        Plan.load(path).preview()
    assert str(info.value) == want
    # the command line keeps the file's key (was: "`--epsilon` must be > 0, not Fraction(0, 1)")
    assert _cli("plan", str(path)).endswith(f"Error: {want}")


def test_epsilon_zero_on_the_page_names_its_field(tmp_path: Path) -> None:
    from snapdp.ui._document import FieldError, blank_document
    from snapdp.ui._workload_json import load_plan

    doc = blank_document()
    doc["data"]["total_epsilon"] = "1"
    doc["queries"] = [{"statistic": "count", "column": "", "by": "", "bins": "",
                       "quantiles": "", "how": "epsilon", "value": "0"}]  # fmt: skip
    with pytest.raises(FieldError) as info:
        load_plan(json.loads(json.dumps(doc)), str(tmp_path / "d.csv"), tmp_path)
    assert str(info.value) == "`epsilon` must be > 0, not 0"
    assert info.value.field == "query[1].value"


def test_plan_file_bins_errors_name_the_key_not_a_flag(tmp_path: Path) -> None:
    """Was: "`--bins` for 'age', which is not a `--by` column" for a plan file."""
    path = _plan(tmp_path, '[[query]]\nstatistic = "count"\nby = ["sex"]\n'
                           'bins = { age = [1, 2] }\nepsilon = 0.5\n')  # fmt: skip
    assert _cli("plan", str(path)).endswith(
        f"Error: {path}, line 12, key `query[1].bins`: `bins` for 'age', which is not a `by` column"
    )
    second = '[[query]]\nstatistic = "count"\nby = ["age"]\nbins = [3, 2]\nepsilon = 0.5\n'
    path = _plan(tmp_path, '[[query]]\nstatistic = "count"\nepsilon = 0.5\n\n' + second)
    with pytest.raises(ParameterError) as info:
        Plan.load(path).preview()
    assert str(info.value) == (
        f"{path}, line 16, key `query[2].bins`: column 'age': bins must be at least two "
        "strictly increasing edges"
    )


def test_quantile_bound_errors_name_the_quantile_flag_and_the_bounds_as_typed(
    tmp_path: Path,
) -> None:
    data = tmp_path / "d.csv"
    data.write_text("x\n5\n")
    ledger = str(tmp_path / "ledger.json")
    common = ["--epsilon", "1", "--total-epsilon", "1", "--ledger", ledger]
    # was: "`--lower` must be < `--upper`, not lower=0, upper=0", after reading the data
    out = _cli("release", str(data), "--quantiles", "x:5:5.000000000000001:0.5",
               "--quantile-method", "exponential", "--column", "x:integer", *common)  # fmt: skip
    assert out.endswith(
        "Error: --quantiles: the bounds [5, 5.000000000000001] hold one integer (5); the "
        "exponential method needs two or more: widen them"
    )
    # was: "`--sum/--mean/--var/--std/--var-samp/--std-samp` bounds must be numbers, …"
    out = _cli("release", str(data), "--quantiles", "x:5:abc:0.5", *common)
    assert out.endswith("Error: `--quantiles` bounds must be numbers, not 'x:5:abc'")
    out = _cli("release", str(data), "--quantiles", "x:5:4:0.5", *common)
    assert out.endswith("Error: `--quantiles` needs LOWER < UPPER, not 'x:5:4'")
    # was: "bounds [5, 5000000000000001/1000000000000000]"
    out = _cli("release", str(data), "--sum", "x:5:5.000000000000001", *common)
    assert out.endswith(
        "column 'x': bounds [5, 5.000000000000001] hold no two distinct multiples of 1e-9: "
        "widen them"
    )
    assert not Path(ledger).exists()  # refused before anything was spent


def test_quantile_bound_errors_in_a_plan_file_name_the_bound_key(tmp_path: Path) -> None:
    head = HEAD.replace("lower = 0, upper = 100", "lower = 5, upper = 5.000000000000001")
    body = '[[query]]\nstatistic = "quantiles"\ncolumn = "age"\nquantiles = [0.5]\n'
    path = _plan(tmp_path, body + 'method = "exponential"\nepsilon = 0.5\n', head)
    with pytest.raises(ParameterError) as info:
        Plan.load(path).preview()
    assert str(info.value) == (
        f"{path}, line 6, key `columns.age.lower`: the bounds [5, 5.000000000000001] hold one "
        "integer (5); the exponential method needs two or more: widen them"
    )


def test_labels_cap_long_numbers() -> None:
    """Was: a label with all 400 digits of 1e-400."""
    tiny = Query("count", where=Compare("age", ">", Fraction(1, 10**400)))
    assert tiny.label == "count where age > 1e-400"
    third = Query("count", where=Compare("age", ">", Fraction(1, 3 * 10**400)))
    assert third.label == "count where age > ≈3.33333333333e-401"
    assert len(Query("count", where=Compare("age", "<", Fraction(10**400 + 1))).label) < 60


def test_a_too_small_epsilon_is_shown_as_typed() -> None:
    from snapdp.exponential import exponential_parameters

    with pytest.raises(ParameterError) as info:
        exponential_parameters(Fraction(1, 10**5), 1, 4096)  # was: "`epsilon` 1/100000 …"
    assert str(info.value).startswith("`epsilon` 0.00001 is too small for the exact exponential")


def test_a_quantile_bound_error_on_the_page_is_refused_at_the_preview(tmp_path: Path) -> None:
    from snapdp.ui._document import FieldError, blank_document
    from snapdp.ui._workload_json import plan_and_preview

    doc = blank_document()
    doc["data"]["total_epsilon"] = "1"
    bounds = {"lower": "5", "upper": "5.000000000000001"}
    doc["columns"] = [{"name": "age", "type": "integer", **bounds, "keys": "", "bins": "",
                       "nulls": ""}]  # fmt: skip
    doc["queries"] = [{"statistic": "quantiles", "column": "age", "by": "", "bins": "",
                       "quantiles": "0.5", "method": "exponential", "how": "epsilon",
                       "value": "0.5"}]  # fmt: skip
    with pytest.raises(FieldError) as info:
        plan_and_preview(doc, str(tmp_path / "d.csv"), tmp_path)
    assert str(info.value) == (
        "the bounds [5, 5.000000000000001] hold one integer (5); the exponential method needs "
        "two or more: widen them"
    )
    # refused at the preview, before any run (was: "lower=0, upper=0" from the release)
