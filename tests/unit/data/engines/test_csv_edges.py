"""Issue 21 items 1, 3, 4 and 5: at the edges of CSV input, one added line changes nothing but
the noise (DESIGN §8.1; docs/data.md, "CSV input").

Each test compares a table D with D' = D plus one line: the same outcome (results, or the same
error), the same notes, mechanisms, keys and ledger entries, and exact aggregates that differ
by at most that line's own record — in the DuckDB engine and the reference engine
(``tests/data_oracle.py``); the Spark engine's versions are in ``test_spark_csv.py``.

1. Without a header the columns are declared; the first line is a record like any other.
3. A line longer than ``max_line_bytes`` is no record, skipped without being held in memory.
4. Progress is a whole percentage (tested in test_duckdb_engine.py and test_release_cli.py).
5. ``glob`` reads each file's columns by its own header.
"""

from __future__ import annotations

import gc
import re
import tracemalloc
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from tests.data_oracle import OracleEngine

from snapdp.cli import main
from snapdp.data import Ledger, Plan, PrivateTable, Query
from snapdp.data.engines.base import AggregatePlan, Aggregates, ValueColumn
from snapdp.data.engines.duckdb.engine import DuckDBEngine
from snapdp.data.model.schema import Column, CsvOptions, Schema
from snapdp.errors import ParameterError

A = Column("a", "integer", keys=(1, 4, 7))
B = Column("b", "decimal", lower=Fraction(0), upper=Fraction(10))
PLAN = AggregatePlan(groupings=(A,), values=(ValueColumn(B, 0, 0, 10, None, True),))
COUNT = AggregatePlan()
NO_HEADER = CsvOptions(header=False, column_names=("a", "b", "c"))
QUERIES = [Query("count"), Query("count", by=("a",)), Query("sum", "b", by=("a",))]
D = b"1,2,3\n4,5,6\n7,8,9\n"

# first lines that are no record of three declared columns
FIRST_LINES = {
    "four fields": b"1,2,3,4",
    "two fields": b"1,2",
    "one field": b"7",
    "unbalanced quote": b'1,"2,3',
    "text after a quote": b'"1"x,2,3',
    "invalid utf-8": b"\xff,2,3",
    "nul": b"\x00",
    "nul in a field": b"1,\x002\x00,3\x00x,",
    "lone quote": b'"',
    "long line": b"1,2," + b"3" * 40,
    "parquet magic": b"PAR1",  # a CSV without a header is Parquet by its name, never its line
}


def _outcome(source: Any, schema: Schema, engine: Any = None) -> tuple[str, list[Any], list[Any]]:
    """A seeded release of QUERIES: (the error, or "ok"; what a release shows but the noisy
    values; the ledger entries)."""
    book = Ledger(None, 10)
    try:
        table = PrivateTable(
            source, schema, engine=engine, ledger=book, rng=np.random.default_rng(1)
        )
        results = table.release(QUERIES, 1)
    except ParameterError as exc:
        return str(exc), [], [(e.what, e.query) for e in book.entries()]
    shown = [
        (r.key_columns, r.epsilon, r.delta, r.notes, r.mechanisms, [x.keys for x in r.rows])
        for r in results
    ]
    return "ok", shown, [(e.what, e.query) for e in book.entries()]


def _diff(a: Aggregates, b: Aggregates) -> int:
    """Rows by which two aggregates of PLAN differ in all (L1 over the cells)."""
    return sum(abs(x - y) for x, y in zip(a.rows, b.rows, strict=True))


def _schema(csv: CsvOptions) -> Schema:
    return Schema((A, B), csv=csv)


