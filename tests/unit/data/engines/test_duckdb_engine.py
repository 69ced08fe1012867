"""The DuckDB engine against the pure-Python oracle (tests/data_oracle.py), bit for bit.

Awkward cells of every kind (types, keys, nulls, bins, units, k/L0/L∞), from a CSV file, pandas
(object and typed columns), Arrow and Parquet; the keyed-hash ranks computed in SQL equal
:func:`row_rank` and :func:`group_rank`; the casts equal the oracle's on awkward strings and on
random decimal text.
"""

from __future__ import annotations

import csv
import datetime as dt
import math
import random
from fractions import Fraction
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlglot
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlglot import exp
from tests.data_oracle import OracleEngine, cast
from tests.unit.data.engines import _rank_cases as rank_cases

from snapdp.data.engines.base import (
    GROUP_TAG,
    ROW_TAG,
    AggregatePlan,
    Aggregates,
    ValueColumn,
    group_rank,
    row_rank,
)
from snapdp.data.engines.duckdb.engine import DuckDBEngine
from snapdp.data.engines.relational import exprs
from snapdp.data.engines.relational.dialects import duckdb_sql
from snapdp.data.engines.relational.plan import q_type, ranked
from snapdp.data.model.schema import Column, ContributionBounds, NullRule


def _cast_text(text: str, kind: str) -> str:
    return duckdb_sql(exprs.cast_text(sqlglot.parse_one(text, read="duckdb"), kind))


KEY = "5f0e1d2c3b4a69788796a5b4c3d2e1f0"
DUCKDB_EXTREME = (1 << 64) - 100  # quanta bounds reach 2^64: HUGEINT quanta, three-lane digits

POOLS: dict[str, list[str]] = {
    "g": ["0", "1", "2", "2.5", "1e0", "3.0", "+1", " 1 ", "", "unknown", "1.0E0", "-0",
          "99999999999999999999", "0x1", "1_0", "２"],
    "t": ["a", "b", "00", "0", " a", "", "A", "b "],
    "v": ["1.5", "-7", "1e400", "nan", "inf", "-inf", "", "abc", "2.25", "2.35", "1e-3", "10.05",
          "99999999999", ".5", "5.", "0.125", "-0.005", "4.445", "NaN", "1,5", "  3  "],
    "n": ["3", "3.0", "3.5", "-2", "", "200", "1e2", "007", "+4"],
    "u": ["u1", "u2", "u3", "u4", "u5", "u6", "", "7", "007", " u1"],
    "b": ["true", "F", "yes", "0", "", "maybe", "TRUE", " t "],
    "d": ["2024-01-31", "2024-02-30", "0000-01-01", "2024-1-1", "", "2024-02-29", "2023-12-31"],
    "x": ["-1", "0", "0.1", "0.3", "0.30000000000000004", "1", "2.5", "10", "", "x", "9.999"],
}  # fmt: skip

G = Column("g", "integer", keys=(0, 1, 2))
G_IMPUTE = Column("g", "integer", keys=(0, 1, 2), nulls=NullRule("impute", 2))
T = Column("t", "text", keys=("a", "b", "00"))
B = Column("b", "boolean", keys=(True, False))
D = Column("d", "date", keys=(dt.date(2024, 1, 31), dt.date(2024, 2, 29)))
X_BINS = Column("x", "decimal", bins=(Fraction(0), Fraction(1, 10), Fraction(3, 10), Fraction(10)))
N_BINS = Column("n", "integer", bins=(Fraction(-2), Fraction(5, 2), Fraction(100)))
V = ValueColumn(Column("v", "decimal", lower=Fraction(-5), upper=Fraction(10)), 2, -500, 1000)
V_SQ = ValueColumn(V.column, 2, -500, 1000, None, squares=True)
V_IMP = ValueColumn(V.column, 1, -50, 100, impute_q=7, squares=True)
N = ValueColumn(Column("n", "integer", lower=Fraction(0), upper=Fraction(100)), 0, 0, 100)
U_TEXT = Column("u", "text")
U_INT = Column("n", "integer")


