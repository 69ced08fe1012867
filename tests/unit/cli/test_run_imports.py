"""What a fresh ``snapdp run`` imports (docs/performance.md, "Latency"): a DuckDB release renders
its SQL without sqlglot's Spark dialect, and draws no chart library. Checked by running the
command in a fresh interpreter and reading its ``sys.modules``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[3] / "src")

_PLAN = """[data]
source = "{source}"
total_epsilon = 100

[columns]
age = {{ type = "integer", lower = 0, upper = 100 }}
sex = {{ type = "integer", keys = [0, 1] }}

[[query]]
statistic = "count"
by = ["sex"]
epsilon = 0.5

[[query]]
statistic = "mean"
column = "age"
epsilon = 0.5

[[query]]
statistic = "quantiles"
column = "age"
quantiles = [0.5]
epsilon = 0.5
"""

_PROBE = """
import json, sys
from snapdp.cli import main
try:
    main(sys.argv[1:], prog_name="snapdp", standalone_mode=False)
finally:
    names = ("sqlglot.dialects.spark", "sqlglot.generators.spark", "matplotlib", "pyspark")
    print(json.dumps([m for m in names if m in sys.modules]))
"""


def _run(tmp_path: Path) -> list[str]:
    data = tmp_path / "people.csv"
    data.write_text(
        "age,sex\n" + "".join(f"{20 + i % 50},{i % 2}\n" for i in range(40)), encoding="utf-8"
    )
    plan = tmp_path / "plan.toml"
    plan.write_text(_PLAN.format(source=data.as_posix()), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    args = [sys.executable, "-c", _PROBE, "run", str(plan), "--ledger", str(tmp_path / "l.db"),
            "--output", str(tmp_path / "out"), "--total-epsilon", "100"]  # fmt: skip
    out = subprocess.run(args, check=True, capture_output=True, text=True, env=env)
    assert (tmp_path / "out" / "results.csv").exists()
    loaded: list[str] = json.loads(out.stdout.strip().splitlines()[-1])
    return loaded


def test_a_duckdb_run_imports_no_spark_dialect_nor_charts(tmp_path: Path) -> None:
    assert _run(tmp_path) == []
