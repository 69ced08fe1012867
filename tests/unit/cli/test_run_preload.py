"""A fresh ``snapdp run`` / ``snapdp sql`` imports the libraries its release will use (DuckDB,
sqlglot, pyarrow, rich) in one go with the collector off (:func:`snapdp.cli.preload`), so that no
collection runs while one of them is being imported (issue 32: nine young collections and a
second generation one, ~30 ms of a fresh run's CPU, ran inside those imports); called with its
arguments (a test's ``CliRunner``), ``preload`` only imports and leaves the collector alone."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.unit.cli._run_probe import _PLAN

SRC = str(Path(__file__).resolve().parents[3] / "src")

#: Runs the command as the process's own (``main()`` reads ``sys.argv``) and prints, for each
#: collection the command set off, the top-level module being imported then (null: none); the
#: process's status is the command's (``check=True`` below).
_PROBE = """
import gc, json, sys
sys.orig_argv[:] = [sys.executable, "-m", "snapdp.cli"]
seen = []

def importing():
    name, f = None, sys._getframe(2)
    while f is not None:
        if f.f_code.co_name == "_find_and_load" and "name" in f.f_locals:
            name = f.f_locals["name"]  # the outermost import wins
        f = f.f_back
    return name

def watch(phase, info):
    if phase == "start":
        seen.append(importing())

def report():  # the command ends the process itself (snapdp.cli._exit), after exit handlers
    gc.callbacks.remove(watch)
    print(json.dumps(seen))

import atexit, snapdp.cli
atexit.register(report)
gc.callbacks.append(watch)
sys.argv = ["snapdp", *sys.argv[1:]]
snapdp.cli.main()
"""

_HEAVY = ("duckdb", "_duckdb", "sqlglot", "pyarrow", "rich", "snapdp.data.engines")


def _collections_in_imports(folder: Path, *args: str, parquet: bool = False) -> list[str]:
    data = folder / "people.csv"
    rows = "".join(f"{20 + i % 50},{1000 + 37 * i},{i % 2}\n" for i in range(40))
    data.write_text("age,income,sex\n" + rows, encoding="utf-8")
    if parquet:  # the same rows as Parquet (no pyarrow preloaded for `sql` on such a name)
        import pyarrow.csv as pv
        import pyarrow.parquet as pq

        pq.write_table(pv.read_csv(data), folder / "people.parquet")
        data = folder / "people.parquet"
    (folder / "plan.toml").write_text(_PLAN.format(source=data.as_posix()), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env["SNAPDP_CACHE_DIR"] = str(folder / "cache")
    env.pop("PYTHONUNBUFFERED", None)  # the report must arrive through the command's own flush
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, *args], check=True, capture_output=True, text=True,
        env=env, cwd=folder,
    )  # fmt: skip
    seen: list[str | None] = json.loads(out.stdout.strip().splitlines()[-1])
    return [name for name in seen if name is not None and name.startswith(_HEAVY)]


def test_a_fresh_run_collects_nothing_while_importing_its_libraries(tmp_path: Path) -> None:
    args = ("run", "plan.toml", "--ledger", "l.db", "--output", "out", "--total-epsilon", "100")
    assert _collections_in_imports(tmp_path, *args) == []
    assert (tmp_path / "out" / "results.parquet").exists()  # the run went through


def test_a_fresh_sql_release_collects_nothing_while_importing_its_libraries(
    tmp_path: Path,
) -> None:
    query = "SELECT sex, COUNT(*) FROM people GROUP BY sex"
    args = ("sql", query, "--declaration", "plan.toml", "--epsilon", "1")
    assert _collections_in_imports(tmp_path, *args) == []
    parquet = tmp_path / "parquet"
    parquet.mkdir()
    assert _collections_in_imports(parquet, *args, parquet=True) == []


@pytest.mark.parametrize("enabled", [True, False])
def test_preload_outside_the_command_process_only_imports(enabled: bool) -> None:
    from snapdp.cli import preload

    frozen = gc.get_freeze_count()
    if not enabled:
        gc.disable()
    try:
        preload("json", "snapdp.cli._print")
        assert gc.isenabled() is enabled and gc.get_freeze_count() == frozen
    finally:
        gc.enable()
    assert "snapdp.cli._print" in sys.modules
