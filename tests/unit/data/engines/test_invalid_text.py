"""A text cell that is not valid Unicode is null (docs/data.md, "What does not fit"; issue 21
item 2): a Parquet or Arrow string holding bytes that are not UTF-8, a pandas object cell holding
a lone surrogate. One such cell must never fail a release, nor change anything but its own row.

D is a small table; D' = D plus one row whose text cell is invalid. With the same hash key, every
engine returns for D' exactly what the reference engine (tests/data_oracle.py) returns, for a
plan grouping by the text column, one summing a column cast from text, one whose privacy unit is
the text column, and one reading no text column.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.data_oracle import OracleEngine

from snapdp.data import Column, PrivateTable, Query, Schema
from snapdp.data.engines.base import AggregatePlan, ValueColumn
from snapdp.data.engines.duckdb.engine import DuckDBEngine
from snapdp.data.model.schema import ContributionBounds

KEY = "00112233445566778899aabbccddeeff"
T = Column("t", "text", keys=("a", "b", "é"))
N = ValueColumn(Column("n", "integer", lower=Fraction(0), upper=Fraction(10)), 0, 0, 10)
#: a decimal read from a text column: a bad cell there is null too
X = ValueColumn(Column("x", "decimal", lower=Fraction(0), upper=Fraction(10)), 1, 0, 100)
PLANS = {
    "grouped": AggregatePlan(groupings=(T,), values=(N, X)),
    "unit": AggregatePlan(
        values=(N,), unit=Column("t", "text"), bounds=ContributionBounds(2), hash_key=KEY
    ),
    "no text": AggregatePlan(values=(N,)),
    "count": AggregatePlan(),
}
BAD_BYTES = [b"\xff\xfe", b"a\x80", b"\xed\xa0\x80", b"\xc3"]  # a surrogate's bytes, a cut é


def _rows(n: int = 40) -> tuple[list[bytes | None], list[int], list[bytes | None]]:
    text = [("a", "b", "é", "")[i % 4].encode() for i in range(n)]
    return text, [i % 11 for i in range(n)], [f"{i % 9}.5".encode() for i in range(n)]


def _arrow(text: list[bytes | None], n: list[int], x: list[bytes | None]) -> pa.Table:
    """Strings holding any bytes: a binary array viewed as strings (no UTF-8 check)."""

    def as_text(values: list[bytes | None]) -> pa.Array:
        return pa.array(values, pa.binary()).view(pa.string())

    return pa.table({"t": as_text(text), "n": pa.array(n, pa.int64()), "x": as_text(x)})


def _neighbour(bad: bytes) -> tuple[pa.Table, pa.Table]:
    text, n, x = _rows()
    d = _arrow(text, n, x)
    d2 = _arrow([*text[:17], bad, *text[17:]], [*n[:17], 3, *n[17:]], [*x[:17], bad, *x[17:]])
    return d, d2


def test_the_files_hold_invalid_utf8(tmp_path: Path) -> None:
    """The fixture is what it claims: DuckDB's own reader refuses the file, pyarrow reads it."""
    import duckdb

    _, d2 = _neighbour(BAD_BYTES[0])
    pq.write_table(d2, tmp_path / "d2.parquet")
    assert pq.read_table(tmp_path / "d2.parquet").schema.field("t").type == pa.string()
    with pytest.raises(duckdb.Error):
        duckdb.sql(f"SELECT * FROM read_parquet('{tmp_path / 'd2.parquet'}')").fetchall()


