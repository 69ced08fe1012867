"""``--dry-run`` and ``snapdp plan`` state the ± a consistent release states
(src/snapdp/data/planner/consistent_accuracy.py; docs/data.md, "Tables that add up").

Before, both showed an independent count's ±, which a consistent release never states (its
counts have other mechanisms and a fitted ±). Now the statement before the release is the
release's own when the fit moves no count, the least it states: every value a seeded release
states is at least it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from snapdp.cli import main
from snapdp.data import Plan

ROWS = [(s, e) for s in (0, 1) for e in (1, 2, 3) for _ in range(5 + 7 * s + e)]
# grouping columns that give every row a cell (bins over every double, nulls imputed): the
# total, by sex and by sex × educ count the same rows, so they are fitted together
ARGS = ["--epsilon", "3", "--count", "--by", "sex,educ", "--bins", "sex=-1e309,1,1e309",
        "--bins", "educ=-1e309,2,3,1e309", "--nulls", "sex=0", "--nulls", "educ=1"]  # fmt: skip
PLAN = """[data]
source = "{source}"
total_epsilon = 3
consistent = {consistent}

[columns]
sex = {{ type = "integer", bins = [-1e19, 1, 1e19], nulls = 0 }}
educ = {{ type = "integer", bins = [-1e19, 2, 3, 1e19], nulls = 1 }}

[[query]]
statistic = "count"
epsilon = 1

[[query]]
statistic = "count"
by = ["sex"]
epsilon = 1

[[query]]
statistic = "count"
by = ["sex", "educ"]
epsilon = 1
"""


def _csv(tmp_path: Path) -> Path:
    path = tmp_path / "t.csv"
    path.write_text("sex,educ\n" + "".join(f"{s},{e}\n" for s, e in ROWS))
    return path


def _dry(tmp_path: Path, *extra: str) -> list[float]:
    out = CliRunner().invoke(main, ["release", str(_csv(tmp_path)), *ARGS, *extra, "--dry-run",
                                    "--json"])  # fmt: skip
    assert out.exit_code == 0, out.output
    return [q["accuracy"] for q in json.loads(out.output)["queries"]]


def test_dry_run_states_the_consistent_pm(tmp_path: Path) -> None:
    """The same three counts at the same ε, released independently, state other ±."""
    fitted = _dry(tmp_path, "--consistent")
    plan_file = tmp_path / "plan.toml"
    plan_file.write_text(PLAN.format(source=_csv(tmp_path), consistent="false"))
    out = CliRunner().invoke(main, ["plan", str(plan_file), "--json"])
    independent = [q["accuracy"] for q in json.loads(out.output)["queries"]]
    assert len(fitted) == len(independent) == 3
    assert fitted != independent  # the old dry run showed the independent ±


def test_a_release_states_at_least_the_dry_run_pm(tmp_path: Path) -> None:
    dry = _dry(tmp_path, "--consistent")
    source = _csv(tmp_path)
    plan_file = tmp_path / "plan.toml"
    plan_file.write_text(PLAN.format(source=source, consistent="true"))
    total = 0
    for seed in range(6):
        results = Plan.load(plan_file).run(rng=np.random.default_rng(seed)).results
        for stated, r in zip(dry, results, strict=True):
            for row in r.rows:
                total += 1
                assert row.accuracy >= stated * (1 - 1e-12), (row.accuracy, stated)
    assert total == 6 * 9


def test_plan_shows_the_same_pm_as_the_dry_run(tmp_path: Path) -> None:
    dry = _dry(tmp_path, "--consistent")
    source = _csv(tmp_path)
    plan_file = tmp_path / "plan.toml"
    plan_file.write_text(PLAN.format(source=source, consistent="true"))
    out = CliRunner().invoke(main, ["plan", str(plan_file), "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert [q["accuracy"] for q in doc["queries"]] == dry
    assert any("consistent" in a for a in doc["assumptions"])
    plan_file.write_text(PLAN.format(source=source, consistent="false"))
    plain = json.loads(CliRunner().invoke(main, ["plan", str(plan_file), "--json"]).output)
    assert [q["accuracy"] for q in plain["queries"]] != dry  # what the old `snapdp plan` showed
