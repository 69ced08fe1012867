"""The first CLI: `snapdp release --value …` and `snapdp --help`."""

from __future__ import annotations

import json

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
        "With ε = 1 and values in [0, 100], 95% of releases are within ±3.91"
    )
    (line,) = [x for x in lines if x.startswith("release ")]
    released = float(line.split()[1])
    assert 0 <= released <= 100 and (released - 50) % 2 == 0
    expected = SnappingMechanism(1.0, 1.0, 0.0, 100.0).accuracy(0.05)
    assert f"accuracy  ±{expected:.6g} with probability >= 0.95" in result.output
    assert "pure ε = 1" in result.output


def test_release_json() -> None:
    args = ["release", "--value", "7", "--epsilon", "0.5", "--lower", "-10", "--upper", "10"]
    data = json.loads(CliRunner().invoke(main, [*args, "--json"]).output)
    assert set(data) >= {"release", "accuracy", "epsilon", "delta", "confidence"}
    assert data["epsilon"] == 0.5 and data["delta"] == 0.0


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
