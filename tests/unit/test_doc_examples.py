"""Every ``$ snapdp …`` example of README.md and docs/*.md runs from a fresh clone and prints what
the page shows (issue 34, items 2 and 3; docs/examples/README.md).

The pages' outputs are those of a seeded run (``tools/make_doc_outputs.py``, which rewrites them);
this test runs the same commands the same way, in a temporary copy of the docs with
``SNAPDP_SHARED_DATA`` pointing at a missing folder, and compares line by line.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from tests.conftest import REPO_ROOT
from tools import make_doc_outputs as docs

PAGES = [str(p.relative_to(REPO_ROOT)) for p in docs.pages(REPO_ROOT)]
FIX = "run `python3 tools/make_doc_outputs.py` and review the diff"


def test_the_examples_are_found_on_the_pages_that_have_them() -> None:
    assert {"README.md", "docs/data.md", "docs/plans.md", "docs/sql.md"} <= set(PAGES)
    found = {p: docs.examples(REPO_ROOT / p, REPO_ROOT) for p in PAGES}
    assert all(found.values())
    assert sum(len(v) for v in found.values()) >= 15


def test_examples_name_only_files_a_clone_ships() -> None:
    for page in PAGES:
        for example in docs.examples(REPO_ROOT / page, REPO_ROOT):
            line = f"{page}:{example.first + 1}"
            assert "shared" not in " ".join(example.argv), line
            for word in example.argv:
                if word.endswith((".csv", ".toml", ".parquet")) and "/" in word:
                    assert (REPO_ROOT / word).is_file(), f"{line}: {word} is not in the clone"


def test_every_console_block_starts_with_a_command() -> None:
    """A console block is commands and their outputs: one without a ``$`` line is never checked."""
    for page in [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]:
        lines = page.read_text(encoding="utf-8").split("\n")
        for start, stop in docs._console_blocks(lines):
            assert stop > start and lines[start].startswith("$ "), f"{page.name}:{start + 1}"


def test_the_parser_reads_continuations_and_outputs(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "p.md"
    page.write_text(
        "text\n```console\n$ snapdp release --value 1 \\\n    --epsilon 1\nout 1\nout 2\n"
        "$ pip install x\n$ snapdp ui plan.toml\nserving\n```\n```\n$ snapdp budget\n```\n",
        encoding="utf-8",
    )
    found = docs.examples(page, tmp_path)
    assert [e.argv for e in found] == [
        ("release", "--value", "1", "--epsilon", "1"),
        ("ui", "plan.toml"),
    ]
    assert found[0].shown == "out 1\nout 2" and found[1].shown == "serving"
    assert found[0].runs and not found[1].runs
    docs.rewrite(page, [(found[0], "new")])
    assert "--epsilon 1\nnew\n$ pip install x" in page.read_text(encoding="utf-8")


def test_only_the_time_of_day_is_masked() -> None:
    a = "│ 1 │ 2026-11-26T22:55:01.3726… │ pums │ 0.5 │\nwrote results/run-2026-11-26T22-55-01Z"
    b = "│ 1 │ 2026-11-27T09:00:00.1234… │ pums │ 0.5 │\nwrote results/run-2026-11-27T09-00-00Z"
    assert docs.comparable(a) == docs.comparable(b)
    assert docs.comparable(a) != docs.comparable(a.replace("0.5", "0.6"))


def test_the_example_data_carries_its_attribution() -> None:
    folder = REPO_ROOT / "docs" / "examples"
    readme = (folder / "README.md").read_text(encoding="utf-8")
    licence = (folder / "LICENSE-PUMS").read_text(encoding="utf-8")
    assert "MIT" in readme and "opendp/smartnoise-sdk" in readme
    assert "President and Fellows of Harvard College" in licence and "MIT License" in licence
    assert (folder / "PUMS_dup.csv").read_text(encoding="utf-8").count("\n") == 1949


@pytest.mark.slow
@pytest.mark.xdist_group("doc_examples")
@pytest.mark.parametrize("page", PAGES)
def test_each_example_prints_what_its_page_shows(page: str) -> None:
    for example, now in docs.run_page(REPO_ROOT / page, REPO_ROOT):
        where = f"{page}:{example.first + 1}: $ snapdp {shlex.join(example.argv)}"
        assert "Traceback" not in now, where
        same = docs.comparable(now) == docs.comparable(example.shown)
        assert same, f"{where}\nprints:\n{now}\n\npage shows:\n{example.shown}\n{FIX}"