# -- 1. no header: declared columns ------------------------------------------------------------
@pytest.mark.parametrize("name", list(FIRST_LINES))
def test_without_a_header_a_first_line_is_skipped_like_any_other(tmp_path: Path, name: str) -> None:
    """D and D' = one awkward first line + D: the same release but for the noise, and the same
    exact aggregates (the line is no record), in DuckDB and the reference engine. Before, the
    first line fixed the number of columns: D' counted N − 1 rows fewer, or failed with an
    error that differed by the line."""
    opts = CsvOptions(header=False, column_names=("a", "b", "c"), max_line_bytes=32)
    d = tmp_path / "d.csv"
    d.write_bytes(D)
    d2 = tmp_path / "d2.csv"
    d2.write_bytes(FIRST_LINES[name] + b"\n" + D)
    assert _outcome(d, _schema(opts)) == _outcome(d2, _schema(opts))
    assert _outcome(d, _schema(opts))[0] == "ok"
    for plan in (PLAN, COUNT):
        got = DuckDBEngine(d2, csv=opts).aggregate(plan)
        assert got == DuckDBEngine(d, csv=opts).aggregate(plan)
        assert got == OracleEngine(d2, csv_options=opts).aggregate(plan)
    assert DuckDBEngine(d, csv=opts).aggregate(PLAN).rows == [1, 1, 1]


def test_without_a_header_a_first_record_counts_once(tmp_path: Path) -> None:
    """A first line that is a record is one row more, like any other line."""
    d = tmp_path / "d.csv"
    d.write_bytes(D)
    d2 = tmp_path / "d2.csv"
    d2.write_bytes(b"4,1,x\n" + D)
    assert _outcome(d, _schema(NO_HEADER))[::2] == _outcome(d2, _schema(NO_HEADER))[::2]
    a, b = (DuckDBEngine(p, csv=NO_HEADER).aggregate(PLAN) for p in (d, d2))
    assert b.rows == [1, 2, 1] and _diff(a, b) == 1
    assert b == OracleEngine(d2, csv_options=NO_HEADER).aggregate(PLAN)


def test_without_a_header_a_first_record_starting_with_parquet_magic_counts_once(
    tmp_path: Path,
) -> None:
    """A first record whose first field starts with Parquet's magic bytes ``PAR1`` is a record
    like any other (its key is no integer: a null), whatever the file is named, alone or as the
    first file of a pattern. Before, the engine took the file for Parquet by its first four
    bytes and refused it, so one unit's row made its neighbour's release fail."""
    for name in ("d.csv", "d.data"):
        d = tmp_path / name
        d.write_bytes(D)
        d2 = tmp_path / f"x{name}"
        d2.write_bytes(b"PAR1,2,3\n" + D)
        assert _outcome(d, _schema(NO_HEADER))[::2] == _outcome(d2, _schema(NO_HEADER))[::2]
        assert _outcome(d2, _schema(NO_HEADER))[0] == "ok"
        a, b = (DuckDBEngine(p, csv=NO_HEADER).aggregate(COUNT) for p in (d, d2))
        assert (a.rows, b.rows) == ([3], [4])
        assert DuckDBEngine(d2, csv=NO_HEADER).aggregate(PLAN) == OracleEngine(
            d2, csv_options=NO_HEADER
        ).aggregate(PLAN)
    folder = tmp_path / "many"
    folder.mkdir()
    (folder / "0.csv").write_bytes(b"PAR1,2,3\n" + D)
    (folder / "1.csv").write_bytes(D)
    many = DuckDBEngine(str(folder / "*.csv"), csv=NO_HEADER, glob=True)
    assert many.aggregate(COUNT).rows == [7]


