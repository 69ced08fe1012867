"""A folder of Parquet files whose files type a column differently is read by name, every file's
cells by the contract, as a pattern over the same files is (DESIGN §8.1; docs/data.md, "Reading
the data").

Was: DuckDB read a folder by its first file's types and cast every other file's cells to them, so
whether a release could read the folder at all depended on one cell of one unit's file. With
``age`` an int32 in the first file, D plus one unit's file holding the int64 ``33`` released, and
D plus the same unit holding ``2**40`` failed with "could not be read"; likewise a double ``1e300``
or ``inf`` beside int64 files, where ``33.0`` released. Nothing was spent, so the refusal was a
free, repeatable test of a value in the data. The Arrow path (a plan reading a text column of the
files) took the first file's schema the same way.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from snapdp.data.engines.base import AggregatePlan, Aggregates, ValueColumn
from snapdp.data.engines.duckdb.engine import DuckDBEngine
from snapdp.data.model.schema import Column, ContributionBounds

N = 40
AGE = ValueColumn(Column("age", "integer", lower=0, upper=100), 0, 0, 100)
#: the first file's type of ``age``, and one more unit's file: (its type, a value that casts to
#: the first file's type, one that does not)
CASES = {
    "int32 then int64": (pa.int32(), pa.int64(), 33, 2**40),
    "int64 then double": (pa.int64(), pa.float64(), 33.0, 1e300),
    "int64 then infinity": (pa.int64(), pa.float64(), 33.0, float("inf")),
}


def _folder(root: Path, first: pa.DataType, extra: tuple[pa.DataType, object] | None) -> Path:
    root.mkdir()
    ages = pa.array([20 + i % 50 for i in range(N)], first)
    units = [f"u{i}" for i in range(N)]
    pq.write_table(pa.table({"u": units, "age": ages}), root / "a.parquet")
    if extra is not None:
        kind, value = extra
        pq.write_table(pa.table({"u": ["v"], "age": pa.array([value], kind)}), root / "b.parquet")
    return root


def _aggregates(engine: DuckDBEngine) -> list[Aggregates]:
    """The engine's exact aggregates on the DuckDB path (no text column read) and on the Arrow
    path (a text unit column of the files)."""
    plain = AggregatePlan(values=(AGE,))
    units = AggregatePlan(
        values=(AGE,),
        unit=Column("u", "text"),
        bounds=ContributionBounds(1),
        hash_key="00112233445566778899aabbccddeeff",
    )
    return [engine.aggregate(plain), engine.aggregate(units)]


def _summary(engine: DuckDBEngine) -> list[tuple[list[int], list[int], list[int]]]:
    return [(a.rows, a.counts[0], a.sums[0]) for a in _aggregates(engine)]


@pytest.mark.parametrize("case", list(CASES))
def test_a_value_in_one_units_file_never_decides_whether_the_folder_reads(
    tmp_path: Path, case: str
) -> None:
    """D plus one unit's file releases whatever value that file holds, with the exact aggregates
    of a pattern over the same files (which reads each file by name); both values add one row."""
    first, kind, fits, misfits = CASES[case]
    base = _summary(DuckDBEngine(_folder(tmp_path / "d", first, None)))
    for name, value in (("fits", fits), ("misfits", misfits)):
        folder = _folder(tmp_path / name, first, (kind, value))
        read = _summary(DuckDBEngine(folder))
        pattern = _summary(DuckDBEngine(str(folder / "*.parquet"), glob=True))
        assert read == pattern, name
        assert [r for r, _, _ in read] == [[r[0] + 1] for r, _, _ in base], name


def test_a_file_without_a_column_gives_nulls_in_it(tmp_path: Path) -> None:
    """A unit's file that lacks a column is read as nulls in it on both paths (was: the DuckDB
    path failed the whole folder, the Arrow path read nulls)."""
    folder = _folder(tmp_path / "d", pa.int64(), None)
    pq.write_table(pa.table({"u": ["v"]}), folder / "b.parquet")
    read = _summary(DuckDBEngine(folder))
    ages = sum(20 + i % 50 for i in range(N))
    assert read == [([N + 1], [N], [ages])] * 2
    assert read == _summary(DuckDBEngine(str(folder / "*.parquet"), glob=True))


def test_uint64_beside_signed_files_reads_whatever_its_values(tmp_path: Path) -> None:
    """A uint64 file beside int64 ones, in a folder and in a pattern: Arrow unified the column
    as int64 and the read of the Arrow path failed on a value above 2**63 − 1 (``2**64 − 1``),
    where ``33`` released. Now the value is null, as on the DuckDB path (each file is read at its
    own type: a uint64 above 2**63 − 1 is no integer of the contract)."""
    for name, value in (("fits", 33), ("misfits", 2**64 - 1)):
        folder = _folder(tmp_path / name, pa.int64(), (pa.uint64(), value))
        read = _summary(DuckDBEngine(folder))
        assert read == _summary(DuckDBEngine(str(folder / "*.parquet"), glob=True)), name
        assert [r for r, _, _ in read] == [[N + 1]] * 2, name


@pytest.mark.parametrize("layout", ["plain files", "key=value folders"])
def test_a_folder_of_plain_files_reads_text_by_the_contract(tmp_path: Path, layout: str) -> None:
    """A folder whose files lie in no key=value folder: pyarrow's hive discovery named every
    column of the files as a partition column, so the Arrow path read their text as strings
    rather than bytes: a cell that is not UTF-8 was a value (here one more unit). Now as in
    key=value folders: such a cell is null, its row's unit dropped."""
    counts = []
    for name, cell in (("good", b"a"), ("bad", b"\xff\xfe")):
        root = tmp_path / name
        folder = root if layout == "plain files" else root / "part=1"
        folder.mkdir(parents=True)
        text = pa.array([b"a", b"b"] * 10, pa.binary()).view(pa.string())
        pq.write_table(pa.table({"u": text, "age": list(range(20))}), folder / "a.parquet")
        odd = pa.table({"u": pa.array([cell], pa.binary()).view(pa.string()), "age": [1]})
        pq.write_table(odd, folder / "b.parquet")
        plan = AggregatePlan(
            unit=Column("u", "text"), bounds=ContributionBounds(2), hash_key="0" * 32
        )
        counts.append(DuckDBEngine(root).aggregate(plan).rows)
    assert counts == [[4], [4]]  # units a and b, two rows each; the bad cell's unit is null
