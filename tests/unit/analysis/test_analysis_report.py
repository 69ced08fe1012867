"""The utility report: renders, embeds its figures, and its numbers agree with the library."""

from __future__ import annotations

import json

import pytest

from snapdp import ParameterError, SnappingMechanism
from snapdp.accuracy import accuracy_bound
from snapdp.analysis.distribution import output_distribution
from snapdp.analysis.metrics import error_metrics, laplace_metrics
from snapdp.analysis.report import ReportGrid, build_report, epsilon_sweep_values

SMALL = ReportGrid(
    b_over_lambdas=(1, 8),
    positions=(0.5, 0.1),
    epsilon_octaves=1.0,
    epsilon_points=3,
    offsets=2,
    binding_positions=5,
)


@pytest.fixture(scope="module")
def report():
    return build_report(0.5, 0.0, 40.0, 2.0, 33.0, grid=SMALL)


def test_html_embeds_every_figure(report):
    page = report.html()
    assert page.startswith("<!DOCTYPE html>")
    assert page.count("data:image/png;base64,") == len(report.figures) == 6
    for png in report.figures.values():
        assert png.startswith(b"\x89PNG")
    assert "never be published beside a release" in page


def test_json_parses_and_agrees_with_the_library(report):
    data = json.loads(report.json())
    mech = SnappingMechanism(0.5, 2.0, 0.0, 40.0)
    params = mech.parameters
    assert data["parameters"]["grid_spacing"] == mech.grid_spacing
    for row in data["accuracy_before_spending"]["rows"]:
        assert row["snapping_accuracy_bound"] == accuracy_bound(params, row["alpha"])
    exact = error_metrics(output_distribution(params, 33.0))
    assert data["value"]["snapping"] == exact.as_dict()
    assert data["value"]["laplace"] == laplace_metrics(0.5, 2.0).as_dict()
    assert data["value"]["ratios"]["mae"] == exact.mae / (2.0 / 0.5)
    n = data["coverage"]["simulation"]["size"]
    for row in data["coverage"]["rows"]:
        assert row["achieved_failure_probability"] <= row["alpha"]
        # the seeded simulation agrees with the exact tail (binomial, 6 standard errors)
        p = row["achieved_failure_probability"]
        assert abs(row["simulated_failure_fraction"] - p) <= 6 * (p * (1 - p) / n) ** 0.5 + 1 / n
    for row in data["binding"]["bounds_for_gamma"]:
        assert row["exact_binding_at_ends"] <= row["gamma"]
    sweep = data["ratios_vs_b_over_lambda"]["rows"]
    assert len(sweep) == len(SMALL.b_over_lambdas) * len(SMALL.positions)
    assert sum(data["value"]["probabilities"]) == pytest.approx(1.0, abs=1e-12)


def test_write(tmp_path, report):
    html_path, json_path = report.write(tmp_path / "out")
    assert html_path.read_text(encoding="utf-8") == report.html()
    assert json.loads(json_path.read_text(encoding="utf-8"))["inputs"]["value"] == 33.0


def test_epsilon_sweep_brackets_every_power_of_two():
    values = epsilon_sweep_values(0.3, 2.0, 5)
    for p in (0.125, 0.25, 0.5, 1.0):
        assert p in values and p * (1 + 2.0**-40) in values
    assert values == sorted(values)


def test_without_figures_and_bad_input():
    r = build_report(1.0, 0.0, 10.0, grid=SMALL, figures=False)
    assert r.figures == {} and r.data["inputs"]["value"] == 5.0
    with pytest.raises(ParameterError, match="lower"):
        build_report(1.0, 10.0, 0.0, grid=SMALL, figures=False)


def test_epsilon_near_the_minimum_drops_impossible_sweep_points():
    """ε/4 is below the mechanism's minimum ε (~2**-48): those sweep points are left out."""
    r = build_report(1e-14, 0.0, 1.0, grid=SMALL, figures=False)
    shown = [row["epsilon"] for row in r.data["ratios_vs_epsilon"]["rows"]]
    assert min(shown) > 2.0**-48 and 1e-14 in shown


def test_summary_flags_and_mechanisms_agree_with_the_library(report):
    from snapdp import usefulness
    from snapdp.analysis.discrete_laplace import (
        discrete_accuracy,
        discrete_laplace,
        discrete_metrics,
    )
    from snapdp.analysis.metrics import clamped_laplace_metrics, laplace_quantile

    data = json.loads(report.json())
    assert list(data)[:2] == ["summary", "flags"]
    params = SnappingMechanism(0.5, 2.0, 0.0, 40.0).parameters
    assert data["flags"] == [f.as_dict() for f in usefulness.flags(params)]
    mech = data["mechanisms"]
    assert mech["snapping"]["accuracy95"] == accuracy_bound(params, 0.05)
    assert mech["snapping"]["accuracy99"] == accuracy_bound(params, 0.01)
    assert (
        mech["snapping"]["value_metrics"]
        == error_metrics(output_distribution(params, 33.0)).as_dict()
    )
    dl = discrete_laplace(0.5, 2.0, 0.0, 40.0)
    assert mech["discrete_laplace"]["quantum"] == 1.0 and mech["discrete_laplace"]["units"] == 2
    assert mech["discrete_laplace"]["accuracy95"] == discrete_accuracy(dl, 0.05)
    assert mech["discrete_laplace"]["value_metrics"] == discrete_metrics(dl, 33.0).as_dict()
    assert sum(mech["discrete_laplace"]["probabilities"]) == pytest.approx(1.0, abs=1e-12)
    assert mech["textbook_laplace"]["accuracy95"] >= laplace_quantile(0.5, 2.0, 0.05)
    assert (
        mech["textbook_laplace"]["value_metrics"]
        == clamped_laplace_metrics(0.5, 2.0, 0.0, 40.0, [33.0]).as_dict()
    )
    assert data["summary"] == usefulness.plain_summary(
        0.5,
        0.0,
        40.0,
        mech["snapping"]["accuracy95"],
        mech["discrete_laplace"]["accuracy95"],
        mech["textbook_laplace"]["accuracy95"],
        data["parameters"]["grid_spacing"],
    )
    leaks = {a["mechanism"]: a["leaks"] for a in data["attacks"]}
    assert leaks == {"textbook Laplace": True, "snapping": False, "discrete Laplace": False}
    page = report.html()
    assert page.index(data["summary"].split(";")[0]) < page.index("Terms used below")
