"""``snapdp verify``: certificates on the terminal and as JSON, clean errors, exit status."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from gmpy2 import mpq

import snapdp.parameters as parameters_module
from snapdp.cli import main

ARGS = ["verify", "--epsilon", "1", "--lower", "-8", "--upper", "8", "--value", "0"]


def test_single_certificate_passes() -> None:
    result = CliRunner().invoke(main, [*ARGS, "--neighbour", "1"])
    assert result.exit_code == 0, result.output
    assert "PASS" in result.output and "1/1 certificates PASS" in result.output
    assert "0.99999999999999508" in result.output  # the exact loss, to 30 digits (rescaled)
    plain = CliRunner().invoke(main, [*ARGS, "--neighbour", "1", "--no-rescale"])
    assert "0.99999999999999652" in plain.output  # DESIGN's mechanism on (ε, Δ) itself


def test_json_certificate() -> None:
    result = CliRunner().invoke(main, [*ARGS, "--neighbour", "1", "--json"])
    assert result.exit_code == 0
    (cert,) = json.loads(result.output)
    assert cert["passed"] and cert["pure_epsilon"]
    assert 0 < cert["epsilon_minus_loss"] < 1e-14
    assert cert["delta"] == "0"


def test_default_grid_passes() -> None:
    result = CliRunner().invoke(main, ["verify", "--default-grid", "--json"])
    assert result.exit_code == 0
    certs = json.loads(result.output)
    assert len(certs) == 32 and all(c["passed"] for c in certs)


def test_fail_exits_with_status_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without γ (the experiment of docs/verification.md) the certificate fails."""
    monkeypatch.setattr(parameters_module, "UNIFORM_GRANULARITY", mpq(0))
    # DESIGN's mechanism on (ε, Δ) itself: the rescaled one keeps a further 2**-49 of margin
    result = CliRunner().invoke(main, [*ARGS, "--neighbour", "1", "--no-rescale"])
    assert result.exit_code == 1
    assert "FAIL" in result.output


def test_missing_neighbour_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ARGS)
    assert result.exit_code == 2
    assert "--neighbour" in result.output
    assert "Traceback" not in result.output


def test_bad_epsilon_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["verify", "--epsilon", "-1", *ARGS[3:], "--neighbour", "1"])
    assert result.exit_code == 2
    assert "`--epsilon` must be a positive number" in result.output


def test_textbook_check_fails_on_mironov_example() -> None:
    args = ["verify", "--textbook", "--epsilon", str(1 / 3), "--value", "0", "--neighbour", "1"]
    result = CliRunner().invoke(main, [*args, "--samples", "2000", "--json"])
    assert result.exit_code == 1
    rows = json.loads(result.output)
    assert len(rows) == 2
    assert all(r["loss"] == "inf" and r["delta_interval_99.9"][0] > 0.4 for r in rows)


def test_pair_farther_than_sensitivity_is_refused() -> None:
    result = CliRunner().invoke(main, [*ARGS, "--neighbour", "1.0000000000000002"])
    assert result.exit_code == 2
    assert "`--neighbour` must be within `--sensitivity`" in result.output


def test_a_loss_above_epsilon_is_explained_by_delta() -> None:
    """Wide bounds: the deep tail of the noise exceeds ε on some outputs, within the stated δ."""
    args = ["verify", "--epsilon", "1", "--lower", "-380", "--upper", "380", "--value", "-380"]
    result = CliRunner().invoke(main, [*args, "--neighbour", "-379"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "note: the loss exceeds ε on some outputs" in text
    assert "within the δ = " in text and "(ε, δ)-differential privacy" in text
    doc = json.loads(CliRunner().invoke(main, [*args, "--neighbour", "-379", "--json"]).output)
    assert doc[0]["pure_epsilon"] is False and "δ(ε) = " in doc[0]["explanation"]
    pure = json.loads(CliRunner().invoke(main, [*ARGS, "--neighbour", "1", "--json"]).output)
    assert pure[0]["pure_epsilon"] is True and pure[0]["explanation"] is None