def _rows(n: int, seed: int) -> list[dict[str, str]]:
    rng = random.Random(seed)
    return [{c: rng.choice(pool) for c, pool in POOLS.items()} for _ in range(n)]


def _write_csv(path: Path, rows: list[dict[str, str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(list(POOLS))
        for r in rows:
            w.writerow([r[c] for c in POOLS])
    return path


def _plans() -> list[AggregatePlan]:
    k = KEY
    b = ContributionBounds
    return [
        AggregatePlan(),
        AggregatePlan(groupings=(G,), values=(V_SQ, N)),
        AggregatePlan(groupings=(G_IMPUTE, T), values=(V_IMP,)),
        AggregatePlan(groupings=(B, D), values=(N,)),
        AggregatePlan(groupings=(X_BINS,), values=(V,)),
        AggregatePlan(groupings=(N_BINS, G), values=(V_SQ,)),
        AggregatePlan(groupings=(G,), values=(V,), unit=U_TEXT, bounds=b(1), hash_key=k),
        AggregatePlan(groupings=(T,), values=(V_SQ, N), unit=U_TEXT, bounds=b(2), hash_key=k),
        AggregatePlan(
            groupings=(G, T), values=(V,), unit=U_TEXT, null_units="own", bounds=b(3, 1, 1),
            hash_key=k,
        ),
        AggregatePlan(groupings=(G,), values=(V,), unit=U_TEXT, bounds=b(None, 2, 2), hash_key=k),
        AggregatePlan(groupings=(G,), values=(), unit=U_TEXT, bounds=b(None, 1, None), hash_key=k),
        AggregatePlan(
            groupings=(T,), values=(V_IMP,), unit=U_INT, bounds=b(1, None, 1), hash_key=k
        ),
        AggregatePlan(
            groupings=(X_BINS,), values=(V_SQ,), unit=U_INT, null_units="own",
            bounds=b(None, None, 2), hash_key=k,
        ),
    ]  # fmt: skip


PLANS = _plans()


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, str]]]:
    rows = _rows(400, seed=11)
    return _write_csv(tmp_path_factory.mktemp("t") / "awkward.csv", rows), rows


@pytest.mark.parametrize("i", range(len(PLANS)))
def test_csv_matches_the_oracle(table: tuple[Path, list[dict[str, str]]], i: int) -> None:
    path, _ = table
    expected = OracleEngine(path).aggregate(PLANS[i])
    assert DuckDBEngine(path).aggregate(PLANS[i]) == expected
    assert sum(expected.rows) > 0 or i == 10 or not PLANS[i].groupings


@pytest.mark.parametrize("i", range(len(PLANS)))
def test_frames_of_text_match_the_oracle(table: tuple[Path, list[dict[str, str]]], i: int) -> None:
    _, rows = table
    frame = pd.DataFrame([{c: (v if v != "" else None) for c, v in r.items()} for r in rows])
    expected = OracleEngine(frame).aggregate(PLANS[i])
    assert DuckDBEngine(frame).aggregate(PLANS[i]) == expected
    arrow = pa.Table.from_pandas(frame, preserve_index=False)
    assert DuckDBEngine(arrow).aggregate(PLANS[i]) == expected


def _native_rows(n: int, seed: int) -> list[dict[str, object]]:
    rng = random.Random(seed)
    nan = float("nan")
    pools: dict[str, list[object]] = {
        "g": [0, 1, 2, 3, 1.0, 2.5, nan, None, "1", "2.5", True, 1e300],
        "t": ["a", "b", "00", 0, 1.0, None, "", True],
        "v": [1.5, -7, 1e300, nan, float("inf"), -float("inf"), None, "abc", 2.25, "3", 4, 2**60],
        "n": [3, 3.0, 3.5, -2, None, 200, "7", 2**62, False],
        "u": ["u1", "u2", "u3", 7, 7.0, None, "", "u4"],
        "b": [True, False, None, "yes", 1, 0.0],
        "d": [dt.date(2024, 1, 31), dt.date(2024, 2, 29), "2024-01-31", None,
              dt.datetime(2024, 1, 31, 0, 0), 5],
        "x": [0.0, 0.1, 0.3, 0.30000000000000004, 1, 2.5, None, "0.2", 10, nan],
    }  # fmt: skip
    return [{c: rng.choice(p) for c, p in pools.items()} for _ in range(n)]


