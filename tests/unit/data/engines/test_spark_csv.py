"""The Spark engine's CSV input against the pure-Python reference engine (docs/data.md, "CSV
input"): one record per line, the tricky-CSV table, random lines, issue 21's edges and D' = D
plus one awkward line. In the xdist group "spark" (the one Spark JVM under ``pytest -n 2``,
tests/unit/data/engines/conftest.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.data_oracle import OracleEngine
from tests.unit.data.engines._csv_cases import AWKWARD as AWKWARD_LINES
from tests.unit.data.engines._csv_cases import FILES, random_lines, records, write
from tests.unit.data.engines.test_spark_engine import KEY, U_TEXT, K, V, _spark

from snapdp.data.engines.base import AggregatePlan
from snapdp.data.model.schema import ContributionBounds
from snapdp.errors import ParameterError

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


def _spark_records(engine: Any) -> list[tuple[Any, ...]]:
    return records([tuple(r) for r in engine._df.collect()])


def _records_by_file(engine: Any) -> dict[str, list[tuple[Any, ...]]]:
    """The records of an engine over a pattern, by file name: one Spark job for all files."""
    from pyspark.sql import functions as sf

    rows = engine._df.withColumn("_file", sf.input_file_name()).collect()
    by: dict[str, list[tuple[Any, ...]]] = {}
    for row in rows:
        by.setdefault(Path(row["_file"]).name, []).append(tuple(row)[:-1])
    return {name: records(found) for name, found in by.items()}


# Awkward first lines of a table without a header (issue 21 item 1).
FIRST_LINES = (b"0,1,2,3", b"1,2", b'1,"2,3', b"\xff,1,1", b"\x00", b"1,1," + b"9" * 40)


def _rows_by_file(engine: Any) -> dict[str, list[tuple[Any, ...]]]:
    """The rows (unsorted, all columns) of an engine over a pattern, by file name: one job."""
    from pyspark.sql import functions as sf

    by: dict[str, list[tuple[Any, ...]]] = {}
    for row in engine._df.withColumn("_file", sf.input_file_name()).collect():
        by.setdefault(Path(row["_file"]).name, []).append(tuple(row)[:-1])
    return by


def test_tricky_csv_files_read_the_same_as_duckdb_and_the_oracle(
    spark_session: Any, tmp_path: Path
) -> None:
    """Every file of the tricky-CSV table: Spark's column names and records equal the reference
    engine's (and DuckDB's, tested in test_csv_lines.py): quoted delimiters, doubled quotes,
    CRLF, mixed endings, lone CRs, BOMs, no final newline, empty fields, blank lines, header
    only, malformed lines, NULs, bytes that are not UTF-8, latin-1, other delimiters.

    The files of one option set are read as one pattern (read by name, each file by its own
    header, since 2026-11-27; was one engine and one read per file, 36 of each): the pattern's
    columns are the union of the reference's names file by file, in the order of the files, and
    each file's records (``input_file_name``, one job per option set) are the reference's in
    its own columns and null in the others. A header-only file's names are checked alone."""
    groups: dict[Any, list[str]] = {}
    for name, (_, opts) in FILES.items():
        groups.setdefault(opts, []).append(name)
    wrong = []
    for i, (opts, names_of_files) in enumerate(groups.items()):
        folder = tmp_path / f"set{i}"
        folder.mkdir()
        expected: dict[str, tuple[list[str], list[tuple[Any, ...]]]] = {}
        for name in names_of_files:
            path = write(folder, name, FILES[name][0])
            oracle = OracleEngine(path, csv_options=opts)
            names = oracle.column_names()
            rows = records([tuple(r[c] for c in names) for r in oracle._rows])
            expected[path.name] = (names, rows)
        engine = _spark(str(folder / "*.csv"), spark_session, csv=opts, glob=True)
        columns = engine.column_names()
        union = list(dict.fromkeys(c for f in sorted(expected) for c in expected[f][0]))
        if columns != union:
            wrong.append(f"columns of {names_of_files}")
        got = _rows_by_file(engine)
        for file, (names, rows) in expected.items():
            at = [columns.index(c) for c in names] if set(names) <= set(columns) else []
            mine = records([tuple(r[j] for j in at) for r in got.get(file, [])])
            others = {r[j] for r in got.get(file, []) for j in range(len(columns)) if j not in at}
            if mine != rows or others - {None}:
                wrong.append(file)
            if (
                not rows
                and _spark(str(folder / file), spark_session, csv=opts).column_names() != names
            ):
                wrong.append(f"header of {file}")
    assert wrong == []