def test_without_a_header_a_parquet_file_is_found_by_its_name(tmp_path: Path) -> None:
    """Without a header a file named ``.parquet`` (``.parq``, ``.pq``) is read as Parquet; with
    one, a Parquet file is found by its magic bytes whatever its name."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"a": [1, 4, 4], "b": [2.0, 5.0, 8.0]})
    for name in ("t.parquet", "t.PQ", "t.parq"):
        pq.write_table(table, tmp_path / name)
        engine = DuckDBEngine(tmp_path / name, csv=NO_HEADER)
        assert engine.column_names() == ["a", "b"]
        assert engine.aggregate(PLAN).rows == [1, 2, 0]
    pq.write_table(table, tmp_path / "t.bin")
    assert DuckDBEngine(tmp_path / "t.bin").aggregate(PLAN).rows == [1, 2, 0]


def test_without_a_header_an_empty_file_is_an_empty_table(tmp_path: Path) -> None:
    """No header: an empty file is a table of no rows (its neighbour has one), not an error."""
    d = tmp_path / "d.csv"
    d.write_bytes(b"")
    d2 = tmp_path / "d2.csv"
    d2.write_bytes(b"1,2,3\n")
    assert _outcome(d, _schema(NO_HEADER))[::2] == _outcome(d2, _schema(NO_HEADER))[::2]
    assert DuckDBEngine(d, csv=NO_HEADER).aggregate(PLAN).rows == [0, 0, 0]


def test_without_a_header_the_columns_must_be_declared(tmp_path: Path) -> None:
    """No header and no declared names: an error naming the parameter, the flag or the plan
    key, before any data is read (the file here does not even exist)."""
    with pytest.raises(ParameterError, match="`column_names`") as info:
        CsvOptions(header=False)
    assert info.value.parameter == "column_names"
    with pytest.raises(ParameterError, match="with a header the header names them"):
        CsvOptions(column_names=("a",))
    for bad in (("a", "a"), ("a", ""), "abc"):
        with pytest.raises(ParameterError, match="column_names"):
            CsvOptions(header=False, column_names=bad)  # type: ignore[arg-type]
    absent = str(tmp_path / "absent.csv")
    out = CliRunner().invoke(main, ["release", absent, "--epsilon", "1", "--count", "--no-header"])
    assert out.exit_code == 2 and "`--csv-columns`" in out.output and "Traceback" not in out.output
    plan = tmp_path / "plan.toml"
    plan.write_text(
        f'[data]\nsource = "{absent}"\nheader = false\ntotal_epsilon = 1\n\n'
        '[[query]]\nstatistic = "count"\nepsilon = 1\n'
    )
    with pytest.raises(ParameterError, match="`column_names`"):
        Plan.load(plan)
    plan.write_text(
        f'[data]\nsource = "{absent}"\nheader = false\ncolumn_names = ["a", "b", "c"]\n'
        "max_line_bytes = 64\ntotal_epsilon = 1\n\n"
        '[[query]]\nstatistic = "count"\nepsilon = 1\n'
    )
    csv = Plan.load(plan).schema.csv
    assert csv.column_names == ("a", "b", "c") and csv.max_line_bytes == 64


def test_the_command_line_without_a_header(tmp_path: Path) -> None:
    """`--no-header --csv-columns a,b,c`: D and D' = an awkward first line + D give the same
    output once the noisy numbers are masked."""
    outputs = []
    for first in (b"", b"1,2,3,4\n", b'1,"2\n', b"\xff,1,1\n"):
        path = tmp_path / "t.csv"
        path.write_bytes(first + D)
        result = CliRunner().invoke(
            main,
            ["release", str(path), "--epsilon", "1", "--count", "--keys", "a=1,4,7",
             "--no-header", "--csv-columns", "a,b,c"],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        masked = re.sub(r"[-+]?\d[\d,]*(\.\d+)?", "N", result.output)
        # column widths follow the noisy numbers' widths: runs of padding and rules count once
        outputs.append(re.sub(r"([ ━─])\1+", r"\1", masked))
    assert len(set(outputs)) == 1


# -- 3. long lines -----------------------------------------------------------------------------
def test_a_line_over_the_limit_is_no_record_and_changes_nothing(tmp_path: Path) -> None:
    """D and D' = D + one line of 3 MB (a quoted field; default limit 1 MiB): the same release
    but for the noise, the same exact aggregates; with a higher limit the line is a record."""
    schema = Schema((Column("a", "integer", keys=(1, 4, 7)), B))
    d = tmp_path / "d.csv"
    d.write_bytes(b"a,b,c\n" + D)
    d2 = tmp_path / "d2.csv"
    d2.write_bytes(b"a,b,c\n1,2,3\n4,5," + b'"' + b"x" * 3_000_000 + b'"\n4,5,6\n7,8,9\n')
    assert _outcome(d, schema) == _outcome(d2, schema)
    assert DuckDBEngine(d2).aggregate(PLAN) == DuckDBEngine(d).aggregate(PLAN)
    assert DuckDBEngine(d2).aggregate(PLAN) == OracleEngine(d2).aggregate(PLAN)
    roomy = CsvOptions(max_line_bytes=4_000_000)  # the line is a record again: one row more
    wide = DuckDBEngine(d2, csv=roomy).aggregate(PLAN)
    assert wide.rows == [1, 2, 1] and _diff(wide, DuckDBEngine(d, csv=roomy).aggregate(PLAN)) == 1
    assert wide == OracleEngine(d2, csv_options=roomy).aggregate(PLAN)
    tiny = CsvOptions(max_line_bytes=4)  # the header "a,b,c" is longer
    with pytest.raises(ParameterError, match="longer than max_line_bytes = 4") as info:
        DuckDBEngine(d, csv=tiny)
    assert info.value.parameter == "max_line_bytes"
    assert DuckDBEngine(d2, csv=CsvOptions(max_line_bytes=6)).aggregate(PLAN).rows == [1, 1, 1]


def test_a_long_line_is_never_held_in_memory(tmp_path: Path) -> None:
    """A 40 MB line (one quoted field) costs the reader no more than a few blocks: the peak of
    Python and numpy allocations while DuckDB scans the file stays under 24 MB (before, the line
    was gathered into one block and parsed: ~19× its size). Arrow's and DuckDB's own memory is
    not traced; DuckDB's is under its memory_limit."""
    path = tmp_path / "long.csv"
    with path.open("wb") as f:
        f.write(b"a,b,c\n1,2,3\n4,5,")
        f.write(b'"' + b"y" * 40_000_000 + b'"\n')
        f.write(b"7,8,9\n")
    engine = DuckDBEngine(path)
    gc.collect()
    tracemalloc.start()
    try:
        got = engine.aggregate(PLAN)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got.rows == [1, 0, 1]
    assert peak < 24_000_000, peak
    assert engine.line_counts() == (3, 2)
    assert engine.skipped_lines(5) == ["line 3 (longer than 1048576 bytes)"]


