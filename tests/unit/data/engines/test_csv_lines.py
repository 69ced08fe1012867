"""CSV input, one record per line (docs/data.md, "CSV input"): the DuckDB engine against the
reference engine's own line parser, on a table of tricky files, on random lines (hypothesis) and
as neighbours (D and D + one awkward line in the middle differ only by that line's own record).

The Spark engine's side of the same tables is in test_spark_csv.py.
"""

from __future__ import annotations

import gzip
import io
import random
from contextlib import redirect_stderr, redirect_stdout
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from tests.csv_oracle import csv_lines, parse_line
from tests.data_oracle import OracleEngine
from tests.unit.data.engines._csv_cases import AWKWARD, FILES, random_lines, records, write

from snapdp.data.engines.base import AggregatePlan, Aggregates, ValueColumn
from snapdp.data.engines.csv.block import block_records, cut_block
from snapdp.data.engines.csv.lines import (
    _Lines,
    split_fields,
    utf8_errors,
)
from snapdp.data.engines.csv.records import CsvLines
from snapdp.data.engines.duckdb.engine import DuckDBEngine
from snapdp.data.model.schema import Column, ContributionBounds, CsvOptions, Schema
from snapdp.data.owner.check import check
from snapdp.errors import ParameterError

KEY = "00112233445566778899aabbccddeeff"
G = Column("g", "integer", keys=(0, 1, 2))
V = ValueColumn(
    Column("v", "decimal", lower=Fraction(-2), upper=Fraction(5)), 1, -20, 50, None, True
)
UNIT = Column("u", "text")
K, L0, LINF = 3, 2, 2
PLANS = {
    "rows": AggregatePlan(groupings=(G,), values=(V,)),
    "units": AggregatePlan(
        groupings=(G,), values=(V,), unit=UNIT, bounds=ContributionBounds(K, L0, LINF),
        hash_key=KEY,
    ),
    "own": AggregatePlan(
        groupings=(G,), values=(V,), unit=UNIT, null_units="own",
        bounds=ContributionBounds(K, L0, LINF), hash_key=KEY,
    ),
}  # fmt: skip


def duck_records(path: Path, opts: CsvOptions) -> tuple[list[str], list[tuple[Any, ...]]]:
    engine = DuckDBEngine(path, csv=opts)
    return engine.column_names(), records(engine.fetch(f"SELECT * FROM {engine._relation}"))


def oracle_records(path: Path, opts: CsvOptions) -> tuple[list[str], list[tuple[Any, ...]]]:
    engine = OracleEngine(path, csv_options=opts)
    names = engine.column_names()
    return names, records([tuple(r[c] for c in names) for r in engine._rows])


@pytest.mark.parametrize("name", list(FILES))
def test_tricky_files_read_the_same_in_duckdb_and_the_oracle(tmp_path: Path, name: str) -> None:
    data, opts = FILES[name]
    path = write(tmp_path, name, data)
    names, expected = oracle_records(path, opts)
    assert duck_records(path, opts) == (names, expected)
    engine = DuckDBEngine(path, csv=opts)  # a plan reading no column counts record flags
    assert engine.aggregate(AggregatePlan()).rows == [len(expected)]
    assert engine.line_counts() is not None and engine.line_counts()[1] == len(expected)


EXPECTED: dict[str, list[tuple[Any, ...]]] = {
    "lone cr is data": [("1\r2", "3"), ("4", "5\r"), ("\r6", "7"), ("8", "9\r\r")],
    "unbalanced quote": [("1", "2"), ("3", "4"), ("5", "6"), ("8", "9")],
    "blank lines": [("1", "2"), ("3", "4")],
    "one column": [(None,), ("1",), ("2",), ("3",)],
    "tab separated": [(None, "3"), ("1", "2"), ("4", None)],
    "doubled quotes": [('"', "3"), ('""', "4"), ('a"', "5"), ('he said "hi"', "2")],
    "empty fields": [(None, None, None), (None, None, None), (None, None, None), ("1", None, "3")],
    "bom on later lines": [("1", "2"), ("3", "\ufeff4")],
    "text after closing quote": [("5", "6")],
    "quote in unquoted field": [("3", "4")],
    "no header, blank first": [("1", "2"), ("3", "4")],
    "header only": [],
}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_records_by_hand(tmp_path: Path, name: str) -> None:
    """The rule on a few files, by hand: a malformed line loses only itself."""
    data, opts = FILES[name]
    path = write(tmp_path, name, data)
    assert duck_records(path, opts)[1] == records(EXPECTED[name])


