"""``snapdp compare`` with its defaults, through click's CliRunner."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from snapdp.cli import main


@pytest.fixture(scope="module")
def default_report(tmp_path_factory):
    """`snapdp compare --epsilon 1 --lower 0 --upper 100`: its result and report folder, made
    once for the two tests that read them (the report draws six figures)."""
    out = tmp_path_factory.mktemp("compare") / "rep"
    result = CliRunner().invoke(
        main, ["compare", "--epsilon", "1", "--lower", "0", "--upper", "100", "--output", str(out)]
    )
    return result, out


def test_compare_with_defaults_writes_the_report(default_report):
    result, out = default_report
    assert result.exit_code == 0, result.output
    assert "report.html" in result.output
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert data["inputs"] == {
        "epsilon": 1.0,
        "sensitivity": 1.0,
        "lower": 0.0,
        "upper": 100.0,
        "value": 50.0,
        "quantum": 1.0,
    }
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.count("data:image/png;base64,") == 6


def test_compare_bad_bounds_is_a_clean_usage_error(tmp_path):
    result = CliRunner().invoke(
        main,
        ["compare", "--epsilon", "1", "--lower", "5", "--upper", "1", "--output", str(tmp_path)],
    )
    assert result.exit_code == 2
    assert "`--lower` must be < `--upper`" in result.output
    assert "Traceback" not in result.output


def test_compare_shows_the_plain_summary_first_and_the_three_mechanisms(default_report):
    result, out = default_report
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == (
        "With ε = 1 and values in [0, 100], 95% of releases are within ±3.19 of the truth; "
        "discrete Laplace would be within ±3 and the textbook mechanism within ±3 but it leaks; "
        "the difference is the cost of the grid of width 1.0625."
    )
    assert not any(line.startswith("warning [") for line in lines)  # nothing to change helps
    table = {line.split("  ")[0]: line for line in lines}
    assert "no" in table["snapping"].split()[-1]
    assert table["discrete Laplace"].split()[2:4] == ["3", "4"]
    assert "yes (" in table["textbook Laplace"]
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert list(data)[:2] == ["summary", "flags"]
    assert data["summary"] == lines[0]
    assert data["flags"] == []
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.index("95% of releases are within ±3.19") < page.index("Terms used below")
    assert page.index("Terms used below") < page.index("Details for specialists")


def test_compare_flags_a_useless_release(tmp_path):
    result = CliRunner().invoke(
        main,
        [
            "compare",
            "--epsilon",
            "0.001",
            "--lower",
            "0",
            "--upper",
            "100",
            "--output",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "warning [almost_pure_noise]" in result.output
    assert "almost pure noise" in result.output.splitlines()[0]


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--upper", "1e300"], None),
        (["--lower", "-1.7976931348623157e308", "--upper", "1.7976931348623157e308"], None),
        (["--upper", "100", "--output", "/proc/snapdp-cannot-write"], "--output"),
        (["--upper", "100", "--quantum", "1e-300"], "quantum"),
        (["--upper", "100", "--quantum", "0"], "quantum"),
        (["--upper", "100", "--value", "200"], "value"),
    ],
)
def test_compare_never_shows_a_traceback(tmp_path, args, flag):
    base = ["compare", "--epsilon", "1", "--lower", "0", "--output", str(tmp_path / "r")]
    result = CliRunner().invoke(main, base + args)
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    if flag is None:
        assert result.exit_code == 0, result.output
    else:
        assert result.exit_code == 2
        error = [line for line in result.output.splitlines() if line.startswith("Error:")]
        assert len(error) == 1 and flag in error[0]


def test_compare_json_prints_the_summary_and_flags(tmp_path):
    result = CliRunner().invoke(
        main,
        [
            *("compare", "--epsilon", "1", "--lower", "0", "--upper", "100"),
            *("--output", str(tmp_path), "--json"),
        ],
    )
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output)
    written = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    for key in ("summary", "flags", "mechanisms", "attacks"):
        assert printed[key] == written[key]
    assert printed["files"]["json"] == str(tmp_path / "report.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "report.json"]
