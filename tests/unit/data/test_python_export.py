"""A plan exported as a Python script and a Jupyter notebook (docs/notebooks.md, "Export a
plan")."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import snapdp
from snapdp.cli import main
from snapdp.data import Plan
from snapdp.data.frontends.python_export import export_notebook, export_python
from snapdp.errors import ParameterError

ROOT = Path(__file__).resolve().parents[3]

PLAN = """\
[data]
source = "people.csv"
privacy_unit = "pid"
max_rows_per_unit = 2
total_epsilon = 6

[columns]
age = { type = "integer", lower = 0, upper = 100 }
income = { type = "decimal", lower = 0, upper = 1000 }
"it's \\"odd\\"" = { type = "text", keys = ["a'b", "c\\\\nd"] }
day = { type = "date", keys = ["2020-01-01", "2020-01-02"] }

[[query]]
statistic = "count"
by = ["it's \\"odd\\"", "day"]
epsilon = 0.5

[[query]]
statistic = "mean"
column = "income"
accuracy = 200
group_size = 100

[[query]]
statistic = "quantiles"
column = "age"
quantiles = [0.25, 0.5]
where = "income >= 10.5"
epsilon = 0.3

[[query]]
statistic = "count"
by = ["age"]
bins = [0, 18, 65, 101]
weight = 1
"""


def _plan_file(tmp_path: Path, rows: int = 120) -> Path:
    g = np.random.default_rng(2)
    lines = ['pid,age,income,"it\'s ""odd""",day']
    for i in range(rows):
        text = ["a'b", "c\\nd"][i % 2]
        day = f"2020-01-0{1 + i % 2}"
        lines.append(f"{i // 2},{g.integers(0, 100)},{g.random() * 1000:.3f},{text},{day}")
    (tmp_path / "people.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    path = tmp_path / "plan.toml"
    path.write_text(PLAN, encoding="utf-8")
    return path


def _code_cells(notebook: str) -> list[str]:
    cells = json.loads(notebook)["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]


def test_the_script_builds_the_same_plan(tmp_path: Path) -> None:
    for path in (_plan_file(tmp_path), ROOT / "docs" / "examples" / "plan.toml"):
        loaded = Plan.load(path)
        script = export_python(loaded.to_workload())
        ast.parse(script)
        namespace: dict[str, object] = {}
        exec("\n".join(_code_cells(export_notebook(loaded.to_workload()))[:3]), namespace)
        assert namespace["schema"] == loaded.schema
        exec(_code_cells(export_notebook(loaded.to_workload()))[3], namespace)
        assert namespace["queries"] == list(loaded.queries)


def test_the_exported_script_releases_what_the_plan_run_does(tmp_path: Path) -> None:
    path = _plan_file(tmp_path)
    out = tmp_path / "script.py"
    script = export_python(
        Plan.load(path).to_workload(),
        ledger=str(tmp_path / "script-ledger.sqlite"),
        output=str(tmp_path / "script-out"),
        seed=11,
        total_epsilon="20",  # the owner's budget for the new ledger entry
    )
    out.write_text(script, encoding="utf-8")
    src = str(Path(snapdp.__file__).resolve().parents[1])  # the sources under test
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, str(out)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "Spent ε = " in done.stdout
    # what `snapdp run` does (cli/plan.py: Plan.load(...).run(ledger=, output=)), seeded alike
    Plan.load(path).run(
        ledger=tmp_path / "run-ledger.sqlite",
        total_epsilon=20,
        output=tmp_path / "run-out",
        rng=np.random.default_rng(11),
    )
    ours = json.loads((tmp_path / "script-out" / "results.json").read_text(encoding="utf-8"))
    theirs = json.loads((tmp_path / "run-out" / "results.json").read_text(encoding="utf-8"))
    assert ours == theirs
    assert len(ours["queries"]) == 4


def test_the_notebook_is_nbformat_4_and_its_code_is_the_script(tmp_path: Path) -> None:
    workload = Plan.load(_plan_file(tmp_path)).to_workload()
    text = export_notebook(workload, seed=5)
    nb = json.loads(text)
    assert nb["nbformat"] == 4 and nb["nbformat_minor"] == 5
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    ids = [c["id"] for c in nb["cells"]]
    assert len(set(ids)) == len(ids)
    for cell in nb["cells"]:
        assert cell["cell_type"] in ("markdown", "code")
        assert cell["metadata"] == {} and isinstance(cell["source"], list)
        assert all(isinstance(line, str) for line in cell["source"])
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None
        else:
            assert set(cell) == {"cell_type", "id", "metadata", "source"}
    assert "\n".join(_code_cells(text)) == export_python(workload, seed=5)


def test_an_in_memory_source_cannot_be_exported() -> None:
    plan = Plan.load(ROOT / "docs" / "examples" / "plan.toml")
    plan.source = object()
    with pytest.raises(ParameterError, match="needs a `source` file path"):
        export_python(plan.to_workload())


def test_cli_plan_exports_a_script_and_a_notebook(tmp_path: Path) -> None:
    path = _plan_file(tmp_path)
    py, nb = tmp_path / "out.py", tmp_path / "out.ipynb"
    result = CliRunner().invoke(
        main, ["plan", str(path), "--export-python", str(py), "--export-notebook", str(nb)]
    )
    assert result.exit_code == 0, result.output
    workload = Plan.load(path).to_workload()
    assert py.read_text(encoding="utf-8") == export_python(workload)
    assert nb.read_text(encoding="utf-8") == export_notebook(workload)
    assert "SEED = None" in py.read_text(encoding="utf-8")