@pytest.mark.parametrize("i", range(len(PLANS)))
def test_object_frames_match_the_oracle(i: int) -> None:
    """pandas object columns holding mixed Python values: each cell by the contract's native
    rules, never by a type DuckDB would infer from a sample."""
    frame = pd.DataFrame(_native_rows(300, seed=5), dtype=object)
    expected = OracleEngine(frame).aggregate(PLANS[i])
    assert DuckDBEngine(frame).aggregate(PLANS[i]) == expected


def test_typed_frames_arrow_and_parquet_match_the_oracle(tmp_path: Path) -> None:
    rng = random.Random(3)
    n = 300
    frame = pd.DataFrame(
        {
            "g": pd.array([rng.choice([0, 1, 2, 5, None]) for _ in range(n)], dtype="Int64"),
            "t": [rng.choice(["a", "b", "00", None]) for _ in range(n)],
            "v": [rng.choice([1.5, -7.0, 1e300, math.nan, math.inf, 2.25]) for _ in range(n)],
            "n": [rng.choice([0.0, 3.0, 3.5, float("nan"), 200.0]) for _ in range(n)],
            "u": [rng.randrange(40) for _ in range(n)],
            "b": [rng.choice([True, False]) for _ in range(n)],
            "d": [rng.choice([dt.date(2024, 1, 31), dt.date(2024, 2, 29)]) for _ in range(n)],
            "x": [rng.choice([0.0, 0.1, 0.3, 9.0, 11.0]) for _ in range(n)],
        }
    )  # fmt: skip
    arrow = pa.Table.from_pandas(frame, preserve_index=False)
    pq.write_table(arrow, tmp_path / "t.parquet")
    plans = [p for p in PLANS if p.unit is None or p.unit.name == "u"]
    plans += [
        AggregatePlan(
            groupings=(G, T), values=(V_SQ, N), unit=Column("u", "integer"),
            bounds=ContributionBounds(2, 2, 1), hash_key=KEY,
        ),
    ]  # fmt: skip
    for plan in plans:
        expected = OracleEngine(arrow).aggregate(plan)
        assert DuckDBEngine(frame).aggregate(plan) == expected
        assert DuckDBEngine(arrow).aggregate(plan) == expected
        assert DuckDBEngine(tmp_path / "t.parquet").aggregate(plan) == expected


def test_partitioned_parquet_folder(tmp_path: Path) -> None:
    """A folder of Parquet files with hive partitioning (issue 16): the partition column is a
    column like any other."""
    rows = [{"g": i % 3, "v": float(i), "u": f"p{i % 7}"} for i in range(60)]
    table = pa.Table.from_pylist(rows)
    pq.write_to_dataset(table, tmp_path / "ds [1]", partition_cols=["g"])
    plan = AggregatePlan(
        groupings=(G,), values=(V_SQ,), unit=U_TEXT, bounds=ContributionBounds(2), hash_key=KEY
    )
    engine = DuckDBEngine(tmp_path / "ds [1]")
    assert set(engine.column_names()) == {"g", "v", "u"}
    assert engine.aggregate(plan) == OracleEngine(rows).aggregate(plan)


