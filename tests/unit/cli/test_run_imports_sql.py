"""What a fresh ``snapdp run`` of a CSV plan imports (issue 32, docs/performance.md "Latency"):
not the SQL front end (a TOML plan without ``sql`` entries does not parse SQL)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

_PROBE = (
    "import runpy, sys\n"
    "sys.argv = ['snapdp', 'run', sys.argv[1], '--ledger', sys.argv[2] + '/l.db',\n"
    "            '--output', sys.argv[2] + '/out', '--total-epsilon', '10']\n"
    "try:\n    runpy.run_module('snapdp.cli', run_name='__main__')\n"
    "except SystemExit as e:\n    assert not e.code, e.code\n"
    "print(' '.join(sorted(sys.modules)))\n"
)


@pytest.fixture(scope="module")
def run_modules(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    data = Path(os.environ.get("SNAPDP_SHARED_DATA", ROOT.parent / "shared" / "data"))
    source = data / "PUMS.csv"
    if not source.exists():
        pytest.skip("PUMS.csv not available (set SNAPDP_SHARED_DATA)")
    work = tmp_path_factory.mktemp("run-imports")
    plan = work / "plan.toml"
    plan.write_text(
        f'[data]\nsource = "{source.as_posix()}"\ntotal_epsilon = 10\n\n[columns]\n'
        'age = { type = "integer", lower = 0, upper = 100 }\n'
        'income = { type = "decimal", lower = 0, upper = 500000 }\n'
        'sex = { type = "integer", keys = [0, 1] }\n\n'
        '[[query]]\nstatistic = "count"\nby = ["sex"]\nepsilon = 0.3\n\n'
        '[[query]]\nstatistic = "mean"\ncolumn = "income"\nby = ["sex"]\nepsilon = 0.3\n\n'
        '[[query]]\nstatistic = "quantiles"\ncolumn = "age"\nquantiles = [0.5]\nepsilon = 0.3\n',
        encoding="utf-8",
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, str(plan), str(work)],
        capture_output=True, text=True, env=env, check=True,
    )  # fmt: skip
    assert (work / "out" / "results.parquet").exists()
    return set(out.stdout.strip().splitlines()[-1].split())


def test_snapdp_run_of_a_toml_plan_imports_no_sql_front_end(run_modules: set[str]) -> None:
    assert "snapdp.data.frontends.toml" in run_modules
    assert "snapdp.data.output.writers" in run_modules  # the probe saw the release's modules
    assert not {m for m in run_modules if m.startswith("snapdp.data.frontends._sql")}
    assert "snapdp.data.frontends.sql" not in run_modules
