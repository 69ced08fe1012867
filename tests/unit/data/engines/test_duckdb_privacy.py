"""The DuckDB engine and DESIGN §8.1 (docs/data.md): neighbour tests, sentinel tests, literal
paths, internal names, and one regression test per engine-side item of issue 11.

Neighbour tests: a table D and, for each awkward row r, D' = D + r. With the same hash key the
exact aggregates of D and D' differ by at most the declared bounds in every cell (and in L1 over
the cells), and nothing is raised or printed. The same from a CSV file, pandas and Arrow.
"""

from __future__ import annotations

import csv
import io
import random
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from tests.data_oracle import OracleEngine

from snapdp.data.engines.base import AggregatePlan, Aggregates, ValueColumn
from snapdp.data.engines.duckdb.engine import DuckDBEngine
from snapdp.data.model.schema import Column, ContributionBounds
from snapdp.errors import ParameterError

KEY = "00112233445566778899aabbccddeeff"
K, L0, LINF = 3, 2, 2
G = Column("g", "integer", keys=(0, 1, 2))
V = ValueColumn(
    Column("v", "decimal", lower=Fraction(-2), upper=Fraction(5)), 1, -20, 50, None, True
)
UNIT = Column("u", "text")
BOUNDS = ContributionBounds(K, L0, LINF)
PLANS = {
    "rows": AggregatePlan(groupings=(G,), values=(V,)),
    "units": AggregatePlan(groupings=(G,), values=(V,), unit=UNIT, bounds=BOUNDS, hash_key=KEY),
    "own": AggregatePlan(
        groupings=(G,), values=(V,), unit=UNIT, null_units="own", bounds=BOUNDS, hash_key=KEY
    ),
}
COLUMNS = ["g", "v", "u"]

AWKWARD = {
    "null key": ["", "1.5", "p1"],
    "undeclared key 2.5": ["2.5", "1.5", "p1"],
    "undeclared key 7": ["7", "1.5", "p1"],
    "text in numeric": ["1", "Alice", "p2"],
    "text key": ["unknown", "3", "p2"],
    "empty value": ["1", "", "p3"],
    "NaN": ["0", "nan", "p4"],
    "+inf": ["0", "inf", "p4"],
    "-inf": ["2", "-inf", "p5"],
    "huge value": ["2", "1e308", "p5"],
    "huge negative": ["2", "-1e300", "new"],
    "null unit": ["1", "4.5", ""],
    "duplicate unit": ["1", "4.5", "p0"],
    "new unit": ["0", "5", "fresh"],
    "float key 1e0": ["1e0", "2", "p1"],
}


def _base_rows() -> list[list[str]]:
    rng = random.Random(7)
    rows = []
    for i in range(120):
        rows.append([str(rng.randrange(3)), f"{rng.uniform(-3, 6):.2f}", f"p{i % 9}"])
    return rows


def _csv(path: Path, rows: list[list[str]]) -> Path:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        w.writerows(rows)
    return path


def _frame(rows: list[list[str]]) -> pd.DataFrame:
    return pd.DataFrame([[c if c != "" else None for c in r] for r in rows], columns=COLUMNS)


def _max_shift(plan: AggregatePlan) -> tuple[int, int, int]:
    """(rows, |sum|, squares) a unit can move in one cell, and the L1 of rows over the cells."""
    if plan.unit is None:
        per_cell_rows, cells = 1, 1
    else:
        per_cell_rows, cells = min(K, LINF), min(K, L0)
    if plan.null_units == "own":
        pass  # a null-unit row is its own unit of one row
    mag = max(abs(V.lower_q), abs(V.upper_q))
    sq = (V.upper_q - V.lower_q) ** 2
    return per_cell_rows, per_cell_rows * mag, per_cell_rows * sq * cells


