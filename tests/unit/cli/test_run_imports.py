"""What a fresh ``snapdp run`` imports (docs/performance.md, "Latency"): a DuckDB release renders
its SQL without sqlglot's Spark dialect and draws no chart library, and a TOML plan parses no
SQL (``PrivateTable.sql`` imports the SQL front end when called). Checked by running the
command in a fresh interpreter and reading its ``sys.modules`` (tests/unit/cli/_run_probe.py;
results.parquet without pandas: tests/unit/data/test_results_parquet.py)."""

from __future__ import annotations

import pytest
from tests.unit.cli._run_probe import run_modules


@pytest.fixture(scope="module")
def modules(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    return run_modules(tmp_path_factory.mktemp("run-imports"))


def test_a_duckdb_run_imports_no_spark_dialect_nor_charts(modules: set[str]) -> None:
    names = {"sqlglot.dialects.spark", "sqlglot.generators.spark", "matplotlib", "pyspark"}
    assert "snapdp.data.output.writers" in modules  # the probe saw the release's modules
    assert not names & modules


def test_snapdp_run_of_a_toml_plan_imports_no_sql_front_end(modules: set[str]) -> None:
    assert "snapdp.data.frontends.toml" in modules
    assert not {m for m in modules if m.startswith("snapdp.data.frontends._sql")}
    assert "snapdp.data.frontends.sql" not in modules
