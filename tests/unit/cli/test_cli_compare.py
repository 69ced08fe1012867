"""``snapdp compare`` with its defaults, through click's CliRunner."""

from __future__ import annotations

import json

from click.testing import CliRunner

from snapdp.cli import main


def test_compare_with_defaults_writes_the_report(tmp_path):
    out = tmp_path / "rep"
    result = CliRunner().invoke(
        main, ["compare", "--epsilon", "1", "--lower", "0", "--upper", "100", "--output", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "report.html" in result.output
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert data["inputs"] == {
        "epsilon": 1.0,
        "sensitivity": 1.0,
        "lower": 0.0,
        "upper": 100.0,
        "value": 50.0,
    }
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.count("data:image/png;base64,") == 5


def test_compare_bad_bounds_is_a_clean_usage_error(tmp_path):
    result = CliRunner().invoke(
        main,
        ["compare", "--epsilon", "1", "--lower", "5", "--upper", "1", "--output", str(tmp_path)],
    )
    assert result.exit_code == 2
    assert "`--lower` must be < `--upper`" in result.output
    assert "Traceback" not in result.output