def test_the_header_is_the_first_non_blank_line_and_bom_free(tmp_path: Path) -> None:
    for name in ("bom", "blank lines", "crlf"):
        path = write(tmp_path, name, FILES[name][0])
        assert DuckDBEngine(path).column_names() == ["a", "b"]
    path = write(tmp_path, "q", b'"a,1","b""",c\n1,2,3\n')
    assert DuckDBEngine(path).column_names() == ["a,1", 'b"', "c"]


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"", "empty"),
        (b"\n \r\n\t\n", "no CSV header"),
        (b'a,"b\n1,2\n', "no CSV header"),
        (b'""\n1\n', "no CSV header"),
        (b"\xef\xbb\xbf\n1\n", "no CSV header"),
        (b"a,b\xff\n1,2\n", "not valid utf-8"),
        (b"a,a\n1,2\n", "repeats"),
        (b"a\x00,b\n1,2\n", "NUL"),
    ],
)
def test_a_header_that_does_not_parse_is_one_clean_error(
    tmp_path: Path, data: bytes, match: str
) -> None:
    path = tmp_path / "h.csv"
    path.write_bytes(data)
    with pytest.raises(ParameterError, match=match) as exc:
        DuckDBEngine(path)
    assert str(path.resolve()) in str(exc.value) and "\n" not in str(exc.value)


def test_unsupported_encodings_and_delimiters_are_declaration_errors(tmp_path: Path) -> None:
    path = write(tmp_path, "crlf", FILES["crlf"][0])
    for encoding in ("utf-16", "cp1252", "no-such-codec"):
        with pytest.raises(ParameterError, match="not supported") as exc:
            DuckDBEngine(path, csv=CsvOptions(encoding=encoding))
        assert exc.value.parameter == "encoding"
    for delimiter in ('"', "\n", "\r", "\x00"):
        with pytest.raises(ParameterError, match="delimiter"):
            CsvOptions(delimiter=delimiter)
    with pytest.raises(ParameterError, match="latin-1"):
        DuckDBEngine(path, csv=CsvOptions(encoding="latin-1", delimiter="€"))


def _stream(path: Path, opts: CsvOptions, fields: int, block: int) -> list[tuple[str, ...] | None]:
    """What the DuckDB engine's line stream yields: per non-blank line, its fields (None: no
    record)."""
    encoding = "latin-1" if opts.encoding == "latin-1" else "utf-8"
    source = CsvLines(
        [path], encoding, opts.header, opts.delimiter, fields, block=block,
        max_line=opts.max_line_bytes,
    )  # fmt: skip
    schema = pa.schema([("_snapdp_fields", pa.large_list(pa.large_string()))])
    return _unquoted([x for b in source._batches(schema) for x in b.column(0).to_pylist()])


def _oracle_stream(data: bytes, opts: CsvOptions, fields: int) -> list[tuple[str, ...] | None]:
    out: list[tuple[str, ...] | None] = []
    for line in csv_lines(data, opts.encoding == "utf-8", opts.max_line_bytes):
        try:
            parsed = (
                None if line is None else parse_line(line.decode(opts.encoding), opts.delimiter)
            )
        except UnicodeDecodeError:
            parsed = None
        out.append(tuple(parsed) if parsed is not None and len(parsed) == fields else None)
    return out[1:] if opts.header else out