def test_tricky_csv_gzip_and_header_errors(spark_session: Any, tmp_path: Path) -> None:
    import gzip

    data = FILES["lone cr is data"][0]
    plain = write(tmp_path, "plain", data)
    packed = tmp_path / "packed.csv.gz"
    packed.write_bytes(gzip.compress(data))
    assert _spark_records(_spark(str(packed), spark_session)) == _spark_records(
        _spark(str(plain), spark_session)
    )
    for content, match in [
        (b"\n \r\n", "no CSV header"),
        (b'a,"b\n1,2\n', "no CSV header"),
        (b'""\n1\n', "no CSV header"),
        (b"a,b\xff\n1,2\n", "not valid utf-8"),
        (b"a,a\n1,2\n", "repeats"),
        (b"a\x00,b\n1,2\n", "NUL"),
    ]:
        path = tmp_path / "h.csv"
        path.write_bytes(content)
        with pytest.raises(ParameterError, match=match):
            _spark(str(path), spark_session)


@pytest.mark.parametrize(("delimiter", "header"), [(",", True), ("\t", False), ("§", True)])
def test_random_csv_lines_read_the_same_as_the_oracle(
    spark_session: Any, tmp_path: Path, delimiter: str, header: bool
) -> None:
    """3,000 random lines of quotes, delimiters, CRs, BOMs, NULs and bad bytes in one file."""
    import random

    from snapdp.data.model.schema import CsvOptions

    d = delimiter.encode()
    lines = [
        line.replace(b",", d) for line in random_lines(random.Random(len(delimiter) + header), 3000)
    ]
    path = tmp_path / "r.csv"
    path.write_bytes(d.join([b"a", b'"b' + d + b'"', b"c"]) + b"\n" + b"\n".join(lines))
    names = None if header else ("a", "b", "c")
    opts = CsvOptions(delimiter=delimiter, header=header, column_names=names)
    expected = OracleEngine(path, csv_options=opts)
    names = expected.column_names()
    want = records([tuple(r[c] for c in names) for r in expected._rows])
    assert len(want) > 500
    engine = _spark(str(path), spark_session, csv=opts)
    assert engine.column_names() == names and _spark_records(engine) == want


