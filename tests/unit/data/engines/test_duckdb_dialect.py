"""The DuckDB engine's SQL is the text sqlglot's own DuckDB dialect writes for the same trees
(snapdp.data.engines.relational.dialects, issue 32): ``SnapDuckDB`` is sqlglot's plain generator
with the few entries in which the DuckDB generator differs, so that a release need not import
that dialect (its templates cost ~25 ms of a fresh process). Every tree the engine renders while
it runs plans of every shape over CSV, Parquet and Arrow sources (units, bounds, keys of each
type, bins, values with squares, ``where``, keys from the data, rows too wide to pack kept as
structs, the owner's casts and checks) is rendered through both here, and the texts must be
equal; the type names the trees use are read as the DuckDB dialect reads them."""

from __future__ import annotations

import datetime as dt
import re
from fractions import Fraction
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlglot import exp
from sqlglot.dialects.duckdb import DuckDB
from tests.data_oracle import OracleEngine
from tests.unit.data.engines.test_duckdb_engine import KEY, PLANS, _rows, _write_csv
from tests.unit.data.engines.test_groups_from_data_units_engines import PLANS as DATA_KEY_PLANS
from tests.unit.data.test_check import CSV as CHECK_CSV
from tests.unit.data.test_check import SCHEMA as CHECK_SCHEMA

from snapdp.data.engines.base import AggregatePlan, ValueColumn
from snapdp.data.engines.duckdb.engine import DuckDBEngine
from snapdp.data.engines.observed import observed_keys
from snapdp.data.engines.relational import dialects, topn
from snapdp.data.model.predicate import And, Compare, InList, IsNull, Not, Or
from snapdp.data.model.schema import Column, ContributionBounds, Schema
from snapdp.data.owner.check import check

SRC = Path(__file__).resolve().parents[4] / "src"
_STOCK: Any = DuckDB.Generator


class _Reference(DuckDB):
    """sqlglot's DuckDB dialect with the same custom nodes and type names."""

    class Generator(_STOCK):  # type: ignore[misc]
        TYPE_MAPPING: ClassVar[dict[Any, str]] = {**_STOCK.TYPE_MAPPING, **dialects.DUCKDB_TYPES}
        TRANSFORMS: ClassVar[dict[Any, Any]] = {**_STOCK.TRANSFORMS, **dialects.DUCKDB_NODES}
        kinds: ClassVar[set[type]] = set()  # every node kind written (custom nodes lower late)

        def sql(self, expression: Any, key: str | None = None, comment: bool = True) -> str:
            if isinstance(expression, exp.Expression):
                self.kinds.add(type(expression))
            return str(super().sql(expression, key, comment))


class _BothDialects:
    """Stands in for the engine's dialect: renders each tree through both, keeps the pairs."""

    def __init__(self) -> None:
        self.ours, self.reference = dialects._DUCKDB, _Reference()
        self.pairs: list[tuple[str, str]] = []
        self.kinds = _Reference.Generator.kinds
        self.kinds.clear()

    def generate(self, tree: exp.Expression, copy: bool = True) -> str:
        reference = str(self.reference.generate(tree.copy()))
        ours = str(self.ours.generate(tree, copy=copy))
        self.pairs.append((ours, reference))
        return ours


@pytest.fixture
def both(monkeypatch: pytest.MonkeyPatch) -> _BothDialects:
    from snapdp.data.engines.duckdb import query

    query._cached_render.cache_clear()
    renderer = _BothDialects()
    monkeypatch.setattr(dialects, "_DUCKDB", renderer)
    yield renderer
    query._cached_render.cache_clear()


def _sources(tmp_path: Path) -> dict[str, object]:
    csv = _write_csv(tmp_path / "t.csv", _rows(60, 3))
    typed = pa.table(
        {
            "g": pa.array([0, 1, 2, None, 5] * 4, pa.int64()),
            "t": pa.array(["a", "b", "00", None, "z"] * 4),
            "b": pa.array([True, False, None, True, False] * 4),
            "d": pa.array([dt.date(2024, 1, 31), dt.date(2024, 2, 29), None, None, None] * 4),
            "x": pa.array([0.05, 0.2, 5.0, None, 11.0] * 4),
            "n": pa.array([-3, 0, 3, 50, None] * 4, pa.int32()),
            "v": pa.array([1.5, -2.25, None, 9.99, 100.0] * 4),
            "u": pa.array(["u1", "u2", "u1", None, "u3"] * 4),
        }
    )
    pq.write_table(typed, tmp_path / "t.parquet")
    blobs = typed.set_column(1, "t", pa.array([b"a", b"\xff", b"00", None, b"z"] * 4))
    return {"csv": csv, "parquet": tmp_path / "t.parquet", "arrow": typed, "bytes": blobs}


