"""One planner states every ± (issue 31; docs/plans.md, docs/ui.md): for every example plan in
docs/examples, the page's preview (its /api/preview handler) and `snapdp plan` state the same ε,
the same ± and the same two-phase figures; an example without queries is refused by both. The
browser test of a ``consistent = true`` plan is
``tests/unit/ui/test_consistent_plan.py::test_the_browser_shows_the_planners_consistent_pm``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from tests.unit.ui.test_consistent_plan import _plan

from snapdp.cli import main
from snapdp.ui._document_io import document_from_toml

EXAMPLES = Path(__file__).resolve().parents[3] / "docs" / "examples"
PLANS = sorted(EXAMPLES.glob("*.toml"))


def _cli(path: Path) -> dict[str, Any]:
    out = CliRunner().invoke(main, ["plan", str(path), "--json"])
    return dict(json.loads(out.output))


def test_there_are_example_plans_with_queries() -> None:
    assert any("[[query]]" in p.read_text(encoding="utf-8") for p in PLANS)


@pytest.mark.parametrize("path", PLANS, ids=[p.name for p in PLANS])
def test_the_page_and_snapdp_plan_state_the_same_pm(
    path: Path, start_server: Any, tmp_path: Path
) -> None:
    _same_pm(path, str(EXAMPLES / "PUMS_dup.csv"), start_server, tmp_path)


def test_the_page_and_snapdp_plan_state_the_same_consistent_pm(
    start_server: Any, tmp_path: Path
) -> None:
    """The plan of the review (total, by sex, by sex × grp at ε ½ each, ``consistent = true``):
    the page showed ±6.375 for every query, `snapdp plan` ±5.569 / ±5.527 / ±6.114."""
    path = _plan(tmp_path)
    _same_pm(path, str(tmp_path / "people.csv"), start_server, tmp_path)


def _same_pm(path: Path, source: str, start_server: Any, tmp_path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    cli = _cli(path)
    if "[[query]]" not in text:  # a declaration on its own: both refuse, with one rule
        assert "the plan has no [[query]]" in cli["error"]
        with pytest.raises(Exception, match=r"the plan has no \[\[query\]\]"):
            document_from_toml(text, source)
        return
    client = start_server(source=source, ledger=tmp_path / "l.sqlite", output=tmp_path / "out")
    r = client.api("preview", {"document": document_from_toml(text, source)})
    assert r.status == 200, r.body
    page = r.json()["preview"]
    assert page["total_epsilon_used"] == cli["total_epsilon_used"]
    assert len(page["queries"]) == len(cli["queries"]) > 0
    for shown, stated in zip(page["queries"], cli["queries"], strict=True):
        for key, value in stated.items():
            if key == "two_phase":  # the page adds figures for example group sizes
                assert {k: shown[key][k] for k in value} == value, stated["query"]
            else:
                assert shown[key] == value, (stated["query"], key)