@pytest.mark.parametrize("block", [1, 2, 3, 7, 64, 1 << 20])
def test_block_size_does_not_change_the_lines(tmp_path: Path, block: int) -> None:
    """The stream is read in blocks of whole lines: any block size gives the same records."""
    rng = random.Random(block)
    data = b"h\n" + b"\n".join(random_lines(rng, 400)) + rng.choice([b"", b"\n", b"\r"])
    path = tmp_path / "b.csv"
    path.write_bytes(data)
    for opts in (
        CsvOptions(),
        CsvOptions(encoding="latin-1"),
        CsvOptions(header=False, column_names=("x",)),
        CsvOptions(max_line_bytes=3),  # many lines too long, at every block size
        CsvOptions(max_line_bytes=9),
    ):
        for fields in (1, 3):
            expected = _oracle_stream(data, opts, fields)
            assert _stream(path, opts, fields, block) == expected
            encoding = "latin-1" if opts.encoding == "latin-1" else "utf-8"
            flags = CsvLines(
                [path], encoding, opts.header, opts.delimiter, fields, lists=False, block=block,
                max_line=opts.max_line_bytes,
            )  # fmt: skip
            schema = pa.schema([("_snapdp_record", pa.bool_())])
            got = [x for b in flags._batches(schema) for x in b.column(0).to_pylist()]
            assert got == [f is not None for f in expected]


_PLAIN = st.sampled_from(
    ["a", "1", ",", ";", "\t", " ", "é", "\x00", "\x7f", "\xff", '"', '"a"', '""', '","']
)


def _unquoted(lists: list[list[str] | None]) -> list[tuple[str, ...] | None]:
    return [
        None
        if x is None
        else tuple(f[1:-1].replace('""', '"') if f.startswith('"') else f for f in x)
        for x in lists
    ]


def _reference(buf: bytes, utf8: bool, d: bytes, fields: int, header: bool) -> list[Any]:
    """The lines of a block by the line rule of ``csv/lines.py`` (which ``snapdp check`` uses
    and which is tested against the reference parser): per emitted line its fields (quotes
    kept) or None."""
    lines = _Lines(buf, utf8)
    if header:
        lines.drop_first()
    data, offsets, ok, _, _ = split_fields(*lines.compact(), d, fields)
    out: list[Any] = []
    text = data.tobytes()
    for i in range(len(offsets) - 1):
        line = text[int(offsets[i]) : int(offsets[i + 1])]
        out.append(line.decode("utf-8").split("\n") if ok[i] else None)
    return out


def _cut(buf: bytes, utf8: bool, d: bytes, fields: int, header: bool) -> list[Any]:
    got = block_records(cut_block(buf, utf8, d, fields, header)).to_pylist()
    flags = cut_block(buf, utf8, d, fields, header, lists=False).ok
    assert list(flags) == [x is not None for x in got]
    return got


_ODD = [b'"', b'""', b",", b";", b"\r", b"\r\n", b"\n", b" ", b"\t", b"a", b"1", b"\xc3\xa9",
        b"\x00", b"\xef\xbb\xbf", b"\xff", b"\xe2\x82", b'";"', b"\xc2\xa7", b"\xe2\x82\xac",
        b'","', b'"a"']  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(
    pieces=st.lists(st.sampled_from(_ODD + _ODD[9:11] * 4 + [b"\n"] * 6), max_size=60),
    fields=st.integers(1, 4),
    delimiter=st.sampled_from([",", ";", "\t", "§", "€"]),
    utf8=st.booleans(),
    header=st.booleans(),
)
@example(
    pieces=[b";", b";", b'"a"', b'""', b'"a"'], fields=3, delimiter=";", utf8=False, header=False
)
def test_one_block_cuts_as_the_line_rule(
    pieces: list[bytes], fields: int, delimiter: str, utf8: bool, header: bool
) -> None:
    """The one-pass cut of a block (the only path a release takes) equals the line rule of
    ``csv/lines.py``, for every mix of CRs, BOMs, blank lines, quotes, delimiters, non-ASCII
    and undecodable bytes, with and without a header; fields and record flags."""
    buf = b"".join(pieces)
    if not utf8:
        buf = buf.decode("latin-1").encode("utf-8")  # as the stream hands latin-1 blocks on
    d = delimiter.encode()
    assert _cut(buf, utf8, d, fields, header) == _reference(buf, utf8, d, fields, header)


