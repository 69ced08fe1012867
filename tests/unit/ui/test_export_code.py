"""The page exports its plan as a runnable Python script or a Jupyter notebook (issue 34,
item 8): the same text ``snapdp plan --export-python / --export-notebook`` writes for the plan
the page would export as TOML, and a run of the script releases what the plan releases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.unit.ui._helpers import document, write_people

from snapdp.data import Plan
from snapdp.data.frontends.python_export import export_notebook, export_python


@pytest.fixture
def client(start_server: Any, tmp_path: Path) -> Any:
    people = tmp_path / "people.csv"
    write_people(people)
    return start_server(source=people, ledger=tmp_path / "ledger.sqlite")


@pytest.mark.parametrize(("fmt", "write", "name"), [
    ("python", export_python, "plan.py"),
    ("notebook", export_notebook, "plan.ipynb"),
])  # fmt: skip
def test_the_page_exports_the_code_of_its_plan(
    client: Any, tmp_path: Path, fmt: str, write: Any, name: str
) -> None:
    doc = document(total_epsilon="2")
    toml = client.api("export", {"document": doc}).json()["toml"]
    (tmp_path / "same.toml").write_text(toml)
    answer = client.api("export", {"document": doc, "format": fmt})
    assert answer.status == 200, answer.body
    got = answer.json()
    assert got["filename"] == name
    want = write(
        Plan.load(tmp_path / "same.toml").to_workload(), ledger=str(tmp_path / "ledger.sqlite")
    )
    assert got["text"] == want
    if fmt == "notebook":
        assert json.loads(got["text"])["nbformat"] == 4


def test_an_unknown_export_format_is_refused_by_name(client: Any) -> None:
    answer = client.api("export", {"document": document(), "format": "xlsx"})
    assert answer.status == 422, answer.body  # as every refusal of the page
    assert "`format`" in answer.json()["error"]["message"]


def test_the_exported_script_compiles(client: Any) -> None:
    text = client.api("export", {"document": document(), "format": "python"}).json()["text"]
    code = compile(text, "plan.py", "exec")  # raises on a syntax error
    assert "run" in code.co_names or "run" in text
