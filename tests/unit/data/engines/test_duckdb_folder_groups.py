"""A Parquet folder or pattern whose files type a column differently releases what its files
release read one by one (docs/data.md, "Reading the data"): each group of files of one schema is
read at its own types and cast by the declaration, as a single file is, and the groups' rows are
then put together. On both paths (DuckDB's reader, and Arrow's for a plan reading a text column
of the files), in a folder and in a pattern.

Was: the folder was read at each column's common type (DuckDB's ``union_by_name``), so:

* a DECIMAL(38, 2) file beside a DECIMAL(38, 0) one was read as DECIMAL(38, 0): 1.25 became 1,
  silently, in every file of scale 2, because of another person's file;
* an int64 cell 2**53 + 1 beside a double file was read as the double 2**53;
* a DATE file beside a BIGINT one, or an integer file beside a text one, could not be read at
  all (the Arrow path refused the schemas);
* −2^63 in an int64 file beside a uint64 one was 0 on the DuckDB path and null on the Arrow path.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from snapdp.data.engines.base import AggregatePlan, ValueColumn
from snapdp.data.engines.duckdb.engine import DuckDBEngine
from snapdp.data.model.schema import Column, ContributionBounds

#: per case: the declared value column, and two files' ``x`` cells (their type and values)
CASES: dict[str, tuple[ValueColumn, list[tuple[pa.DataType, list[object]]]]] = {
    "decimal scales": (
        ValueColumn(Column("x", "decimal", lower=-100, upper=100), 2, -10_000, 10_000),
        [
            (pa.decimal128(38, 2), [Decimal("1.25"), Decimal("2.50"), Decimal("-0.75")]),
            (pa.decimal128(38, 0), [Decimal(7), Decimal(-3)]),
        ],
    ),
    "decimal scales, integer": (
        ValueColumn(Column("x", "integer", lower=-100, upper=100), 0, -100, 100),
        [
            (pa.decimal128(38, 2), [Decimal("1.25"), Decimal("2.00")]),
            (pa.decimal128(38, 0), [Decimal(7)]),
        ],
    ),
    "int64 beside double": (  # the common type DOUBLE rounded 2**53 + 1 to 2**53
        ValueColumn(Column("x", "integer", lower=-(2**60), upper=2**60), 0, -(2**60), 2**60),
        [(pa.int64(), [2**53 + 1, 3]), (pa.float64(), [0.5, 2.0])],
    ),
    "date beside int64": (
        ValueColumn(Column("x", "integer", lower=-100, upper=100), 0, -100, 100),
        [(pa.date32(), [dt.date(2024, 1, 1)]), (pa.int64(), [5, 6])],
    ),
    "int64 beside text": (
        ValueColumn(Column("x", "integer", lower=-100, upper=100), 0, -100, 100),
        [(pa.int64(), [5, 6]), (pa.string(), ["7", "x", " 8 "])],
    ),
    "int64 low end beside uint64": (
        ValueColumn(Column("x", "integer", lower=-100, upper=100), 0, -100, 100),
        [(pa.int64(), [-(2**63), 3]), (pa.uint64(), [2**64 - 1, 4])],
    ),
    "int64 low end beside uint64, decimal": (
        ValueColumn(Column("x", "decimal", lower=-100, upper=100), 0, -100, 100),
        [(pa.int64(), [-(2**63), 3]), (pa.uint64(), [2**64 - 1, 4])],
    ),
}


def _write(folder: Path, files: list[tuple[pa.DataType, list[object]]]) -> list[Path]:
    """One file per entry, its units ``f<i>-<j>`` (a text column of the files) and ``x``."""
    folder.mkdir(parents=True)
    paths = []
    for i, (kind, values) in enumerate(files):
        units = [f"f{i}-{j}" for j in range(len(values))]
        table = pa.table({"u": pa.array(units), "x": pa.array(values, kind)})
        path = folder / f"part-{i}.parquet"
        pq.write_table(table, path)
        paths.append(path)
    return paths


def _summary(engine: DuckDBEngine, vc: ValueColumn) -> list[tuple[int, int, int]]:
    """(rows, count, sum of quanta) on the DuckDB path (no text column read) and on the Arrow path
    (the text unit column of the files)."""
    plain = AggregatePlan(values=(vc,))
    units = AggregatePlan(
        values=(vc,), unit=Column("u", "text"), bounds=ContributionBounds(1), hash_key="0" * 32
    )
    out = []
    for plan in (plain, units):
        a = engine.aggregate(plan)
        out.append((a.rows[0], a.counts[0][0], a.sums[0][0]))
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_a_folder_releases_what_its_files_release_alone(tmp_path: Path, case: str) -> None:
    """Per file the aggregates of that file read alone, whatever the other file's type; the
    folder's (and the pattern's) are their sums, and both paths agree."""
    vc, files = CASES[case]
    folder = tmp_path / "d"
    paths = _write(folder, files)
    alone = [_summary(DuckDBEngine(p), vc) for p in paths]
    total = [tuple(sum(s[k][m] for s in alone) for m in range(3)) for k in range(2)]
    assert total[0] == total[1]  # a single file: both paths agree
    assert _summary(DuckDBEngine(folder), vc) == total
    assert _summary(DuckDBEngine(str(folder / "*.parquet"), glob=True), vc) == total


#: per case: a declared grouping column with one key, and two files' ``x`` cells
KEYED: dict[str, tuple[Column, list[tuple[pa.DataType, list[object]]]]] = {
    "date beside text": (
        Column("x", "date", keys=("2024-01-01",)),
        [(pa.date32(), [dt.date(2024, 1, 1), dt.date(2024, 1, 2)]), (pa.string(), ["2024-01-01"])],
    ),
    "boolean beside text": (
        Column("x", "boolean", keys=(True,)),
        [(pa.bool_(), [True, False, True]), (pa.string(), ["true", "no", "x"])],
    ),
    "text beside int64": (
        Column("x", "text", keys=("5",)),
        [(pa.string(), ["5", "6", ""]), (pa.int64(), [5, 5, 7])],
    ),
}


@pytest.mark.parametrize("case", list(KEYED))
def test_a_folder_groups_as_its_files_alone(tmp_path: Path, case: str) -> None:
    """The rows in a key's cell: per file those of the file alone, on both paths."""
    col, files = KEYED[case]
    folder = tmp_path / "d"
    paths = _write(folder, files)

    def rows(engine: DuckDBEngine) -> list[int]:
        plain = AggregatePlan(groupings=(col,))
        units = AggregatePlan(
            groupings=(col,), unit=Column("u", "text"), bounds=ContributionBounds(1),
            hash_key="0" * 32,
        )  # fmt: skip
        return [engine.aggregate(plain).rows[0], engine.aggregate(units).rows[0]]

    alone = [rows(DuckDBEngine(p)) for p in paths]
    total = [sum(r[k] for r in alone) for k in range(2)]
    assert 0 not in [r[0] for r in alone]  # every file has a row in the cell
    assert rows(DuckDBEngine(folder)) == total
    assert rows(DuckDBEngine(str(folder / "*.parquet"), glob=True)) == total