@pytest.mark.parametrize("index", range(len(rank_cases.plans(DUCKDB_EXTREME))))
def test_rank_in_sql_equals_row_rank_and_group_rank(index: int) -> None:
    """The ranks computed in SQL equal the contract's ``row_rank`` and ``group_rank`` bit for bit,
    on random rows with integer units at the ends of int64, awkward text units, null quanta,
    value digits of one, two and three lanes and 2^34 cells."""
    plan = rank_cases.plans(DUCKDB_EXTREME)[index]
    rows = rank_cases.rows(plan, 400, index)
    assert plan.unit is not None
    u_type = "BIGINT" if plan.unit.type == "integer" else "VARCHAR"
    q_types = [q_type(vc) for vc in plan.values]
    con = duckdb.connect()
    columns = [f"_snapdp_u {u_type}", "_snapdp_i BIGINT", "_snapdp_cell BIGINT"]
    columns += [f"_snapdp_q{j} {t}" for j, t in enumerate(q_types)]
    con.execute(f"CREATE TABLE t ({', '.join(columns)})")
    con.executemany(
        f"INSERT INTO t VALUES ({', '.join('?' * len(columns))})",
        [[unit, i, cell, *qs] for i, (unit, cell, qs) in enumerate(rows)],
    )
    names = [c.split()[0] for c in columns]

    def rank_sql(tag: int, values: bool) -> str:
        tree = ranked(exp.to_table("t"), names, plan, tag, values, "r")
        return f"SELECT _snapdp_i, r FROM ({duckdb_sql(tree)}) ORDER BY 1"

    got = con.execute(rank_sql(ROW_TAG, True)).fetchall()
    assert [r for _, r in got] == [row_rank(plan, u, c, qs) for u, c, qs in rows]
    got = con.execute(rank_sql(GROUP_TAG, False)).fetchall()
    assert [r for _, r in got] == [group_rank(plan, u, c) for u, c, _ in rows]
    assert all(0 <= r < 1 << 63 for _, r in got)


AWKWARD_TEXT = [
    *sorted({s for pool in POOLS.values() for s in pool}),
    "1e308", "1.7976931348623157e308", "1.7976931348623159e308", "4.9e-324", "2e-324",
    "9007199254740993", "9007199254740993.0", "9223372036854775807", "9223372036854775808",
    "-9223372036854775808", "1.", ".e1", "e1", "1e", "+", "-", "1e+5", "1E-5", "0000",
    "2024-02-29 ", "1999-12-31", "9999-12-31", "t", "f", "no", "YES", "1 2", "١", "\t1",
]  # fmt: skip


@pytest.mark.parametrize("kind", ["integer", "decimal", "text", "boolean", "date"])
def test_text_casts_equal_the_oracle(kind: str) -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT unnest(?) AS s", [AWKWARD_TEXT])
    expr = _cast_text("NULLIF(s, '')", kind)
    got = dict(con.execute(f"SELECT s, {expr} FROM t").fetchall())
    for s in AWKWARD_TEXT:
        assert got[s] == cast(kind, s), s


_CON = duckdb.connect()


@settings(max_examples=200, deadline=None)
@given(
    st.from_regex(
        r"[+-]?([0-9]{1,25}(\.[0-9]{0,25})?|\.[0-9]{1,25})([eE][+-]?[0-9]{1,3})?", fullmatch=True
    )
)
def test_decimal_text_is_correctly_rounded(text: str) -> None:
    con = _CON
    for kind in ("decimal", "integer"):
        got = con.execute(f"SELECT {_cast_text('s', kind)} FROM (SELECT ? AS s)", [text]).fetchone()
        assert got is not None and got[0] == cast(kind, text), (kind, text)


def test_wide_bounds_sum_squares_exactly(tmp_path: Path) -> None:
    """Bounds whose squares pass 2^64 per row: summed in 32-bit limbs, still exact."""
    f = tmp_path / "w.csv"
    values = ["1e17", "-1e17", "3.5e16", "", "123456789012345678", "-4e18", "4e18"]
    f.write_text("v\n" + "\n".join(values) + "\n")
    big = ValueColumn(
        Column("v", "decimal", lower=Fraction(-(10**18)), upper=Fraction(10**18)),
        0, -(10**18), 10**18, None, squares=True,
    )  # fmt: skip
    plan = AggregatePlan(values=(big,))
    got = DuckDBEngine(f).aggregate(plan)
    assert got == OracleEngine(f).aggregate(plan)
    sq = got.squares[0]
    assert sq is not None and sq[0] > 1 << 120


