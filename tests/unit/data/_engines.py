"""The engine the data tests run on: DuckDB when its engine is installed, else the pure-Python
oracle of ``tests/data_oracle.py``; the test is skipped, saying why, when neither is present."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from snapdp.data.model.schema import CsvOptions


def local_engine(source: object, csv_options: CsvOptions | None = None) -> Any:
    """An engine over ``source`` (a CSV path, a list of row dicts, a DataFrame, an Arrow table)."""
    try:
        module = importlib.import_module("snapdp.data.engines.duckdb.engine")
        if not isinstance(source, list):
            return module.DuckDBEngine(source, csv=csv_options or CsvOptions())
    except ImportError:
        pass
    try:
        oracle = importlib.import_module("tests.data_oracle")
    except ImportError:
        pytest.skip("no engine: neither snapdp.data.engines.duckdb.engine nor tests/data_oracle.py")
    return oracle.OracleEngine(source, csv_options=csv_options)


def oracle_engine(source: object, csv_options: CsvOptions | None = None) -> Any:
    """The pure-Python oracle engine (skips when tests/data_oracle.py is absent)."""
    try:
        oracle = importlib.import_module("tests.data_oracle")
    except ImportError:
        pytest.skip("tests/data_oracle.py is absent")
    return oracle.OracleEngine(source, csv_options=csv_options)