def test_cast_types_are_the_declared_sql_types() -> None:
    """The types the grouped relation reports are those of the casts' values."""
    import duckdb

    from snapdp.data.engines.relational import exprs
    from snapdp.data.engines.relational.builders import sql_type_name
    from snapdp.data.engines.relational.dialects import duckdb_sql

    for kind in ("integer", "decimal", "text", "boolean", "date"):
        sql = f"DESCRIBE SELECT {duckdb_sql(exprs.null(kind))} AS c"
        assert duckdb.sql(sql).fetchall()[0][1] == sql_type_name(kind), kind


def test_decimal_scales_keep_every_digit(tmp_path: Path) -> None:
    """The reviewer's case by value: 1.25 in a DECIMAL(38, 2) file beside a DECIMAL(38, 0) file
    is 125 quanta of 0.01, not 100 (the common type DECIMAL(38, 0) rounded it)."""
    vc = ValueColumn(Column("x", "decimal", lower=-100, upper=100), 2, -10_000, 10_000)
    folder = tmp_path / "d"
    _write(
        folder, [(pa.decimal128(38, 2), [Decimal("1.25")]), (pa.decimal128(38, 0), [Decimal(7)])]
    )
    assert _summary(DuckDBEngine(folder), vc) == [(2, 2, 825)] * 2


