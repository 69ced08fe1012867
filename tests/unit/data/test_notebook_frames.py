"""Results as DataFrames and HTML tables, and polars / DuckDB sources (docs/notebooks.md)."""

from __future__ import annotations

import builtins
import datetime as dt
import html.parser
from fractions import Fraction
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from snapdp.data import Column, PrivateTable, Query, QueryResult, ResultRow, Schema
from snapdp.data.output import frames
from snapdp.errors import ParameterError

pd = pytest.importorskip("pandas")
pl = pytest.importorskip("polars")
duckdb = pytest.importorskip("duckdb")

SCHEMA = Schema(
    (
        Column("age", "integer", lower=0, upper=100),
        Column("income", "decimal", lower=0, upper=1000),
        Column("sex", "text", keys=("f", "m")),
        Column("ok", "boolean", keys=(True, False)),
        Column("day", "date", keys=(dt.date(2020, 1, 1), dt.date(2020, 1, 2))),
    )
)
QUERIES = [
    Query("count", by=("sex", "ok")),
    Query("mean", "income", by=("day",)),
    Query("quantiles", "age", quantiles=(Fraction(1, 2),)),
]


def _data(n: int = 200) -> dict[str, list[Any]]:
    g = np.random.default_rng(1)
    return {
        "age": g.integers(0, 100, n).tolist(),
        "income": (g.random(n) * 1000).tolist(),
        "sex": g.choice(["f", "m"], n).tolist(),
        "ok": g.choice([True, False], n).tolist(),
        "day": [dt.date(2020, 1, 1 + i % 2) for i in range(n)],
    }


def _release(source: object) -> list[QueryResult]:
    table = PrivateTable(source, SCHEMA, total_epsilon=10, rng=np.random.default_rng(5))
    return table.release(QUERIES, 3)


def _rows(results: list[QueryResult]) -> list[tuple[ResultRow, ...]]:
    return [r.rows for r in results]


def test_polars_and_duckdb_sources_release_what_pandas_does() -> None:
    base = _rows(_release(pd.DataFrame(_data())))
    frame = pl.DataFrame(_data())
    categorical = frame.with_columns(pl.col("sex").cast(pl.Categorical))
    relation = duckdb.sql("SELECT * FROM frame")
    for source in (frame, frame.lazy(), categorical, relation, pa.table(_data())):
        assert _rows(_release(source)) == base, type(source).__name__


def test_a_duckdb_relation_that_fails_is_refused_without_its_message() -> None:
    rel = duckdb.sql("SELECT CAST('secret-cell' AS INTEGER) AS age")
    with pytest.raises(ParameterError) as exc:
        PrivateTable(rel, SCHEMA, total_epsilon=1)
    text = str(exc.value)
    assert "DuckDB relation cannot be read as a whole" in text
    assert "secret" not in text and "\n" not in text and exc.value.parameter == "data"
    # nor on the exception's chain, where a traceback or a logger would still show it
    assert exc.value.__context__ is None and exc.value.__cause__ is None


def test_plan_run_accepts_a_polars_source() -> None:
    from snapdp.data import Plan, PlannedQuery

    frame = pl.DataFrame(_data())
    plan = Plan(SCHEMA, [PlannedQuery(QUERIES[0], epsilon=Fraction(1))], source=frame)
    done = plan.run(rng=np.random.default_rng(3))
    again = Plan(SCHEMA, [PlannedQuery(QUERIES[0], epsilon=Fraction(1))], source=frame.to_pandas())
    assert done.results[0].rows == again.run(rng=np.random.default_rng(3)).results[0].rows
    assert done.to_pandas()["value"].tolist() == [float(r.value) for r in done.results[0].rows]
    assert done._repr_html_().startswith('<table class="snapdp-results"><caption>1 query, ε = 1')


def test_sql_results_have_the_notebook_methods() -> None:
    table = PrivateTable(
        pl.DataFrame(_data()), SCHEMA, total_epsilon=2, rng=np.random.default_rng(4)
    )
    results = table.sql("SELECT sex, COUNT(*) FROM people GROUP BY sex ORDER BY sex", 1)
    df = results.to_polars()  # type: ignore[attr-defined]
    assert df["sex"].to_list() == ["f", "m"] and df["statistic"].to_list() == ["count"] * 2