_G = Column("g", "integer", keys=(0, 1, 2))
_T = Column("t", "text", keys=("a", "b", "00"))
_B = Column("b", "boolean", keys=(True, False))
_D = Column("d", "date", keys=(dt.date(2024, 1, 31), dt.date(2024, 2, 29)))
_X = Column("x", "decimal", keys=(Fraction(1, 5), Fraction(5)))
_V = ValueColumn(Column("v", "decimal", lower=Fraction(-5), upper=Fraction(10)), 2, -500, 1000)
_WHERE = And(
    (
        Compare("g", ">=", 1),
        Or((InList("t", ("a", "00")), IsNull("b"))),
        Not(Compare("d", "=", dt.date(2024, 1, 31))),
        Compare("x", "<", Fraction(1, 3)),
    )
)


_EVEN = Column("n", "integer", bins=tuple(Fraction(e) for e in range(-10, 101, 5)))
_QUARTERS = Column("x", "decimal", bins=tuple(Fraction(k, 4) for k in range(-8, 60)))
_DAYS = Column("n", "integer", bins=tuple(Fraction(365 * k, 512) for k in range(0, 80)))


def _wide(name: str) -> ValueColumn:
    """A value column of 2^63 + 1 quanta: two of them cannot be packed in 126 bits."""
    bound = Fraction(1 << 62)
    return ValueColumn(Column(name, "decimal", lower=-bound, upper=bound), 0, -(1 << 62), 1 << 62)


#: Unit plans whose kept rows do not fit a HUGEINT: kept as structs (one row, and two, per unit).
_STRUCT_PLANS = [
    AggregatePlan(
        groupings=(_G,),
        values=(_wide("v"), _wide("x")),
        unit=Column("u", "text"),
        bounds=ContributionBounds(*bounds),
        hash_key=KEY,
    )
    for bounds in ((None, None, 1), (2, 1, 2))
]


def _more_plans() -> list[AggregatePlan]:
    where_columns = (_G, _T, _B, _D, Column("x", "decimal"))
    return [
        AggregatePlan(groupings=(_X, _B), values=(_V,)),
        AggregatePlan(groupings=(_EVEN, _QUARTERS), values=(_V,)),  # bins by grid arithmetic
        AggregatePlan(groupings=(_DAYS,), values=(_V,)),
        AggregatePlan(groupings=(_G,), values=(_V,), where=_WHERE, where_columns=where_columns),
        *_STRUCT_PLANS,
    ]


def test_every_query_the_engine_writes_reads_as_the_duckdb_dialect_writes_it(
    tmp_path: Path, both: _BothDialects
) -> None:
    for name, source in _sources(tmp_path).items():
        engine = DuckDBEngine(source)
        for plan in [*PLANS, *_more_plans()]:
            engine.aggregate(plan)
        for grouping in (_G, _T, _D):
            observed_keys(engine, [Column(grouping.name, grouping.type)], None, [])
        engine.fetch(engine.cast_select([_G, _T, _B, _D, _X, _V.column]))
        assert both.pairs, name
    from snapdp.data.engines.duckdb.query import plan_sql

    typed = {"city": "VARCHAR", "g": "BIGINT", "d": "DATE", "v": "INTEGER", "u": "VARCHAR"}
    for types in (typed, dict.fromkeys(typed, "VARCHAR"), {**typed, "u": "BIGINT", "v": "DOUBLE"}):
        for plan in DATA_KEY_PLANS:  # keys from the data: by value and in observed tuples
            plan_sql(plan, "t", types)
    checked = tmp_path / "check.csv"
    checked.write_text(CHECK_CSV, encoding="utf-8")
    for bounds in (CHECK_SCHEMA.bounds, ContributionBounds(None, 2, None)):  # the owner's check
        check(checked, Schema(CHECK_SCHEMA.columns, privacy_unit="u", bounds=bounds, rows=8))
    check(checked, Schema(CHECK_SCHEMA.columns, rows=8))
    differ = [(ours, ref) for ours, ref in both.pairs if ours != ref]
    assert len(both.pairs) >= 4 * (len(PLANS) + 6) + 12 + 3 and differ == []
    written = " ".join(ours for ours, _ in both.pairs)
    parts = ("//", "XOR(", "HUGEINT", "regexp_full_match", "TRY_CAST", "decode(", "[CASE", "{'")
    for part in parts:
        assert part in written  # the entries that differ, and the custom nodes, were rendered
    assert _kinds_written_apart() - both.kinds - _SPARK_ONLY == set()


#: Built by those files for Spark only (``topn.lower_spark``'s ``row_number`` window).
_SPARK_ONLY = {exp.Window}


#: The source files that build the trees the DuckDB engine and the owner's check render.
_BUILDERS = [
    *sorted((SRC / "snapdp/data/engines/relational").glob("*.py")),
    *sorted((SRC / "snapdp/data/engines/duckdb").glob("*.py")),
    SRC / "snapdp/data/owner/check.py",
]