def test_issue21_no_header_long_lines_and_glob_by_name(spark_session: Any, tmp_path: Path) -> None:
    """Issue 21 items 1, 3, 5 on Spark (the DuckDB versions: test_csv_edges.py). An awkward first
    line without a header (the columns declared): Spark reads D and each D' = one line + D into
    the reference engine's records (one job for all, read as one pattern), and D's aggregates
    equal the reference's end to end; a line longer than max_line_bytes (read past by Hadoop's
    line reader); files of a pattern whose headers order the columns differently or lack one
    (read by name)."""
    from snapdp.data.model.schema import CsvOptions

    plan = AggregatePlan((K,), (V,))
    opts = CsvOptions(header=False, column_names=("k", "v", "u"), max_line_bytes=32)
    base = b"0,1,a\n1,2,b\n2,3,c\n"
    d = tmp_path / "d.csv"
    d.write_bytes(base)
    want = OracleEngine(d, csv_options=opts).aggregate(plan)
    assert (
        want.rows == [1, 1, 1] and _spark(str(d), spark_session, csv=opts).aggregate(plan) == want
    )
    firsts = tmp_path / "firsts"
    firsts.mkdir()
    (firsts / "d.csv").write_bytes(base)
    for i, first in enumerate(FIRST_LINES):
        (firsts / f"d{i}.csv").write_bytes(first + b"\n" + base)
    engine = _spark(str(firsts / "*.csv"), spark_session, csv=opts, glob=True)
    got = _records_by_file(engine)
    for path in sorted(firsts.iterdir()):
        expected = OracleEngine(path, csv_options=opts)
        assert got.get(path.name, []) == records(
            [tuple(r[c] for c in "kvu") for r in expected._rows]
        ), path
        assert expected.aggregate(plan) == want, path  # each first line is no record here
    d.write_bytes(
        b"k,v,u\n" + base + b'1,2,"' + b"x" * 3_000_000 + b'"\n1,2,"' + b"y" * 4_000 + b'"'
    )
    got = _spark(str(d), spark_session).aggregate(plan)
    assert got == OracleEngine(d).aggregate(plan) and got.rows == [1, 2, 1]  # the 4 kB is a row
    folder = tmp_path / "g"
    folder.mkdir()
    (folder / "p1.csv").write_bytes(b"k,v,u\n0,1,x\n1,2,y\n")
    (folder / "p2.csv").write_bytes(b"u,v,k\n" + b"z,3,1\n" * 25 + b"z,3,2\n" * 25)
    (folder / "p3.csv").write_bytes(b"k,u\n2,w\n0,v\n")
    (folder / "p4.csv").write_bytes(b"")
    pattern = str(folder / "p*.csv")
    engine = _spark(pattern, spark_session, glob=True)
    assert engine.column_names() == ["k", "v", "u"]
    got = engine.aggregate(plan)
    assert got.rows == [2, 26, 26] and got == OracleEngine(pattern, glob=True).aggregate(plan)


CSV_PLANS = [
    AggregatePlan((K,), (V,)),
    AggregatePlan((K,), (V,), U_TEXT, bounds=ContributionBounds(2, 2, 1), hash_key=KEY),
]


def test_neighbours_one_awkward_csv_line_in_the_middle(spark_session: Any, tmp_path: Path) -> None:
    """Every awkward line (unbalanced quote, lone CR, text after a closing quote, bytes that are
    not UTF-8, NUL, a lone quote, very long lines, …) in the middle of one table, each between
    rows of D: Spark reads the same records as the reference engine (whose D' − D is exactly
    the line's own record, test_csv_lines.py), so no line swallows or changes another; the
    aggregates with and without units equal the reference's end to end; nothing is raised, and
    no engine string shows a line. (Until 2026-11-27 each line had a table of its own and two
    aggregates: 42 Spark queries for what one read shows.)"""
    base = [f"{i % 3},{(i * 7) % 50 / 4},p{i % 7}".encode() for i in range(60)]
    lines = base[:30]
    for i, line in enumerate(AWKWARD_LINES.values()):
        lines += [line, base[30 + i]]
    lines += base[30 + len(AWKWARD_LINES) :]
    path = tmp_path / "d2.csv"
    path.write_bytes(b"k,v,u\n" + b"\n".join(lines) + b"\n")
    expected = OracleEngine(path)
    want = records([tuple(r[c] for c in ("k", "v", "u")) for r in expected._rows])
    assert len(want) > len(base)  # the base rows and the awkward lines that are records
    engine = _spark(str(path), spark_session)
    assert engine.column_names() == ["k", "v", "u"] and engine.describe() == str(path)
    got = _spark_records(engine)
    assert got == want, [r for r in got if r not in want] + [r for r in want if r not in got]
    for plan in CSV_PLANS:
        assert engine.aggregate(plan) == expected.aggregate(plan), plan.unit