@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(st.lists(_PLAIN, max_size=5).map("".join), min_size=1, max_size=20),
    ending=st.sampled_from(["\n", "\r\n"]),
    last=st.sampled_from(["", "\n", "\r\n", "\r"]),
    fields=st.integers(1, 3),
    lists=st.booleans(),
)
def test_a_block_parses_as_the_line_rule(
    lines: list[str], ending: str, last: str, fields: int, lists: bool
) -> None:
    """What the stream makes of a block equals the line rule, for fields and record flags."""
    buf = (ending.join(lines) + last).encode()
    stream = CsvLines([], "utf-8", False, ",", fields, lists=lists)
    got, _ = stream._parse(buf, False, fields)
    want = _reference(buf, True, b",", fields, False)
    if lists:
        assert got.to_pylist() == want
    else:
        assert got.to_pylist() == [x is not None for x in want]


_UTF8_PIECES = [
    b"a", b"\xc3\xa9", b"\xe2\x82\xac", b"\xf0\x9f\x98\x80", b"\x80", b"\xbf", b"\xc0\x80",
    b"\xc1", b"\xe0\x80\x80", b"\xe0\xa0\x80", b"\xed\xa0\x80", b"\xed\x9f\xbf",
    b"\xf0\x80\x80\x80", b"\xf0\x90\x80\x80", b"\xf4\x8f\xbf\xbf", b"\xf4\x90\x80\x80",
    b"\xf5", b"\xff", b"\xe2\x82", b"\xf0\x9f", b"\xc3", b"\xe2", b"\xf0", b"\xf4",
]  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.lists(st.sampled_from(_UTF8_PIECES), max_size=6).map(b"".join),
            st.binary(max_size=8).map(lambda b: b.replace(b"\n", b"")),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_utf8_errors_mark_exactly_the_lines_python_cannot_decode(lines: list[bytes]) -> None:
    """The vectorised check (linear however many lines are bad: a latin-1 file read as UTF-8)
    finds an error in exactly the lines that Python's strict decoder rejects on their own."""
    buf = b"\n".join(lines)
    starts = np.cumsum([0] + [len(x) + 1 for x in lines[:-1]])
    errors = utf8_errors(np.frombuffer(buf, np.uint8))
    got = sorted({int(np.searchsorted(starts, e, "right")) - 1 for e in errors})
    expected = []
    for i, line in enumerate(lines):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            expected.append(i)
    assert got == expected


def test_undecodable_lines_take_linear_time() -> None:
    import time

    buf = "café,1,2\n".encode("latin-1") * 400_000  # every line is bad UTF-8
    start = time.perf_counter()
    block = _Lines(buf, True)
    assert not block.valid.any() and time.perf_counter() - start < 5


_ATOMS = [b'"', b'""', b",", b";", b"\r", b" ", b"\t", b"a", b"1", b"\xc3\xa9", b"\x00",
          b"\xef\xbb\xbf", b"\xff", b"\xe2\x82", b'";"', b"\xc2\xa7"]  # fmt: skip
_LINE = st.lists(st.sampled_from(_ATOMS), max_size=8).map(b"".join)


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lines=st.lists(_LINE, max_size=25),
    delimiter=st.sampled_from([",", ";", "\t", "§"]),
    header=st.booleans(),
    ending=st.sampled_from([b"\n", b"\r\n"]),
    last=st.sampled_from([b"", b"\n", b"\r"]),
)
def test_random_lines_read_the_same_in_duckdb_and_the_oracle(
    tmp_path: Path, lines: list[bytes], delimiter: str, header: bool, ending: bytes, last: bytes
) -> None:
    """Random lines of quotes, delimiters, CRs, BOMs, NULs and bad bytes: DuckDB's records (and
    its line counts for ``snapdp check``) equal the reference parser's, and a line that is no
    record changes no other."""
    d = delimiter.encode()
    first = d.join([b"a", b'"b' + d + b'"', b"c"])
    data = first + ending + ending.join(lines) + last
    path = tmp_path / "r.csv"
    path.write_bytes(data)
    opts = CsvOptions(
        delimiter=delimiter, header=header, column_names=None if header else tuple("abc")
    )
    engine = DuckDBEngine(path, csv=opts)
    got = records(engine.fetch(f"SELECT * FROM {engine._relation}"))
    names, expected = oracle_records(path, opts)
    assert engine.column_names() == names and got == expected
    assert engine.aggregate(AggregatePlan()).rows == [len(expected)]
    kept = _oracle_stream(data, opts, len(names))
    assert engine.line_counts() == (len(kept), sum(1 for f in kept if f is not None))


