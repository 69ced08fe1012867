"""The first CLI: `snapdp release --value …` and `snapdp --help`."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import pytest
from click.testing import CliRunner

from snapdp import SnappingMechanism
from snapdp.cli import main


def test_help_lists_commands() -> None:
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    assert "release" in result.output


def test_release_prints_value_accuracy_and_guarantee() -> None:
    args = ["release", "--value", "42", "--epsilon", "1", "--lower", "0", "--upper", "100"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith(
        "With ε = 1 and values in [0, 100], 95% of releases are within ±3.19"
    )
    assert not any(x.startswith("warning") for x in lines)  # issue 26: nothing to warn about
    (line,) = [x for x in lines if x.startswith("release ")]
    released = float(line.split()[1])
    assert 0 <= released <= 100 and ((Fraction(released) - 50) / Fraction(17, 16)).denominator == 1
    expected = SnappingMechanism(1.0, 1.0, 0.0, 100.0).accuracy(0.05)
    assert f"accuracy  ±{expected:.6g} with probability >= 0.95" in result.output
    assert "(ε = 1, δ <= " in result.output  # δ: the timing of the padded chunks


def test_release_json() -> None:
    args = ["release", "--value", "7", "--epsilon", "0.5", "--lower", "-10", "--upper", "10"]
    data = json.loads(CliRunner().invoke(main, [*args, "--json"]).output)
    assert set(data) >= {"release", "accuracy", "epsilon", "delta", "confidence"}
    assert data["epsilon"] == 0.5 and 0 < data["delta"] <= 2.0**-80  # release_many's timing
    assert Fraction(data["rescale_ratio"]) == Fraction(17, 16)  # the public rescaling
    assert Fraction(data["mechanism_sensitivity"]) == Fraction(17, 16)
    assert Fraction(data["mechanism_epsilon"]) == Fraction(17, 16) * (
        Fraction(1, 2) - Fraction(1, 1 << 49)
    )


@pytest.mark.parametrize("eps", ["1", "1.0001", "0.5", "2", "0.3"])
def test_value_release_states_a_pm_near_the_ideal_laplace_one(eps: str) -> None:
    """Issue 26: ±3.91 at ε = 1 (1.30× Laplace's ±3.00) before; now <= 1.17× at every ε."""
    args = ["release", "--value", "50", "--epsilon", eps, "--lower", "0", "--upper", "100"]
    data = json.loads(CliRunner().invoke(main, [*args, "--json", "--dry-run"]).output)
    ideal = math.log(20) / float(Fraction(eps))
    assert data["accuracy"] <= 1.17 * ideal


def test_bad_input_is_a_clean_error() -> None:
    args = ["release", "--value", "1", "--epsilon", "0", "--lower", "0", "--upper", "1"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert "`--epsilon` must be > 0" in result.output
    assert "Traceback" not in result.output
    args = ["release", "--value", "1", "--epsilon", "1", "--lower", "5", "--upper", "1"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and "`--lower` must be < `--upper`" in result.output


def test_a_useless_value_release_is_flagged_in_text_and_json() -> None:
    args = ["release", "--value", "42", "--epsilon", "0.001", "--lower", "0", "--upper", "100"]
    text = CliRunner().invoke(main, args)
    assert text.exit_code == 0, text.output
    assert "warning: Almost pure noise" in text.output
    as_json = CliRunner().invoke(main, [*args, "--json"])
    out = json.loads(as_json.output)
    assert [f["code"] for f in out["flags"]] == ["almost_pure_noise"]
    assert out["summary"].startswith("With ε = 0.001 and values in [0, 100]")