@pytest.mark.parametrize("bad", BAD_BYTES, ids=repr)
@pytest.mark.parametrize("kind", ["parquet file", "parquet folder", "parquet glob", "arrow"])
def test_an_invalid_utf8_cell_is_null_never_an_error(tmp_path: Path, kind: str, bad: bytes) -> None:
    d, d2 = _neighbour(bad)
    for name, table in (("d", d), ("d2", d2)):
        sources: dict[str, object] = {"arrow": table}
        if kind == "parquet file":
            pq.write_table(table, tmp_path / f"{name}.parquet")
            sources[kind] = tmp_path / f"{name}.parquet"
        elif kind == "parquet folder":
            folder = tmp_path / name / "part=1"
            folder.mkdir(parents=True)
            half = table.num_rows // 2
            pq.write_table(table.slice(0, half), folder / "a.parquet")
            pq.write_table(table.slice(half), folder / "b.parquet")
            sources[kind] = tmp_path / name
        elif kind == "parquet glob":
            (tmp_path / name).mkdir()
            half = table.num_rows // 2
            pq.write_table(table.slice(0, half), tmp_path / name / "a.parquet")
            pq.write_table(table.slice(half), tmp_path / name / "b.parquet")
            sources[kind] = str(tmp_path / name / "*.parquet")
        engine = DuckDBEngine(sources[kind], glob=kind == "parquet glob")
        oracle = OracleEngine(table)
        for plan_name, plan in PLANS.items():
            assert engine.aggregate(plan) == oracle.aggregate(plan), (name, plan_name)
    # the bad row counts as a row, with a null text: D' differs from D by that row only
    grouped_d = OracleEngine(d).aggregate(PLANS["grouped"])
    grouped_d2 = OracleEngine(d2).aggregate(PLANS["grouped"])
    assert grouped_d == grouped_d2  # its key is null: dropped from the grouping
    count_d2 = OracleEngine(d2).aggregate(PLANS["count"]).rows
    assert count_d2 == [OracleEngine(d).aggregate(PLANS["count"]).rows[0] + 1]


def _frame(with_surrogate: bool) -> pd.DataFrame:
    text, n, x = _rows()
    t: list[object] = [b.decode() for b in text]  # type: ignore[union-attr]
    xs: list[object] = [b.decode() for b in x]  # type: ignore[union-attr]
    if with_surrogate:
        t.insert(17, "\ud800")
        xs.insert(17, "1\udfff")
        n = [*n[:17], 3, *n[17:]]
    return pd.DataFrame({"t": pd.Series(t, dtype=object), "n": n, "x": pd.Series(xs, dtype=object)})


def test_a_lone_surrogate_in_a_pandas_object_column_is_null() -> None:
    for with_surrogate in (False, True):
        frame = _frame(with_surrogate)
        engine, oracle = DuckDBEngine(frame), OracleEngine(frame)
        for plan_name, plan in PLANS.items():
            assert engine.aggregate(plan) == oracle.aggregate(plan), plan_name
    assert DuckDBEngine(_frame(True)).aggregate(PLANS["grouped"]) == DuckDBEngine(
        _frame(False)
    ).aggregate(PLANS["grouped"])


def test_a_release_reading_the_bad_column_succeeds(tmp_path: Path) -> None:
    _, d2 = _neighbour(BAD_BYTES[0])
    pq.write_table(d2, tmp_path / "d2.parquet")
    schema = Schema(
        (Column("t", "text", keys=("a", "b", "é")), Column("x", "decimal", 0, 10)),
    )
    for source in (tmp_path / "d2.parquet", d2, _frame(True)):
        table = PrivateTable(source, schema, total_epsilon=1)
        results = table.release([Query("mean", "x", by=("t",))], 1)
        assert [r.keys for r in results[0].rows] == [("a",), ("b",), ("é",)]


def test_check_shows_the_bad_cell_to_the_owner(tmp_path: Path) -> None:
    """``snapdp check`` may show data: the raw cell is its escaped bytes, the value null."""
    _, d2 = _neighbour(b"\xff")
    engine = DuckDBEngine(d2)
    rows = engine.fetch(engine.cast_select([Column("t", "text")]))
    raws = {r[0] for r in rows}
    assert {"a", "b", "é"} <= raws
    assert any(r[0] is not None and "FF" in r[0].upper() and r[1] is None for r in rows)
