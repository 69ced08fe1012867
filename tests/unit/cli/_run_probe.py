"""What a fresh ``snapdp run`` imports (docs/performance.md, "Latency"): the command run in a new
interpreter on a small CSV plan (a count by a keyed column, a mean and a median), its
``sys.modules`` read back. One probe for every import test, so each pays one fresh process."""

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
income = {{ type = "decimal", lower = 0, upper = 500000 }}
sex = {{ type = "integer", keys = [0, 1] }}

[[query]]
statistic = "count"
by = ["sex"]
epsilon = 0.5

[[query]]
statistic = "mean"
column = "income"
by = ["sex"]
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
    print(json.dumps(sorted(sys.modules)))
"""


def run_modules(folder: Path) -> set[str]:
    """The modules a fresh ``snapdp run`` of the plan above leaves loaded (its results written
    to ``folder``/out, checked)."""
    data = folder / "people.csv"
    rows = "".join(f"{20 + i % 50},{1000 + 37 * i},{i % 2}\n" for i in range(40))
    data.write_text("age,income,sex\n" + rows, encoding="utf-8")
    plan = folder / "plan.toml"
    plan.write_text(_PLAN.format(source=data.as_posix()), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    args = [sys.executable, "-c", _PROBE, "run", str(plan), "--ledger", str(folder / "l.db"),
            "--output", str(folder / "out"), "--total-epsilon", "100"]  # fmt: skip
    out = subprocess.run(args, check=True, capture_output=True, text=True, env=env)
    for name in ("results.csv", "results.parquet"):
        assert (folder / "out" / name).exists()
    return set(json.loads(out.stdout.strip().splitlines()[-1]))
