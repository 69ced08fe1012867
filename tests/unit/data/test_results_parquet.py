"""results.parquet is written without pandas (issue 32: pyarrow's ``pyarrow.array`` imports
pandas at its first conversion, ~0.25 s of a fresh ``snapdp run``): the result table's columns
are built from their buffers, and the file is byte for byte the one ``pyarrow.array`` gave,
for every kind of column a result table holds (and the old path stays for any other)."""

from __future__ import annotations

import io
import math
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.unit.cli._run_probe import run_modules

from snapdp.data.output.writers import _parquet_bytes, arrow_column


def _old_bytes(header: list[str], rows: list[list[object]]) -> bytes:
    """The writer as it was: ``pyarrow.array`` per column, text when types mix."""
    arrays = []
    for i in range(len(header)):
        column = [row[i] for row in rows]
        try:
            arrays.append(pa.array(column))
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            arrays.append(pa.array([None if v is None else str(v) for v in column]))
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_arrays(arrays, names=header), buf)
    return buf.getvalue()


def _values(rng: random.Random, kind: str, n: int) -> list[object]:
    pick = {
        "int": lambda: rng.choice((0, -1, 1, 2**63 - 1, -(2**63), rng.randint(-(10**9), 10**9))),
        "float": lambda: rng.choice(
            (0.0, -0.0, 5e-324, -1.5, math.inf, -math.inf, 1e308, rng.uniform(-1e6, 1e6))
        ),
        "bool": lambda: rng.random() < 0.5,
        "str": lambda: rng.choice(("", "a", "é", "日本", "x" * 40, "line\nbreak", "0")),
        "mixed_num": lambda: rng.choice((1, -7, 2.5, 2**53, -(2**53), 0.1)),
    }[kind]
    nulls = rng.random() < 0.5
    return [None if nulls and rng.random() < 0.3 else pick() for _ in range(n)]


KINDS = ["int", "float", "bool", "str", "mixed_num"]


@pytest.mark.parametrize("seed", range(30))
def test_the_file_is_the_one_pyarrow_array_wrote(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.choice((0, 1, 3, 17, 200))
    kinds = [rng.choice(KINDS) for _ in range(6)]
    columns = [_values(rng, k, n) for k in kinds]
    columns.append([None] * n)  # a column no query fills (e.g. target_met)
    columns.append([rng.choice((1, "a", None)) for _ in range(n)])  # keys of several types
    header = [f"c{i}" for i in range(len(columns))]
    rows = [list(r) for r in zip(*columns, strict=True)] if n else []
    assert _parquet_bytes(header, rows) == _old_bytes(header, rows)


@pytest.mark.parametrize(
    "values",
    [[True, 1], [1, 2**60, 0.5], [b"x"], [1.5, "a"], [None, True, 0.5]],
    ids=["bool_int", "big_int_float", "bytes", "float_str", "bool_float"],
)
def test_other_columns_go_the_old_way(values: list[object]) -> None:
    assert arrow_column(values) is None
    header, rows = ["c"], [[v] for v in values]
    assert _parquet_bytes(header, rows) == _old_bytes(header, rows)


def test_an_int_past_int64_fails_as_before() -> None:
    assert arrow_column([2**63]) is None
    with pytest.raises(OverflowError):
        _old_bytes(["c"], [[2**63]])
    with pytest.raises(OverflowError):
        _parquet_bytes(["c"], [[2**63]])


def test_snapdp_run_does_not_import_pandas(tmp_path: Path) -> None:
    modules = run_modules(tmp_path)  # a fresh `snapdp run` that writes results.parquet
    assert "snapdp.data.output.writers" in modules and "pyarrow" in modules
    assert "pandas" not in modules