# -- neighbours ----------------------------------------------------------------------------
def _base_lines() -> list[bytes]:
    rng = random.Random(3)
    return [f"{rng.randrange(3)},{rng.uniform(-3, 6):.2f},p{i % 9}".encode() for i in range(120)]


def _file(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"g,v,u\n" + b"\n".join(lines) + b"\n")
    return path


def _run(make: Any, path: Path, plan: AggregatePlan) -> tuple[Aggregates, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        agg = make(path).aggregate(plan)
    return agg, out.getvalue() + err.getvalue()


def _minus(a: Aggregates, b: Aggregates) -> list[list[int]]:
    parts = [(a.rows, b.rows), *zip(a.sums, b.sums, strict=True)]
    parts += list(zip(a.counts, b.counts, strict=True))
    parts += [(x, y) for x, y in zip(a.squares, b.squares, strict=True) if x is not None]
    return [[p - q for p, q in zip(x, y, strict=True)] for x, y in parts]  # type: ignore[arg-type]


def _within_bounds(a: Aggregates, b: Aggregates, plan: AggregatePlan) -> None:
    """D and D' differ by at most one unit's bounded contribution, cell by cell and in L1."""
    rows = 1 if plan.unit is None else min(K, LINF)
    total = 1 if plan.unit is None else min(K, L0 * LINF)
    mag = max(abs(V.lower_q), abs(V.upper_q))
    d_rows = [abs(x - y) for x, y in zip(a.rows, b.rows, strict=True)]
    assert max(d_rows) <= rows and sum(d_rows) <= total
    d_sum = [abs(x - y) for x, y in zip(a.sums[0], b.sums[0], strict=True)]
    assert max(d_sum) <= rows * mag and sum(d_sum) <= total * mag
    assert sum(abs(x - y) for x, y in zip(a.counts[0], b.counts[0], strict=True)) <= total


@pytest.fixture(scope="module")
def d_runs(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """D's aggregate and what reading it printed, per (engine, plan): D is the same for every
    awkward line, so each is computed once per module (was: once per line)."""
    d = _file(tmp_path_factory.mktemp("d") / "d.csv", _base_lines())
    done: dict[tuple[Any, str], tuple[Aggregates, str]] = {}

    def run(make: Any, name: str) -> tuple[Aggregates, str]:
        if (make, name) not in done:
            done[(make, name)] = _run(make, d, PLANS[name])
        return done[(make, name)]

    return run


@pytest.mark.parametrize("awkward", list(AWKWARD))
def test_neighbours_one_awkward_line_changes_only_its_own_record(
    tmp_path: Path, awkward: str, d_runs: Any
) -> None:
    """D and D' = D + one awkward line in the middle: without a unit, D' − D is exactly that
    line's own record (the aggregates of a file holding only it: zero when it is no record),
    in DuckDB and in the reference engine; with units, within the bounds, and the two engines'
    D' the same. Nothing is printed or raised, in either."""
    lines = _base_lines()
    d2 = _file(tmp_path / "d2.csv", [*lines[:60], AWKWARD[awkward], *lines[60:]])
    alone = _file(tmp_path / "alone.csv", [AWKWARD[awkward]])
    units = []
    for make in (DuckDBEngine, OracleEngine):
        for name, plan in PLANS.items():
            a, out_a = d_runs(make, name)
            b, out_b = _run(make, d2, plan)
            assert out_a == out_b == ""
            if name == "rows":
                own = make(alone).aggregate(plan)
                assert _minus(b, a) == _minus(own, Aggregates.zeros(plan)), (make, awkward)
            else:
                _within_bounds(a, b, plan)
            if name == "units":
                units.append(b)
    assert units[0] == units[1]  # DuckDB's D' aggregate with units is the reference's


def test_an_unbalanced_quote_no_longer_swallows_the_rest_of_the_file(tmp_path: Path) -> None:
    """The bug this rule fixes: before it, `7,"oops` opened a quoted field that ran to the end
    of the file and every later line was lost (docs/data.md, "CSV input")."""
    lines = _base_lines()
    d2 = _file(tmp_path / "d2.csv", [*lines[:10], b'7,"oops', *lines[10:]])
    assert sum(DuckDBEngine(d2).aggregate(PLANS["rows"]).rows) == sum(
        DuckDBEngine(_file(tmp_path / "d.csv", lines)).aggregate(PLANS["rows"]).rows
    )


# -- sources -------------------------------------------------------------------------------
def test_gzip_reads_the_same_and_reports_progress_to_the_end(tmp_path: Path) -> None:
    data = b"g,v,u\n" + b"\n".join(_base_lines()) + b'\n7,"oops\n1,2\r3,p\n'
    plain = tmp_path / "t.csv"
    plain.write_bytes(data)
    packed = tmp_path / "t.csv.gz"
    packed.write_bytes(gzip.compress(data))
    engine = DuckDBEngine(packed)
    assert engine.aggregate(PLANS["units"]) == DuckDBEngine(plain).aggregate(PLANS["units"])
    assert engine.progress() == 100


def test_glob_skips_each_files_header(tmp_path: Path) -> None:
    (tmp_path / "p1.csv").write_bytes(b"g,v,u\n0,1,a\n1,2,b\n")
    (tmp_path / "p2.csv").write_bytes(b"\n\xef\xbb\xbfg,v,u\r\n2,3,c\r\ng,v,u\n")
    (tmp_path / "p3.csv").write_bytes(b"")
    engine = DuckDBEngine(str(tmp_path / "p*.csv"), glob=True)
    assert engine.aggregate(PLANS["rows"]).rows == [1, 1, 1]
    assert engine.line_counts() == (4, 4)  # the repeated header in p2 is a record (g: null)


def test_check_reports_the_lines_that_are_no_records(tmp_path: Path) -> None:
    lines = _base_lines()
    f = _file(tmp_path / "c.csv", [*lines[:5], b'7,"oops', b"1,\xff,p", *lines[5:], b"1,2"])
    schema = Schema((Column("g", "integer", keys=(0, 1, 2)),))
    report = check(f, schema)
    assert report.rows == 120 and report.skipped_lines == 3 and not report.fits
    assert report.skipped_examples == [  # the header is line 1
        "line 7 (not split by the CSV rule)",
        "line 8 (not valid UTF-8)",
        "line 124 (2 fields, not 3)",
    ]
    assert "3 line(s) skipped" in report.to_text() and "e.g. line 7 (" in report.to_text()
    assert check(f, schema, examples=1).skipped_examples == ["line 7 (not split by the CSV rule)"]
    (tmp_path / "many").mkdir()
    for name in ("m1.csv", "m2.csv"):
        (tmp_path / "many" / name).write_bytes(b"g,v,u\n\n1,2,p\n1,2\n")
    glob = check(str(tmp_path / "many" / "m*.csv"), schema, glob=True)
    assert glob.skipped_lines == 2 and glob.skipped_examples == [
        f"{tmp_path / 'many' / 'm1.csv'}: line 4 (2 fields, not 3)",
        f"{tmp_path / 'many' / 'm2.csv'}: line 4 (2 fields, not 3)",
    ]
    clean = check(_file(tmp_path / "ok.csv", lines), schema)
    assert clean.skipped_lines == 0 and "skipped" not in clean.to_text()