def _diff_within(a: Aggregates, b: Aggregates, plan: AggregatePlan) -> None:
    rows, mag, sq = _max_shift(plan)
    total_rows = min(K, L0 * LINF) if plan.unit is not None else 1
    d_rows = [abs(x - y) for x, y in zip(a.rows, b.rows, strict=True)]
    assert max(d_rows) <= rows and sum(d_rows) <= total_rows
    d_sum = [abs(x - y) for x, y in zip(a.sums[0], b.sums[0], strict=True)]
    assert max(d_sum) <= mag and sum(d_sum) <= total_rows * mag
    d_count = [abs(x - y) for x, y in zip(a.counts[0], b.counts[0], strict=True)]
    assert sum(d_count) <= total_rows
    sa, sb = a.squares[0], b.squares[0]
    assert sa is not None and sb is not None
    assert sum(abs(x - y) for x, y in zip(sa, sb, strict=True)) <= sq


def _run(source: object, plan: AggregatePlan) -> tuple[Aggregates, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        agg = DuckDBEngine(source).aggregate(plan)
    return agg, out.getvalue() + err.getvalue()


def _source(kind: str, rows: list[list[str]], path: Path) -> object:
    """The rows as a CSV file at ``path``, a pandas frame or an Arrow table."""
    if kind == "csv":
        return _csv(path, rows)
    if kind == "pandas":
        return _frame(rows)
    return pa.Table.from_pandas(_frame(rows))


@pytest.fixture(scope="module")
def base_run(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str], tuple[Any, str]]:
    """D's aggregate and what reading it printed, per (plan, source kind). D is the same in every
    neighbour case, so each is computed once per module (was: once per awkward row and position,
    17 times)."""
    folder = tmp_path_factory.mktemp("d")
    done: dict[tuple[str, str], tuple[Aggregates, str]] = {}

    def run(plan_name: str, kind: str) -> tuple[Aggregates, str]:
        if (plan_name, kind) not in done:
            source = _source(kind, _base_rows(), folder / "d.csv")
            done[(plan_name, kind)] = _run(source, PLANS[plan_name])
        return done[(plan_name, kind)]

    return run