def test_hive_folders_of_differing_schemas(tmp_path: Path) -> None:
    """Key=value folders whose files differ: the partition column is read from the folders'
    names as text in every group, and each group's cells by its own types."""
    root = tmp_path / "d"
    for part, kind, values in (
        ("1", pa.decimal128(38, 2), [Decimal("1.25")]),
        ("2", pa.decimal128(38, 0), [Decimal(2)]),
        ("3", pa.decimal128(38, 0), [Decimal(3)]),
    ):
        (root / f"p={part}").mkdir(parents=True)
        table = pa.table({"u": [f"u{part}"], "x": pa.array(values, kind)})
        pq.write_table(table, root / f"p={part}" / "a.parquet")
    vc = ValueColumn(Column("x", "decimal", lower=-100, upper=100), 2, -10_000, 10_000)
    for engine in (DuckDBEngine(root), DuckDBEngine(str(root / "**" / "*.parquet"), glob=True)):
        assert set(engine.column_names()) == {"u", "x", "p"}
        for key, expected in (("1", 125), ("3", 300)):
            plans = [
                AggregatePlan(values=(vc,), groupings=(Column("p", "text", keys=(key,)),)),
                AggregatePlan(
                    values=(vc,),
                    groupings=(Column("p", "text", keys=(key,)),),
                    unit=Column("u", "text"),
                    bounds=ContributionBounds(1),
                    hash_key="0" * 32,
                ),
            ]
            for plan in plans:
                assert engine.aggregate(plan).sums[0] == [expected], key


def test_check_reads_each_file_at_its_own_types(tmp_path: Path) -> None:
    """``snapdp check``'s casts read each group of files at its own types too."""
    folder = tmp_path / "d"
    _write(
        folder, [(pa.decimal128(38, 2), [Decimal("1.25")]), (pa.decimal128(38, 0), [Decimal(7)])]
    )
    engine = DuckDBEngine(folder)
    sql, unread = engine.check_select([Column("x", "decimal")])
    assert unread == {}
    assert sorted(r[1] for r in engine.fetch(sql)) == [1.25, 7.0]
    assert sorted(r[0] for r in engine.fetch(sql)) == ["1.25", "7"]  # each file's own cell


def test_check_names_a_type_one_group_never_reads(tmp_path: Path) -> None:
    """A bytes column (no text annotation) in one file, text in another, declared text: check
    names the type whose cells are null, and counts the other file's text."""
    folder = tmp_path / "d"
    _write(folder, [(pa.binary(), [b"a"]), (pa.string(), ["b"])])
    engine = DuckDBEngine(folder)
    sql, unread = engine.check_select([Column("x", "text")])
    assert unread == {"x": "BLOB"}
    assert sorted(map(str, engine.fetch(sql))) == ["('a', None)", "('b', 'b')"]


def test_files_whose_names_look_like_patterns(tmp_path: Path) -> None:
    """A group's files are listed to DuckDB one by one: a file named ``a[1].parquet`` (which
    DuckDB would take as a pattern matching ``a1.parquet``) is read as itself, in a key=value
    folder whose column it keeps, beside a file of another schema; the rows alone too."""
    root = tmp_path / "d"
    (root / "p=1").mkdir(parents=True)
    (root / "p=2").mkdir(parents=True)
    decimal = pa.decimal128(38, 2)
    pq.write_table(pa.table({"x": pa.array([Decimal("1.25")], decimal)}), root / "p=1/a[1].parquet")
    pq.write_table(pa.table({"x": pa.array([Decimal("9.99")], decimal)}), root / "p=1/a1.parquet")
    pq.write_table(pa.table({"x": pa.array([7], pa.int64())}), root / "p=2/b.parquet")
    vc = ValueColumn(Column("x", "decimal", lower=-100, upper=100), 2, -10_000, 10_000)
    engine = DuckDBEngine(root)
    one = AggregatePlan(values=(vc,), groupings=(Column("p", "integer", keys=(1,)),))
    assert engine.aggregate(one).sums[0] == [125 + 999]
    assert engine.aggregate(AggregatePlan()).rows == [3]