def test_blocks_read_past_each_long_line_and_hold_little() -> None:
    """The block reader, against a plain split: every line longer than the limit becomes the
    one marker line (never a record), every other line is kept as it is, and no block is longer
    than the block size plus the limit (plus the marker), at any block size and limit."""
    import io
    import random

    from snapdp.data.engines.csv.lines import (
        LONG_LINE,
        _blocks,
    )

    rng = random.Random(21)
    for _ in range(5000):
        lines = [b"x" * rng.choice([0, 1, 2, 3, 5, 8, 9, 20, 40]) for _ in range(rng.randrange(14))]
        data = b"\n".join(lines) + (b"\n" if lines and rng.random() < 0.5 else b"")
        size, limit = rng.randrange(1, 60), rng.randrange(1, 12)
        blocks = list(_blocks(io.BytesIO(data), size, limit))
        parts = data.split(b"\n")
        want = [p if len(p) <= limit else LONG_LINE for p in parts[:-1]]
        want.append(parts[-1] if len(parts[-1]) <= limit else LONG_LINE)
        assert b"".join(blocks) == b"\n".join(want)
        assert all(len(b) <= size + limit + len(LONG_LINE) + 1 for b in blocks)
        assert all(b.endswith(b"\n") for b in blocks[:-1])


def test_the_limit_is_a_flag_and_check_reports_the_long_lines(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes(b"a,b\n1,2\n" + b"3," + b"4" * 100 + b"\n5,6\n")
    base = ["--column", "a:integer", "--max-line-bytes", "50"]
    out = CliRunner().invoke(main, ["check", str(path), *base])
    assert "1 line(s) skipped" in out.output and "line 3 (longer than 50 bytes)" in out.output
    out = CliRunner().invoke(main, ["check", str(path), "--column", "a:integer"])
    assert "skipped" not in out.output
    out = CliRunner().invoke(main, ["check", str(path), "--max-line-bytes", "0"])
    assert out.exit_code == 2 and "--max-line-bytes" in out.output


# -- 5. glob: each file's columns by name ------------------------------------------------------
def _files(folder: Path, extra: bytes = b"") -> str:
    folder.mkdir()
    (folder / "p1.csv").write_bytes(b"a,b,c\n1,2,x\n4,5,y\n")
    (folder / "p2.csv").write_bytes(b"c,b,a\n" + b"".join(b"z,3,%d\n" % k for k in (4, 7) * 25))
    (folder / "p3.csv").write_bytes(b"a,c\n7,w\n1,v\n" + extra)  # no column b
    (folder / "p4.csv").write_bytes(b"b,a\n9,4\n")
    return str(folder / "p*.csv")


def test_glob_reads_every_file_by_its_own_header(tmp_path: Path) -> None:
    """Files whose headers list the columns in other orders (or lack one) are read by name: the
    counts per key are the true ones (before: later files were read by position with the first
    file's names, and p2's 50 rows fell out of every key)."""
    pattern = _files(tmp_path / "d")
    engine = DuckDBEngine(pattern, glob=True)
    assert engine.column_names() == ["a", "b", "c"]
    got = engine.aggregate(PLAN)
    assert got.rows == [2, 27, 26]  # a = 1: p1, p3; 4: p1, p2 ×25, p4; 7: p2 ×25, p3
    assert got.counts[0] == [1, 27, 25]  # b is null in p3's rows
    assert got.sums[0] == [2, 5 + 75 + 9, 75]
    assert got == OracleEngine(pattern, glob=True).aggregate(PLAN)
    pattern2 = _files(tmp_path / "d2", extra=b"4,q\n")  # one row more, in the file without b
    engine2 = DuckDBEngine(pattern2, glob=True)
    assert _diff(got, engine2.aggregate(PLAN)) == 1
    schema = _schema(CsvOptions())
    assert _outcome(None, schema, engine) == _outcome(None, schema, engine2)


def test_glob_without_a_header_uses_the_declared_columns(tmp_path: Path) -> None:
    folder = tmp_path / "n"
    folder.mkdir()
    (folder / "p1.csv").write_bytes(b"1,2,3\n")
    (folder / "p2.csv").write_bytes(b"1,2,3,4\n4,5,6\n")
    engine = DuckDBEngine(str(folder / "p*.csv"), glob=True, csv=NO_HEADER)
    assert engine.aggregate(PLAN).rows == [1, 1, 0]
    assert engine.aggregate(PLAN) == OracleEngine(
        str(folder / "p*.csv"), glob=True, csv_options=NO_HEADER
    ).aggregate(PLAN)


@pytest.mark.parametrize("name", ["d.csv.gz", "d.csv", "d"])
def test_a_gzip_file_is_found_by_its_content(tmp_path: Path, name: str) -> None:
    """A gzipped CSV is gunzipped whatever its name (issue 30): its header and rows are those of
    the plain file, never its compressed bytes read as a line; and a plain file named .gz is
    read as it is."""
    import gzip

    plain = tmp_path / "plain.csv"
    plain.write_bytes(b"a,b,c\n" + D)
    packed = tmp_path / name
    packed.write_bytes(gzip.compress(plain.read_bytes(), mtime=0))
    named_gz = tmp_path / "plain-text.csv.gz"
    named_gz.write_bytes(plain.read_bytes())
    want = DuckDBEngine(plain).aggregate(PLAN)
    for path in (packed, named_gz):
        engine = DuckDBEngine(path)
        assert engine.column_names() == ["a", "b", "c"]
        assert engine.aggregate(PLAN) == want


@pytest.mark.parametrize("encoding", ["utf-8", "latin-1"])
def test_without_a_header_a_first_line_like_gzip_changes_nothing(
    tmp_path: Path, encoding: str
) -> None:
    """Without a header the first line is a record (DESIGN §8.1): one unit's line that starts
    with the gzip magic bytes must not turn the whole file into a gzip stream (an error for D',
    results for D). Compression is found by content only where the first line is the public
    header; a header-less file is gunzipped by its name (docs/data.md, "CSV input")."""
    options = CsvOptions(header=False, column_names=("a", "b", "c"), encoding=encoding)
    d, d2 = tmp_path / "d.csv", tmp_path / "d2.csv"
    d.write_bytes(D)
    d2.write_bytes(b"\x1f\x8b,2,3\n" + D)
    want = DuckDBEngine(d, csv=options).aggregate(PLAN)
    got = DuckDBEngine(d2, csv=options).aggregate(PLAN)
    assert got.rows == want.rows  # the added line is no key of `a`: the same aggregates
    assert got.sums == want.sums
