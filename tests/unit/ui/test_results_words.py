"""The results screen for people who do not code (issue 34 item 6; docs/ui.md, "Running"): each
note in plain words with its docs page and the exact statement kept as details; the run's
progress, counted from the plan alone (issue 32 item 2, DESIGN §8.1); a count's grid value from
the page (`grid_counts`)."""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from tests.unit.ui._helpers import document, query, write_people

from snapdp.data.output.notes_plain import NOTE_KINDS, plain_note
from snapdp.data.output.postprocess import INTEGER_NOTE
from snapdp.data.output.postprocess import NOTE as POST_NOTE
from snapdp.data.planner.consistent_accuracy import NOTE as CONSISTENT_NOTE
from snapdp.data.statistics.math.sample_variance import FALLBACK_NOTE

#: One technical note of each kind, as a release states it.
NOTES = {
    "substitute": "neighbours: substitute one row; ± holds for tables of n = 1,000 rows "
    "(declared public, not checked)",
    "protects": "neighbours: add or remove one pid (at most 2 row(s), at most 1 group(s))",
    "null-unit": "rows with a null pid: dropped",
    "groups": "sex: cells that are not integer count as null; nulls dropped; rows whose sex is "
    "not a declared key are dropped",
    "bounds": "age: cells that are not integer count as null; nulls dropped; values clamped to "
    "[0, 100]",
    "rows": "± holds for tables of at most 5,000,000 rows (declared)",
    "calibration": "count: calibrated to the whole table's L1 sensitivity 2 at the full ε "
    "(certified per-shift bound; docs/data.md)",
    "per-group": "sum: calibrated per group (ε/3): L1 calibration not certified for these "
    "parameters (the slack m·s is not below ε)",
    "sample": FALLBACK_NOTE,
    "consistent": CONSISTENT_NOTE,
    "quantile-exp": "quantiles (exponential mechanism, exact, pure ε): each released value is the "
    "middle of a cell of 1 whose true rank is within the rank ± of p·n, whatever n; ...",
    "quantile": "quantiles: each lies within one leaf of a value whose true rank is within ...",
    "having": POST_NOTE.format(clause="HAVING"),
    "integer": INTEGER_NOTE,
    "selection": "keys not declared: a key is shown only if its noisy count is at least 9 (its "
    "grid value at least 8.5); the keys one unit alone holds (at most 1, 1 row(s) each) are shown "
    "with probability <= 0.000001 in all (the selection's δ); docs/sql.md, 'Groups from the data'",
    "selection-count": "1/2 of its ε counted the groups to choose them",
    "groups-data": "city: cells that are not text count as null; nulls dropped; groups from the "
    "data",
}
_JARGON = re.compile(r"DESIGN|seed|§|neighbours|L1|sensitivity|ñ|post-processing|clamped")


def test_every_note_kind_has_plain_words_a_docs_page_and_its_details() -> None:
    """Was: the page showed the release's technical notes as they are ("neighbours: add or
    remove one pid (at most 2 row(s))", "values clamped to [0, 100]")."""
    assert set(NOTES) == set(NOTE_KINDS)
    for kind, note in NOTES.items():
        plain = plain_note(note)
        assert plain.kind == kind, note
        assert not _JARGON.search(plain.text), plain.text
        assert re.fullmatch(r"docs/\w+\.md, “[^”]+”", plain.doc), plain.doc
        assert plain.details == note
    assert "pid" in plain_note(NOTES["protects"]).text
    assert "below 0 were counted as 0" in plain_note(NOTES["bounds"]).text
    assert plain_note("something new").kind == "other"


@pytest.fixture
def run_page(start_server: Any, tmp_path: Path) -> Any:
    """Run ``doc`` on a server over a people table of ``rows`` rows; (answer, progress)."""

    def run(doc: dict[str, Any], rows: int, name: str) -> tuple[dict[str, Any], Any]:
        folder = tmp_path / name
        folder.mkdir()
        client = start_server(
            source=str(write_people(folder / "people.csv", rows)),
            ledger=folder / "ledger.sqlite",
            output=folder / "out",
            total_epsilon=Fraction(10),
        )
        digest = client.api("preview", {"document": doc}).json()["digest"]
        nonce = "p" * 32
        r = client.api("run", {"document": doc, "digest": digest, "nonce": nonce})
        assert r.status == 200, r.body
        return r.json(), client.api("progress", {"nonce": nonce}).json()

    return run


