"""results.parquet written in plain Python (issue 32, docs/performance.md "Latency"): every reader
(pyarrow, DuckDB, polars, pandas) sees the table pyarrow's writer gave it: columns, types,
values, nulls and row order (that ``snapdp run`` imports no ``pyarrow.parquet``:
tests/unit/cli/test_run_imports_parquet_sql.py)."""

from __future__ import annotations

import base64
import io
import math
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from snapdp.data.output.arrow_schema import arrow_schema
from snapdp.data.output.parquet import parquet_column
from snapdp.data.output.writers import _parquet_bytes, _pyarrow_parquet_bytes

_TYPES = {"null": pa.null(), "bool": pa.bool_(), "int": pa.int64(), "float": pa.float64(),
          "str": pa.string()}  # fmt: skip


def _column(rng: random.Random, kind: str, n: int) -> list[object]:
    pick = {
        "int": lambda: rng.choice((0, -1, 2**63 - 1, -(2**63), rng.randint(-(10**12), 10**12))),
        "float": lambda: rng.choice((0.0, -0.0, 5e-324, math.inf, -1e308, rng.uniform(-9, 9))),
        "bool": lambda: rng.random() < 0.5,
        "str": lambda: rng.choice(("", "é", "日本", "a,b", "line\nbreak", "x" * 300)),
        "mixed": lambda: rng.choice((3, -(2**53), 2**53, 0.25)),
        "null": lambda: None,
    }[kind]
    return [None if rng.random() < 0.25 else pick() for _ in range(n)]


def _table(seed: int) -> tuple[list[str], list[list[object]]]:
    rng = random.Random(seed)
    n = rng.choice((0, 1, 7, 8, 9, 64, 300))
    kinds = [rng.choice(("int", "float", "bool", "str", "mixed", "null")) for _ in range(7)]
    columns = [_column(rng, k, n) for k in kinds]
    columns.append([rng.choice((1, "a", None)) for _ in range(n)])  # several types: text
    header = [f"c{i}é" for i in range(len(columns))]
    return header, [list(r) for r in zip(*columns, strict=True)]


@pytest.mark.parametrize("seed", range(40))
def test_pyarrow_reads_the_old_table_field_for_field(seed: int) -> None:
    header, rows = _table(seed)
    new = pq.read_table(io.BytesIO(_parquet_bytes(header, rows)))
    old = pq.read_table(io.BytesIO(_pyarrow_parquet_bytes(header, rows)))
    assert new.schema.equals(old.schema, check_metadata=True)
    for a, b in zip(new.schema, old.schema, strict=True):
        assert (a.name, a.type, a.nullable) == (b.name, b.type, b.nullable)
    for name in header:
        assert new[name].null_count == old[name].null_count
        got, want = new[name].to_pylist(), old[name].to_pylist()
        assert [repr(v) for v in got] == [repr(v) for v in want]  # -0.0 and 0.0 apart


@pytest.mark.parametrize("seed", range(6))
def test_duckdb_polars_and_pandas_read_the_same_table(seed: int, tmp_path: Path) -> None:
    header, rows = _table(seed)
    new, old = tmp_path / "new.parquet", tmp_path / "old.parquet"
    new.write_bytes(_parquet_bytes(header, rows))
    old.write_bytes(_pyarrow_parquet_bytes(header, rows))
    import duckdb

    con = duckdb.connect()
    read = [con.sql(f"SELECT * FROM read_parquet('{p}')") for p in (new, old)]
    assert read[0].types == read[1].types and read[0].columns == read[1].columns
    assert read[0].fetchall() == read[1].fetchall()
    try:
        import polars as pl
    except ImportError:
        pl = None
    if pl is not None:
        a, b = pl.read_parquet(new), pl.read_parquet(old)
        assert a.schema == b.schema and a.rows() == b.rows()
    try:
        import pandas as pd
    except ImportError:
        pd = None
    if pd is not None:
        pa_, pb = pd.read_parquet(new), pd.read_parquet(old)
        assert pa_.dtypes.to_dict() == pb.dtypes.to_dict()
        assert pa_.equals(pb)


def test_the_arrow_schema_metadata_reads_as_the_arrow_schema() -> None:
    kinds = ["null", "bool", "int", "float", "str", "str"]
    names = ["n", "b", "i", "f", "s", "日本"]
    raw = base64.b64decode(arrow_schema(names, kinds))
    got = pa.ipc.read_schema(pa.py_buffer(raw))
    assert got.equals(pa.schema([(n, _TYPES[k]) for n, k in zip(names, kinds, strict=True)]))
    assert len(pa.ipc.read_schema(pa.py_buffer(base64.b64decode(arrow_schema([], []))))) == 0


@pytest.mark.parametrize("values", [[True, 1], [2**63], [1, 2**60, 0.5], [b"x"], [1.5, "a"]])
def test_other_columns_are_left_to_pyarrow(values: list[object]) -> None:
    assert parquet_column(values) is None
