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
    released = float(lines[0].split()[1])
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