def test_dataframe_columns_types_and_exact_values() -> None:
    results = _release(pd.DataFrame(_data()))
    table = results.to_arrow()  # type: ignore[attr-defined]
    assert table.column_names == [
        "query", "statistic", "column", "sex", "ok", "day", "quantile", "value",
        "value_exact", "accuracy", "rank_accuracy", "confidence", "epsilon", "epsilon_exact",
    ]  # fmt: skip
    assert table.schema.field("day").type == pa.date32()
    assert table.schema.field("ok").type == pa.bool_()
    assert table.schema.field("value").type == pa.float64()
    rows = [row for r in results for row in r.rows]
    assert table.column("value_exact").to_pylist() == [
        str(r.value) if isinstance(r.value, int) else repr(r.value) for r in rows
    ]
    assert table.column("accuracy").to_pylist() == [r.accuracy for r in rows]
    assert set(table.column("epsilon_exact").to_pylist()) == {"1"}
    assert table.column("confidence").to_pylist() == [0.95] * len(rows)
    df = results.to_pandas()  # type: ignore[attr-defined]
    assert list(df.columns) == table.column_names and len(df) == len(rows)
    assert str(df["ok"].dtype) == "boolean"  # nulls keep the type
    assert df.loc[df["statistic"] == "count", "sex"].tolist() == ["f", "f", "m", "m"]
    assert pl.DataFrame(table).equals(results.to_polars())  # type: ignore[attr-defined]
    one = results[1].to_pandas()
    assert one["day"].tolist() == [dt.date(2020, 1, 1), dt.date(2020, 1, 2)]


def _result(label: str, value: float | int, keys: tuple[Any, ...] = ()) -> QueryResult:
    by = tuple(f"k{i}" for i in range(len(keys)))
    q = Query("count", by=by, name=label)
    row = ResultRow(keys=keys, value=value, accuracy=1.5)
    return QueryResult(q, by, (row,), Fraction(1, 3), 0.0, 0.95, target_met=False)


def test_big_integers_stay_exact_in_text_and_epsilon_is_exact() -> None:
    big = 2**60 + 1
    table = frames.to_arrow([_result("big", big)])
    assert table.column("value_exact").to_pylist() == [str(big)]
    assert table.column("value").to_pylist() == [float(big)]
    assert table.column("epsilon_exact").to_pylist() == ["1/3"]
    assert table.column("target_met").to_pylist() == [False]


def test_key_columns_named_like_fixed_columns_and_of_mixed_types() -> None:
    a = _result("a", 1, (1,))
    b = _result("b", 2, ("x",))
    value_key = QueryResult(
        Query("count", by=("value",)), ("value",), (ResultRow(("v",), 3, 1.0),),
        Fraction(1), 0.0, 0.95,
    )  # fmt: skip
    table = frames.to_arrow([a, b, value_key])
    assert "value_key" in table.column_names
    assert table.column("value_key").to_pylist() == [None, None, "v"]
    assert table.column("k0").to_pylist() == ["1", "x", None]  # types disagree: text


class _Cells(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        self.tags.append(tag)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_html_repr_escapes_everything() -> None:
    evil = "<script>alert(1)</script>&"
    r = _result(evil, 4, (evil,))
    for shown in (r._repr_html_(), frames.html_table([r], evil)):
        assert "<script>" not in shown
        parser = _Cells()
        parser.feed(shown)
        assert set(parser.tags) <= {"table", "caption", "thead", "tbody", "tr", "th", "td"}
        assert evil in "".join(parser.text)
        assert "missed" in parser.text


def test_html_repr_of_a_release_and_row_limit() -> None:
    results = _release(pd.DataFrame(_data()))
    shown = results._repr_html_()  # type: ignore[attr-defined]
    assert shown.count("<tr>") == 1 + 7 and "ε = 3 in all" in shown
    many = [_result(f"q{i}", i) for i in range(frames.HTML_ROWS + 5)]
    assert "… 5 more rows" in frames.html_table(many)


def test_missing_pandas_or_polars_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real = builtins.__import__

    def fake(name: str, *args: Any, **kw: Any) -> Any:
        if name in ("pandas", "polars"):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return real(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", fake)
    monkeypatch.setattr(frames.importlib, "import_module", lambda n: fake(n))
    r = _result("a", 1)
    for call, module in ((r.to_pandas, "pandas"), (r.to_polars, "polars")):
        with pytest.raises(ImportError) as exc:
            call()
        assert str(exc.value) == (
            f"{call.__name__}() needs {module}: pip install 'snapdp[notebook]' (docs/notebooks.md)"
        )
