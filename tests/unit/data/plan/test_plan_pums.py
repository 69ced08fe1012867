"""Plans on the PUMS files: planned targets met in repeated seeded releases (coverage ≥ 1 − α),
and the example plan of docs/plans.md end to end through the CLI (docs/plans.md)."""

from __future__ import annotations

import csv
import json
import shutil
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.stats import binom
from tests.unit.data._engines import oracle_engine

from snapdp.cli import main
from snapdp.data.api import Plan
from snapdp.data.model.query import Query
from snapdp.data.model.schema import Column, Schema
from snapdp.data.model.workload import PlannedQuery

EXAMPLE = Path(__file__).resolve().parents[4] / "docs" / "examples" / "plan.toml"
RUNS = 25
ALPHA_TEST = 1e-6  # the chance that this test fails although the stated ± holds


def test_planned_targets_are_met_in_repeated_seeded_releases(pums: Path) -> None:
    """A count-by-sex with target ±30 at 95 %: over 25 seeded plan runs (50 cells), the share of
    cells within their ± is ≥ 95 % up to a binomial threshold at α = 1e-6."""
    with open(pums / "PUMS.csv", encoding="utf-8") as f:
        sexes = [row["sex"] for row in csv.DictReader(f)]
    truth = [sexes.count("0"), sexes.count("1")]
    schema = Schema((Column("sex", "integer", keys=(0, 1)),))
    target = PlannedQuery(Query("count", by=("sex",)), accuracy=Fraction(30))
    plan = Plan(schema, [target], source=str(pums / "PUMS.csv"))
    preview = plan.preview()
    assert preview.allocations[0].accuracy <= 30
    misses = 0
    for seed in range(RUNS):
        done = plan.run(
            engine=oracle_engine(str(pums / "PUMS.csv")),
            rng=np.random.default_rng(1000 + seed),
            preview=preview,
        )
        (result,) = done.results
        for row, true in zip(result.rows, truth, strict=True):
            assert row.accuracy <= 30  # the release states the planned ±
            misses += abs(row.value - true) > row.accuracy
    cells = 2 * RUNS
    assert misses <= binom.isf(ALPHA_TEST, cells, 0.05)


@pytest.mark.slow
def test_example_plan_end_to_end(pums: Path, tmp_path: Path) -> None:
    """The example plan as written: `snapdp plan` shows ε and ± before spending, the fixed and
    one-phase targets met and the two-phase mean capped, within at most total_epsilon = 20;
    `snapdp run` reserves it as one ledger entry (on the DuckDB engine), says whether each target
    was met, returns what the two-phase query did not need, and writes the four outputs."""
    shutil.copy(EXAMPLE, tmp_path / "plan.toml")
    shutil.copy(pums / "PUMS_dup.csv", tmp_path / "PUMS_dup.csv")
    runner = CliRunner()
    shown = runner.invoke(main, ["plan", str(tmp_path / "plan.toml"), "--json"])
    assert shown.exit_code == 0, shown.output
    preview = json.loads(shown.output)
    qs = preview["queries"]
    assert qs[0]["epsilon"] == "0.5" and qs[0]["how"] == "epsilon"
    assert qs[1]["how"] == "accuracy" and qs[1]["two_phase"]["cap"] == qs[1]["epsilon"]
    assert qs[2]["how"] == "accuracy" and qs[2]["accuracy"] <= qs[2]["target"]
    assert Fraction(preview["total_epsilon_used"]) == 20 and preview["total_is_cap"]
    assert preview["assumptions"]
    ran = runner.invoke(
        main,
        [
            "run",
            str(tmp_path / "plan.toml"),
            "--ledger",
            str(tmp_path / "b.sqlite"),
            "--json",
            "--total-epsilon",
            "20",
        ],
    )
    assert ran.exit_code == 0, ran.output
    doc = json.loads(ran.output)
    assert Fraction(doc["epsilon_spent"]) < Fraction(doc["epsilon_reserved"]) == 20
    out = tmp_path / "plan-results"
    assert sorted(p.name for p in out.iterdir()) == [
        "report.html", "results.csv", "results.json", "results.parquet"
    ]  # fmt: skip
    data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert [q["statistic"] for q in data["queries"]] == ["count", "mean", "quantiles", "count"]
    assert len(data["queries"][0]["value"]) == 32 and data["epsilon"] == doc["epsilon_spent"]
    assert [q.get("target_met") for q in data["queries"]] == [None, True, True, None]