def test_huge_quanta_use_hugeint(tmp_path: Path) -> None:
    f = tmp_path / "h.csv"
    f.write_text("v\n1e19\n-1e19\n5\n1e300\n")
    huge = ValueColumn(
        Column("v", "decimal", lower=Fraction(-(2**63)), upper=Fraction(2**63)),
        0, -(2**63), 2**63, None, squares=True,
    )  # fmt: skip
    plan = AggregatePlan(values=(huge,))
    assert DuckDBEngine(f).aggregate(plan) == OracleEngine(f).aggregate(plan)


def test_csv_options_are_honoured(tmp_path: Path) -> None:
    from snapdp.data.model.schema import CsvOptions

    f = tmp_path / "semi.csv"
    f.write_bytes("g;v\n1;2,5\n0;é\n2;3\n".encode("latin-1"))
    opts = CsvOptions(encoding="latin-1", delimiter=";")
    plan = AggregatePlan(groupings=(G,), values=(V,))
    got = DuckDBEngine(f, csv=opts).aggregate(plan)
    assert got == OracleEngine(f, csv_options=opts).aggregate(plan)
    assert got.rows == [1, 1, 1] and got.sums == [[0, 0, 300]]
    h = tmp_path / "nohead.csv"
    h.write_text("1,2\n2,3\n")
    engine = DuckDBEngine(h, csv=CsvOptions(header=False, column_names=("column0", "column1")))
    assert engine.column_names() == ["column0", "column1"]
    col0 = Column("column0", "integer", keys=(1, 2))
    assert engine.aggregate(AggregatePlan(groupings=(col0,))).rows == [1, 1]


def test_aggregates_are_python_ints(table: tuple[Path, list[dict[str, str]]]) -> None:
    got = DuckDBEngine(table[0]).aggregate(PLANS[1])
    assert isinstance(got, Aggregates)
    for x in [*got.rows, *got.sums[0], *got.counts[0], *(got.squares[0] or [])]:
        assert type(x) is int


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.floats(min_value=-(2.0**62), max_value=2.0**62),
            st.integers(-(2**52), 2**52).map(lambda i: i + 0.5),
            st.integers(-(2**20), 2**20).map(lambda i: i / 4),
        ),
        min_size=1,
        max_size=50,
    )
)
def test_double_to_integer_cast_rounds_half_to_even(values: list[float]) -> None:
    """The quanta's half-to-even rounding: DuckDB's cast of a DOUBLE to BIGINT/HUGEINT equals
    Python's round, ties too (the engine relies on it)."""
    con = _CON
    for sql_type in ("BIGINT", "HUGEINT"):
        got = con.execute(
            f"SELECT CAST(x AS {sql_type}) FROM (SELECT unnest(?::DOUBLE[]) AS x)", [values]
        ).fetchall()
        assert [int(r[0]) for r in got] == [round(v) for v in values]


def test_progress_is_a_whole_percentage_never_bytes(tmp_path: Path) -> None:
    """progress() reports how much of the file is read in whole percent (0 to 100) while
    aggregate runs in another thread — never bytes or rows (docs/data.md; issue 21 item 4):
    a table and its neighbour with one more row both start at 0 and end at 100. None for an
    in-memory frame."""
    import threading

    rows = "".join(f"{i % 3},{i % 7}\n" for i in range(200_000))
    for extra in ("", "1,1\n"):
        f = tmp_path / "p.csv"
        f.write_text("g,v\n" + rows + extra)
        engine = DuckDBEngine(f)
        seen: list[int | None] = [engine.progress()]
        stop = threading.Event()

        def poll(
            engine: DuckDBEngine = engine,
            seen: list[int | None] = seen,
            stop: threading.Event = stop,
        ) -> None:
            while not stop.is_set():
                seen.append(engine.progress())
                stop.wait(0.001)

        thread = threading.Thread(target=poll)
        thread.start()
        try:
            engine.aggregate(AggregatePlan(groupings=(Column("g", "integer", keys=(0, 1, 2)),)))
        finally:
            stop.set()
            thread.join()
        seen.append(engine.progress())
        assert all(type(s) is int and 0 <= s <= 100 for s in seen), seen
        assert seen[0] == 0 and seen[-1] == 100
    assert DuckDBEngine(pd.DataFrame({"g": [1]})).progress() is None
