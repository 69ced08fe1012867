"""A bytes column declared text (docs/data.md, "What does not fit", step 1).

A Parquet BYTE_ARRAY column written without the STRING (UTF8) annotation is Arrow ``binary``
(DuckDB: ``BLOB``, Spark: ``BinaryType``). Bytes are not text: such a column declared text is null
throughout, in every engine, decided by the file's schema and never by its cells (the contract's
rule for a native type that cannot hold a value of the declared type, like a DATE declared
integer). It was undocumented, and ``snapdp check`` only listed every cell as "not text" with
examples such as ``'a'``; it now names the column's stored type and what to do.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from tests.data_oracle import OracleEngine

from snapdp.cli import main
from snapdp.data.engines.base import AggregatePlan
from snapdp.data.engines.duckdb.engine import DuckDBEngine
from snapdp.data.engines.relational import exprs
from snapdp.data.model.schema import COLUMN_TYPES, Column, Schema
from snapdp.data.owner.check import check

CELLS = [b"a", b"b", b"a", b"\xff", None]
KEYS = Column("k", "text", keys=("a", "b"))
PLAN = AggregatePlan(groupings=(KEYS,), values=())


def _table(binary: Any = None) -> pa.Table:
    """``k`` as bytes (``binary``, default Arrow ``binary``), ``s`` the same cells as text (the
    bad byte as null)."""
    binary = pa.binary() if binary is None else binary
    text = [None if c is None or c == b"\xff" else c.decode() for c in CELLS]
    return pa.table({"k": pa.array(CELLS, binary), "s": pa.array(text, pa.string())})


@pytest.fixture(scope="module")
def parquet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("binary") / "t.parquet"
    pq.write_table(_table(), path)
    assert str(pq.read_schema(path).field("k").type) == "binary"  # no STRING annotation
    return path


def test_a_bytes_column_declared_text_is_null_in_every_cell(parquet: Path) -> None:
    engine = DuckDBEngine(parquet)
    assert engine.aggregate(PLAN).rows == [0, 0]
    text = Column("s", "text", keys=("a", "b"))
    assert engine.aggregate(AggregatePlan(groupings=(text,), values=())).rows == [2, 1]
    values = engine.fetch(engine.cast_select([Column("k", "text")]))
    assert [v for _raw, v in values] == [None] * len(CELLS)


@pytest.mark.parametrize("binary", [pa.binary(), pa.large_binary()], ids=str)
def test_an_arrow_bytes_column_is_null_as_in_the_reference_engine(binary: Any) -> None:
    table = _table(binary)
    assert DuckDBEngine(table).aggregate(PLAN) == OracleEngine(table).aggregate(PLAN)
    assert DuckDBEngine(table).aggregate(PLAN).rows == [0, 0]


def test_check_names_the_stored_type_and_what_to_do(parquet: Path) -> None:
    report = check(parquet, Schema((KEYS, Column("s", "text", keys=("a", "b")))))
    k, s = report.columns
    assert (k.stored_as, s.stored_as) == ("BLOB", None)
    assert k.cast_failures == 4 and not report.fits
    text = report.to_text()
    assert "stored as BLOB (bytes, not text: binary in Arrow, a Parquet column without the " in text
    assert "which releases never read as text: every cell is null in releases" in text
    assert "Write the column as a string (pyarrow: pa.string())" in text
    assert text.count("stored as") == 1


def test_check_decides_by_the_schema_not_the_cells(tmp_path: Path) -> None:
    empty = tmp_path / "empty.parquet"
    pq.write_table(_table().slice(0, 0), empty)
    (k,) = check(empty, Schema((KEYS,))).columns
    assert k.stored_as == "BLOB" and not k.cast_failures and not k.fits


def test_check_names_any_native_type_never_read_as_the_declared_one(tmp_path: Path) -> None:
    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"d": [dt.date(2024, 1, 31)], "n": [3]}), path)
    d, n = check(path, Schema((Column("d", "integer"), Column("n", "text")))).columns
    assert (d.stored_as, n.stored_as) == ("DATE", None)  # integers are read as text
    assert (
        "stored as DATE, which releases never read as integer"
        in check(path, Schema((Column("d", "integer"),))).to_text()
    )


def test_cli_check_text_and_json(parquet: Path) -> None:
    runner = CliRunner()
    out = runner.invoke(main, ["check", str(parquet), "--keys", "k=a,b"])
    assert out.exit_code == 0, out.output
    assert "stored as BLOB" in out.output
    out = runner.invoke(main, ["check", str(parquet), "--keys", "k=a,b", "--json"])
    (column,) = json.loads(out.output)["columns"]
    assert column["stored_as"] == "BLOB"


def test_reads_is_the_cast_rule() -> None:
    """``reads`` says exactly when the native cast is the all-null one."""
    column = exprs.column("c")
    for family in ("int", "float", "fixed", "bool", "date", "text", "bytes", "other"):
        for kind in COLUMN_TYPES:
            null = exprs.cast_native(column, family, kind) == exprs.null(kind)
            assert exprs.reads(family, kind) is not null, (family, kind)


@pytest.mark.spark
def test_spark_reads_a_bytes_column_as_null_too(spark_session: Any, parquet: Path) -> None:
    from snapdp.data.engines.spark.engine import SparkEngine

    engine = SparkEngine(str(parquet), spark=spark_session)
    assert engine.aggregate(PLAN) == DuckDBEngine(parquet).aggregate(PLAN)
    assert engine.aggregate(PLAN).rows == [0, 0]