def _two_phase() -> dict[str, Any]:
    doc = document(total_epsilon="10")
    doc["queries"] = [
        query("count", by="sex", how="epsilon", value="1"),
        query("mean", column="age", by="sex", how="accuracy", value="20"),
        query("sum", column="income", how="weight", value="1"),
    ]
    return doc


def test_run_notes_come_in_plain_words(run_page: Any) -> None:
    answer, _ = run_page(_two_phase(), 40, "a")
    for result in answer["results"]:
        kinds = [n["kind"] for n in result["plain_notes"]]
        assert kinds and "other" not in kinds
        assert [n["details"] for n in result["plain_notes"]] == result["notes"]


def test_progress_is_the_same_for_neighbouring_tables(run_page: Any) -> None:
    """A run's progress steps follow from the plan alone: two tables one row apart give the same
    events (DESIGN §8.1). Was: the page had no progress for a run at all."""
    _, first = run_page(_two_phase(), 40, "a")
    _, second = run_page(_two_phase(), 41, "b")
    assert first == second
    events = first["events"]
    labels = [e["label"] for e in events]
    assert labels[0] == "planning" and labels[-1] == "done"
    assert "phase two of mean(age) by sex" in labels
    assert events[-1]["total"] == len(events) - 1  # the plan's steps, phase two included
    assert [e["done"] for e in events] == list(range(len(events)))


def test_progress_of_an_unknown_run_is_empty(start_server: Any, tmp_path: Path) -> None:
    client = start_server(source=str(write_people(tmp_path / "people.csv")))
    assert client.api("progress", {"nonce": "x" * 32}).json() == {"events": []}
    assert client.api("progress", {}).status == 422


def test_grid_counts_from_the_page(run_page: Any, start_server: Any, tmp_path: Path) -> None:
    """A count row's `grid_counts` = "true" keeps the grid value: no rounding note; the plan
    file says `grid_counts = true` and loads back. Was: the page had no such field."""
    doc = document(total_epsilon="10")
    doc["queries"] = [
        query("count", how="epsilon", value="1", grid_counts="true"),
        query("count", by="sex", how="epsilon", value="1"),
    ]
    answer, _ = run_page(doc, 40, "g")
    kinds = [[n["kind"] for n in r["plain_notes"]] for r in answer["results"]]
    assert "integer" not in kinds[0] and "integer" in kinds[1]
    client = start_server(source=str(tmp_path / "g" / "people.csv"))
    toml = client.api("export", {"document": doc}).json()["toml"]
    assert toml.count("grid_counts = true") == 1
    loaded = client.api("load", {"toml": toml}).json()["document"]
    assert [q["grid_counts"] for q in loaded["queries"]] == ["true", ""]
    doc["queries"][1] = query("mean", column="age", grid_counts="true")
    r = client.api("preview", {"document": doc})
    assert r.status == 422 and r.json()["error"]["field"] == "query[2].grid_counts"


def test_groups_from_the_data_run_from_the_page_with_the_owners_delta_budget(
    start_server: Any, tmp_path: Path
) -> None:
    """`snapdp ui --total-delta` is the owner's δ budget: a plan grouping by a column without
    keys (δ in the page's data) runs and spends δ; without a δ budget it is refused and spends
    nothing (docs/sql.md, "Groups from the data")."""
    doc = document(total_epsilon="10", delta="1e-6")
    doc["queries"] = [query("count", by="age", how="epsilon", value="1")]
    for name, delta in (("none", None), ("owner", Fraction(1, 10**5))):
        folder = tmp_path / name
        folder.mkdir()
        client = start_server(
            source=str(write_people(folder / "people.csv", 400)),
            ledger=folder / "ledger.sqlite",
            output=folder / "out",
            total_epsilon=Fraction(10),
            total_delta=delta,
        )
        digest = client.api("preview", {"document": doc}).json()["digest"]
        r = client.api("run", {"document": doc, "digest": digest, "nonce": name * 16})
        if delta is None:
            assert r.status != 200 and "δ budget" in r.json()["error"]["message"]
            continue
        assert r.status == 200, r.body
        (result,) = r.json()["results"]
        assert set(result["keys"]["age"]) <= set(range(20, 70))
        assert result["delta"] > 0