#: Files that build sqlglot trees DuckDB never renders, and why.
_NOT_FOR_DUCKDB = {
    "snapdp/data/engines/spark/engine.py": "the Spark engine's own queries",
    "snapdp/data/engines/spark/observed.py": "the Spark engine's own queries",
    "snapdp/data/frontends/_sqlpost.py": "the user's parsed SQL, read into a workload",
}


def _building(text: str) -> bool:
    """Whether a module's text builds sqlglot nodes: it names sqlglot and calls a node kind,
    ``exp.func`` or one of sqlglot's lower-case builders through ``exp`` (the package's one
    spelling: ``from sqlglot import exp``)."""
    calls = re.search(r"\bexp\.(?:[A-Z][A-Za-z]+|[a-z][a-z_]*)\(", text)
    return "sqlglot" in text and calls is not None


def test_every_file_that_builds_nodes_is_read_by_the_guard() -> None:
    """A tree built in a file the node-kind guard does not read would escape it: every module
    of the package that builds sqlglot nodes is one of :data:`_BUILDERS` or says why DuckDB
    never renders what it builds."""
    builders = {path.relative_to(SRC).as_posix() for path in _BUILDERS}
    found = {
        path.relative_to(SRC).as_posix()
        for path in sorted(SRC.rglob("*.py"))
        if _building(path.read_text(encoding="utf-8"))
    }
    assert found - builders - set(_NOT_FOR_DUCKDB) == set()
    assert set(_NOT_FOR_DUCKDB) <= found  # no stale exemption
    # nor is a tree parsed from SQL text there (its kinds would not show in the files' text);
    # type names are parsed, and checked below
    for path in _BUILDERS:
        text = path.read_text(encoding="utf-8")
        assert re.search(r"parse_one\(|maybe_parse\(|sqlglot\.parse\(|transpile\(", text) is None


#: sqlglot's builder functions and the node kind each builds.
_BUILDS: dict[str, type] = {
    "select": exp.Select, "cast": exp.Cast, "case": exp.Case, "and_": exp.And, "or_": exp.Or,
    "not_": exp.Not, "alias_": exp.Alias, "column": exp.Column, "union": exp.Union,
    "subquery": exp.Subquery, "to_identifier": exp.Identifier, "tuple_": exp.Tuple,
    "array": exp.Array, "paren": exp.Paren, "values": exp.Values, "condition": exp.Condition,
}  # fmt: skip


def _kinds_written_apart() -> set[type]:
    """The node kinds those files build (``exp.Kind(``, ``exp.func("NAME"``, ``exp.select(``…)
    for which sqlglot's DuckDB generator has writing of its own (a transform or a method the
    plain generator does not share): each must occur in the compared queries, so a kind added to
    the code fails this test until a query holding it is compared."""
    plain, duck = dialects.Generator, DuckDB.Generator
    out: set[type] = set()
    for path in _BUILDERS:
        text = path.read_text(encoding="utf-8")
        named = re.findall(r"exp\.([A-Z][A-Za-z]+)\(", text)
        called = re.findall(r"exp\.func\(\s*\"([A-Za-z_]+)\"", text)  # exp.func("COALESCE", …)
        kinds = [getattr(exp, n, None) for n in named]
        kinds += [exp.FUNCTION_BY_NAME.get(n.upper()) for n in called]
        built = re.findall(r"exp\.([a-z][a-z_]*)\(", text)  # exp.select(…), exp.cast(…)
        kinds += [_BUILDS.get(n) for n in built]
        for kind in kinds:
            if not (isinstance(kind, type) and issubclass(kind, exp.Expression)):
                continue
            method = f"{kind.key}_sql"
            own = duck.TRANSFORMS.get(kind) is not plain.TRANSFORMS.get(kind)
            if own or getattr(duck, method, None) is not getattr(plain, method, None):
                out.add(kind)
    return out


@pytest.mark.parametrize("plan", _STRUCT_PLANS)
def test_rows_too_wide_to_pack_are_kept_as_structs(tmp_path: Path, plan: AggregatePlan) -> None:
    """The struct DuckDB keeps such rows in is written as DuckDB reads it ({'name': value})."""
    source = _sources(tmp_path)["arrow"]
    got = DuckDBEngine(source).aggregate(plan)
    assert got == OracleEngine(source).aggregate(plan) and sum(got.rows) > 0


@pytest.mark.parametrize("name", [*topn._DUCKDB_NAMES, "DECIMAL(38, 0)", "DECIMAL(18, 3)"])
def test_type_names_read_as_the_duckdb_dialect_reads_them(name: str) -> None:
    topn._parsed_type.cache_clear()
    assert topn.node_type(name) == exp.DataType.build(name, dialect="duckdb")