def test_a_required_column_beside_a_nullable_one(tmp_path: Path) -> None:
    """Files that differ only in whether a column may hold nulls are two groups: the Arrow
    path reads each by its own schema, the nulls of the nullable file included."""
    folder = tmp_path / "d"
    folder.mkdir()
    required = pa.schema([pa.field("u", pa.string()), pa.field("x", pa.int64(), nullable=False)])
    pq.write_table(pa.table({"u": ["a", "b"], "x": [1, 2]}, schema=required), folder / "a.parquet")
    pq.write_table(pa.table({"u": ["c", "d"], "x": [None, 4]}), folder / "b.parquet")
    vc = ValueColumn(Column("x", "integer", lower=0, upper=100), 0, 0, 100)
    assert _summary(DuckDBEngine(folder), vc) == [(4, 3, 7)] * 2


def test_keys_from_the_data_read_each_file_at_its_own_types(tmp_path: Path) -> None:
    """Groups from the data: the observed keys of a folder are those of its files alone."""
    from fractions import Fraction

    from snapdp.data.engines.duckdb.observed import duckdb_keys

    folder = tmp_path / "d"
    decimals = [(pa.decimal128(38, 2), [Decimal("1.25")]), (pa.decimal128(38, 0), [Decimal(7)])]
    paths = _write(folder, decimals)
    col = Column("x", "decimal")
    alone = {k for p in paths for k in duckdb_keys(DuckDBEngine(p), [col], None, [])}
    assert alone == {(Fraction(5, 4),), (Fraction(7),)}
    assert set(duckdb_keys(DuckDBEngine(folder), [col], None, [])) == alone


@pytest.mark.parametrize("where", ["z.parquet", "q=1/z.parquet", "p=3/r=1/z.parquet"])
@pytest.mark.parametrize("kind", [pa.int64(), pa.int32()])
def test_a_file_in_other_key_value_folders(tmp_path: Path, where: str, kind: pa.DataType) -> None:
    """One person's file whose key=value folders differ from the others' (the folder's root
    beside ``p=1/``): the source is read whatever that file's type, its row counted as read
    alone and its partition cells null where its path has none. Was: with the others' schema
    (int64) the folder could not be read and the pattern lost its column ``p``, while with
    another (int32) both released: whether a release failed showed that file's type."""
    root = tmp_path / "d"
    for rel, u, x in (("p=1/a.parquet", "a", 1), ("p=2/b.parquet", "b", 2), (where, "z", 9)):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        table = pa.table({"u": [u], "x": pa.array([x], kind if u == "z" else pa.int64())})
        pq.write_table(table, root / rel)
    vc = ValueColumn(Column("x", "integer", lower=-100, upper=100), 0, -100, 100)
    by_p = Column("p", "integer", keys=(1, 2, 3))
    for engine in (DuckDBEngine(root), DuckDBEngine(str(root / "**" / "*.parquet"), glob=True)):
        assert _summary(engine, vc) == [(3, 3, 12)] * 2
        plans = [
            AggregatePlan(values=(vc,), groupings=(by_p,)),
            AggregatePlan(
                values=(vc,), groupings=(by_p,), unit=Column("u", "text"),
                bounds=ContributionBounds(1), hash_key="0" * 32,
            ),
        ]  # fmt: skip
        expected = [1, 2, 9 if where.startswith("p=3") else 0]
        for plan in plans:
            assert engine.aggregate(plan).sums[0] == expected