@pytest.mark.parametrize("plan_name", list(PLANS))
@pytest.mark.parametrize("awkward", list(AWKWARD))
@pytest.mark.parametrize("kind", ["csv", "pandas", "arrow"])
def test_neighbours_differ_by_at_most_the_bounds(
    tmp_path: Path, plan_name: str, awkward: str, kind: str, base_run: Any
) -> None:
    plan = PLANS[plan_name]
    d = _base_rows()
    a, out_a = base_run(plan_name, kind)
    for position in (len(d) // 2,) if kind != "csv" else (0, len(d)):
        d2 = [*d[:position], AWKWARD[awkward], *d[position:]]
        b, out_b = _run(_source(kind, d2, tmp_path / "d2.csv"), plan)
        if kind == "csv":
            assert b == OracleEngine(tmp_path / "d2.csv").aggregate(plan)
        assert out_a == out_b == ""
        _diff_within(a, b, plan)


SENTINEL = "ZQXSENTINEL9731"


@pytest.mark.parametrize(
    "where",
    ["value", "key", "unit", "malformed line", "quoted malformed", "bad utf-8 line"],
)
def test_sentinel_never_appears(tmp_path: Path, where: str) -> None:
    """A unique string planted in a cell or a malformed line appears in nothing the engine
    returns, raises or prints."""
    rows = _base_rows()
    f = tmp_path / "s.csv"
    text = "g,v,u\n" + "".join(",".join(r) + "\n" for r in rows)
    if where == "value":
        text += f"1,{SENTINEL},p1\n"
    elif where == "key":
        text += f"{SENTINEL},1,p1\n"
    elif where == "unit":
        text += f"1,1,{SENTINEL}\n"
    elif where == "malformed line":
        text += f"1,{SENTINEL},p1,extra,fields\n"
    elif where == "quoted malformed":
        text += f'1,"{SENTINEL}""unterminated\n2,3,p1\n'
    data = text.encode()
    if where == "bad utf-8 line":
        data += b"1,\xff\xfe" + SENTINEL.encode() + b",p1\n"
    f.write_bytes(data)
    for plan in PLANS.values():
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            agg = DuckDBEngine(f).aggregate(plan)
        assert SENTINEL not in repr(agg) + out.getvalue() + err.getvalue()


def test_sentinel_in_a_header_less_unreadable_file_is_not_quoted(tmp_path: Path) -> None:
    for name, data in {
        "binary.csv": b"\x00\x01" + SENTINEL.encode() + b"\x00\n",
        "latin.csv": ("g,v\u00e9" + SENTINEL + "\n1,2\n").encode("latin-1"),
    }.items():
        f = tmp_path / name
        f.write_bytes(data)
        with pytest.raises(ParameterError) as exc:
            DuckDBEngine(f).aggregate(PLANS["rows"])
        assert SENTINEL not in str(exc.value) and name in str(exc.value)
        assert "\n" not in str(exc.value)


@pytest.mark.parametrize(
    ("content", "kind"),
    [(b"", "empty"), (b"\x00\x00PK\x03\x04", "not a text"), (b"g,v\xff\n", "not valid")],
)
def test_unreadable_files_are_one_line_errors(tmp_path: Path, content: bytes, kind: str) -> None:
    f = tmp_path / "bad.csv"
    f.write_bytes(content)
    with pytest.raises(ParameterError, match=kind) as exc:
        DuckDBEngine(f)
    assert str(f.resolve()) in str(exc.value) and "\n" not in str(exc.value)


def test_missing_file_folder_and_wrong_source(tmp_path: Path) -> None:
    with pytest.raises(ParameterError, match="not found"):
        DuckDBEngine(tmp_path / "nope.csv")
    (tmp_path / "empty_dir").mkdir()
    with pytest.raises(ParameterError, match=r"no \.parquet files"):
        DuckDBEngine(tmp_path / "empty_dir")
    with pytest.raises(ParameterError, match="pandas DataFrame"):
        DuckDBEngine(42)
    bad_parquet = tmp_path / "bad.parquet"
    bad_parquet.write_bytes(b"PAR1" + b"\x00" * 20 + SENTINEL.encode())
    with pytest.raises(ParameterError, match="cannot be read") as exc:
        DuckDBEngine(bad_parquet)
    assert SENTINEL not in str(exc.value)


def test_header_only_file_is_an_empty_table(tmp_path: Path) -> None:
    f = tmp_path / "h.csv"
    f.write_text("g,v,u\n")
    assert DuckDBEngine(f).aggregate(PLANS["units"]).rows == [0, 0, 0]


def test_paths_are_literal_unless_glob(tmp_path: Path) -> None:
    """Issue 11 item 8: 'a[12].csv' is that file, not a pattern matching a1.csv."""
    _csv(tmp_path / "a1.csv", [["0", "1", "p"]] * 5)
    _csv(tmp_path / "a[12].csv", [["1", "1", "p"]] * 2)
    _csv(tmp_path / "a*.csv", [["2", "1", "p"]] * 3)
    plan = PLANS["rows"]
    assert DuckDBEngine(tmp_path / "a[12].csv").aggregate(plan).rows == [0, 2, 0]
    assert DuckDBEngine(tmp_path / "a*.csv").aggregate(plan).rows == [0, 0, 3]
    assert DuckDBEngine(str(tmp_path / "a1.csv")).aggregate(plan).rows == [5, 0, 0]
    globbed = DuckDBEngine(str(tmp_path / "a1*.csv"), glob=True).aggregate(plan)
    assert globbed.rows == [5, 0, 0]
    q = tmp_path / "it's [x].csv"
    _csv(q, [["0", "1", "p"]])
    assert DuckDBEngine(q).aggregate(plan).rows == [1, 0, 0]
    assert DuckDBEngine(q).describe() == str(q.resolve())


@pytest.mark.parametrize(
    "names",
    [
        ["k", "i", "__r", "__rn", "__k"],
        ["_snapdp_c0", "_snapdp_u", "_snapdp_cell"],
        ["_snapdp_q0", "_snapdp_r", "_snapdp_t"],
        ['we"ird', "sp ace", "SELECT"],
    ],
)
def test_user_columns_named_like_internal_names(tmp_path: Path, names: list[str]) -> None:
    """Issue 11 item 8: no user column name can collide with an internal alias."""
    g_name, v_name, u_name = names[0], names[1], names[2]
    rows = [[str(i % 3), str(i % 5), f"p{i % 4}"] for i in range(40)]
    f = tmp_path / "c.csv"
    with f.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([g_name, v_name, u_name, *names[3:]])
        w.writerows([[*r, *(["9"] * len(names[3:]))] for r in rows])
    g = Column(g_name, "integer", keys=(0, 1, 2))
    v = ValueColumn(Column(v_name, "integer", lower=Fraction(0), upper=Fraction(9)), 0, 0, 9)
    plan = AggregatePlan(
        groupings=(g,), values=(v,), unit=Column(u_name, "text"),
        bounds=ContributionBounds(3, 2, 2), hash_key=KEY,
    )  # fmt: skip
    assert DuckDBEngine(f).aggregate(plan) == OracleEngine(f).aggregate(plan)


def test_issue11_item1_keys_are_typed_not_inferred(tmp_path: Path) -> None:
    """One row with key 2.5 (or 1e3, empty, 'unknown') must not turn every group into 0 (the old
    engine read the column as DOUBLE and matched "1" against "1.0")."""
    base = [[str(i % 3), "1", f"p{i}"] for i in range(300)]
    for extra in ("2.5", "1e3", "", "unknown"):
        f = _csv(tmp_path / "k.csv", [*base, [extra, "1", "x"]])
        assert DuckDBEngine(f).aggregate(PLANS["rows"]).rows == [100, 100, 100]
    frame = pd.DataFrame({"g": [0.0, 1.0, 2.0, None] * 10, "v": 1.0, "u": "p"})
    assert DuckDBEngine(frame).aggregate(PLANS["rows"]).rows == [10, 10, 10]


def test_issue11_items_3_4_nothing_data_dependent_is_raised(tmp_path: Path) -> None:
    """Nulls, text in a numeric column and malformed lines: no error, no message (the old engine
    refused with counts and quoted cells, and passed CSV errors through with raw rows)."""
    f = tmp_path / "n.csv"
    f.write_text('g,v,u\n1,Alice,p\n1,,p\n1,nan,p\n1,2,p\n"1,2\n1,2,3,4\n')
    agg = DuckDBEngine(f).aggregate(PLANS["rows"])
    assert agg.rows[1] >= 4 and agg.counts[0][1] == 1 and agg.sums[0][1] == 20


def test_issue11_item6_null_units_are_dropped_or_their_own(tmp_path: Path) -> None:
    """Rows with a null unit are not one unit together: dropped, or each its own unit."""
    rows = [["1", "5", ""]] * 6 + [["0", "1", "p"]]
    f = _csv(tmp_path / "u.csv", rows)
    assert DuckDBEngine(f).aggregate(PLANS["units"]).rows == [1, 0, 0]
    assert DuckDBEngine(f).aggregate(PLANS["own"]).rows == [1, 6, 0]


def test_issue16_item1_k1_bounding_is_an_aggregate_not_a_sort(tmp_path: Path) -> None:
    """k = 1 (and L0 = 1, L∞ = 1) are arg_min aggregates: the SQL holds no window function, no
    ORDER BY and no random()."""
    f = _csv(tmp_path / "k.csv", _base_rows())
    plan = AggregatePlan(
        groupings=(G,), values=(V,), unit=UNIT, bounds=ContributionBounds(2, 1, 1), hash_key=KEY
    )
    sql, _ = DuckDBEngine(f).sql(plan)
    upper = sql.upper()
    assert "OVER" not in upper and "ORDER BY" not in upper and "RANDOM" not in upper
    assert "ARG_MIN" in upper and "UNNEST" in upper  # arg_min(…, n) is min_by(…, n)


def test_memory_limit_and_temp_directory(tmp_path: Path) -> None:
    f = _csv(tmp_path / "m.csv", _base_rows())
    engine = DuckDBEngine(
        f, memory_limit="300MB", temp_directory=str(tmp_path / "spill"), threads=1
    )
    assert engine.aggregate(PLANS["units"]) == OracleEngine(f).aggregate(PLANS["units"])
    with pytest.raises(ParameterError, match="memory_limit"):
        DuckDBEngine(f, memory_limit="lots")
    with pytest.raises(ParameterError, match="threads"):
        DuckDBEngine(f, threads=0)


@pytest.mark.parametrize(
    "extra",
    [b"2,1,q\r\n", b"\r\n", b"2,1,q\n", b"2,1,q\r2,1,q\n", b"2,1,q\r\r\n"],
    ids=["crlf", "blank", "lf", "lone cr inside", "cr cr lf"],
)
@pytest.mark.parametrize("base_end", [b"\n", b"\r\n"], ids=["lf-file", "crlf-file"])
def test_one_line_with_another_line_ending_changes_one_row_at_most(
    tmp_path: Path, extra: bytes, base_end: bytes
) -> None:
    """A line ending unlike the file's others must not fail the read (DuckDB guessed the ending
    from the data and raised on the odd line: an error one row could trigger), and a lone CR is
    data, never a line end (docs/data.md, "CSV input")."""
    lines = [b"g,v,u", *(f"{i % 3},1,p{i}".encode() for i in range(30))]
    base = tmp_path / "base.csv"
    base.write_bytes(base_end.join(lines) + base_end)
    plus = tmp_path / "plus.csv"
    plus.write_bytes(
        base_end.join(lines[:10]) + base_end + extra + base_end.join(lines[10:]) + base_end
    )
    a = DuckDBEngine(base).aggregate(PLANS["rows"]).rows
    b = DuckDBEngine(plus).aggregate(PLANS["rows"]).rows
    assert a == [10, 10, 10]
    assert sum(abs(x - y) for x, y in zip(a, b, strict=True)) <= 1


def _plus(a: Aggregates, b: Aggregates) -> Aggregates:
    def add(x: list[int] | None, y: list[int] | None) -> list[int] | None:
        return None if x is None or y is None else [p + q for p, q in zip(x, y, strict=True)]

    return Aggregates(
        [p + q for p, q in zip(a.rows, b.rows, strict=True)],
        [add(x, y) or [] for x, y in zip(a.sums, b.sums, strict=True)],
        [add(x, y) or [] for x, y in zip(a.counts, b.counts, strict=True)],
        [add(x, y) for x, y in zip(a.squares, b.squares, strict=True)],
    )


@pytest.mark.parametrize("unit_type", ["text", "integer"])
@pytest.mark.parametrize(
    "bounds", [ContributionBounds(1), ContributionBounds(2, 1, 1), ContributionBounds(K, L0, LINF)]
)
def test_each_unit_keeps_rows_chosen_from_its_own_rows_only(
    unit_type: str, bounds: ContributionBounds
) -> None:
    """Issue 25: the bounded aggregates of D are those of D without unit w plus those of w's rows
    alone, for every unit w: which rows a unit keeps depends on its own rows and the key only,
    never on the other units (the premise of the sensitivity bound; docs/data.md)."""
    rng = random.Random(25)
    rows = [[str(rng.randrange(3)), f"{rng.uniform(-3, 6):.1f}", str(rng.randrange(7))]
            for _ in range(90)]  # fmt: skip
    unit = Column("u", unit_type)
    plan = AggregatePlan((G,), (V,), unit, bounds=bounds, hash_key=KEY)
    whole, _ = _run(_frame(rows), plan)
    assert whole == OracleEngine(_frame(rows)).aggregate(plan)
    for w in sorted({r[2] for r in rows}):
        mine, _ = _run(_frame([r for r in rows if r[2] == w]), plan)
        others, _ = _run(_frame([r for r in rows if r[2] != w]), plan)
        assert _plus(mine, others) == whole, w
