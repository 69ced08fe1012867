"""Hive partition values are text, cast by the declaration (DESIGN §8.1, §8.2; docs/data.md,
"Reading the data"), in a folder, a pattern and a single file, as on Spark.

DuckDB types a partition column from the values of all the folders (BIGINT or DATE when every
value looks like one, else VARCHAR), and pyarrow's hive discovery likewise (int32). So one unit's
row in a folder of its own (``county=A1``) changed how every other row's value was read: with
the text keys "01" and "02" declared, D counted 0 and 0 rows (``01`` read as the integer 1) and
D + that one row 50 and 70."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.data_oracle import OracleEngine

from snapdp.data.engines.base import AggregatePlan
from snapdp.data.engines.duckdb.engine import DuckDBEngine
from snapdp.data.model.schema import Column, ContributionBounds

CASES = {
    "text": (Column("p", "text", keys=("01", "02")), ["01", "02"], "A1"),
    "integer": (Column("p", "integer", keys=(2024, 2025)), ["2024", "2025"], "x"),
    "date": (Column("p", "date", keys=("2024-01-01",)), ["2024-01-01", "2024-01-02"], "2024-13-01"),
}
SIZES = (50, 70)


def _folder(root: Path, values: list[str], extra: str | None) -> Path:
    parts = [(v, n) for v, n in zip(values, SIZES, strict=True)]
    if extra is not None:
        parts.append((extra, 1))
    for value, n in parts:
        (root / f"p={value}").mkdir(parents=True)
        units = [f"{value}-{i}" for i in range(n)]  # a text column of the files
        table = pa.table({"v": list(range(n)), "u": units})
        pq.write_table(table, root / f"p={value}" / "part-0.parquet")
    return root


def _sources(root: Path) -> list[DuckDBEngine]:
    return [
        DuckDBEngine(root),
        DuckDBEngine(str(root / "**" / "*.parquet"), glob=True),
    ]


@pytest.mark.parametrize("kind", list(CASES))
def test_one_row_in_a_folder_of_its_own_moves_no_other_row(tmp_path: Path, kind: str) -> None:
    """D and D' = D plus one row in a new partition folder whose value is not of the declared
    type: the same exact counts in every declared cell (the new row is no key), from the
    folder and from a pattern over it, on the DuckDB and the Arrow reading paths."""
    column, values, extra = CASES[kind]
    plan = AggregatePlan(groupings=(column,))
    # a text column of the files too: the Arrow path, its partition values as text as well
    units = AggregatePlan(
        groupings=(column,),
        unit=Column("u", "text"),
        bounds=ContributionBounds(1),
        hash_key="00112233445566778899aabbccddeeff",
    )
    d = _folder(tmp_path / "d", values, None)
    d2 = _folder(tmp_path / "d2", values, extra)
    expected = [SIZES[0], SIZES[1]] if kind != "date" else [SIZES[0]]
    for engine in (*_sources(d), *_sources(d2)):
        assert engine.aggregate(plan).rows == expected
        assert engine.aggregate(units).rows == expected


def test_partition_values_are_read_as_the_text_the_folders_hold(tmp_path: Path) -> None:
    """The values of the folder names as text, as the reference engine reads the same cells
    (and Spark: tests/unit/data/engines/test_spark_engine.py)."""
    table = pa.table({"k": ["0", "1", "2", "1", "00"], "v": [1.5, 2.0, None, 24.0, 7.0]})
    pq.write_to_dataset(table, tmp_path / "ds", partition_cols=["k"])
    key = Column("k", "text", keys=("0", "1", "00"))
    plan = AggregatePlan(groupings=(key,))
    rows = [{"k": k, "v": v} for k, v in zip(*table.to_pydict().values(), strict=True)]
    expected = OracleEngine(rows).aggregate(plan)
    assert expected.rows == [1, 2, 1]
    for engine in _sources(tmp_path / "ds"):
        assert engine.aggregate(plan) == expected
    single = tmp_path / "ds" / "k=00"
    one = next(single.iterdir())
    assert DuckDBEngine(one).aggregate(plan).rows == [0, 0, 1]
