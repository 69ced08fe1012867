"""The DuckDB engine: per-group clamped, contribution-bounded aggregates in SQL, out of core.

Reads CSV and Parquet files (by extension), pandas DataFrames and Arrow tables. Rows never pass
through Python: one SQL query computes every aggregate of a plan, and only one row per group comes
back. Contribution bounding keeps, per privacy unit, the first k rows in a random order
(``ROW_NUMBER() OVER (PARTITION BY unit ORDER BY random())``): a rule that looks only at that
unit's rows. Declared keys are joined from a list parameter, so undeclared keys drop out and absent
keys come back as zeros (see :mod:`snapdp.data.engine`).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from snapdp.data.engine import (
    AggregatePlan,
    Aggregates,
    ColumnPlan,
    canonical_int,
    check_plan_columns,
)
from snapdp.errors import ParameterError

__all__ = ["DuckDBEngine", "quote_identifier"]

_CSV_SUFFIXES = (".csv", ".tsv", ".txt", ".csv.gz", ".tsv.gz")
_PARQUET_SUFFIXES = (".parquet", ".pq", ".parq")
_NUMERIC_TYPES = (
    "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
    "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL", "BOOLEAN",
)  # fmt: skip
_SIGNED_INTS = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT")
_LIMIT = 1 << 62
_names = itertools.count()


def quote_identifier(name: str) -> str:
    """A SQL identifier for ``name``, quoted so that any column name is safe."""
    return '"' + name.replace('"', '""') + '"'


def _quote_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class DuckDBEngine:
    """An :class:`~snapdp.data.engine.Engine` over a file, a pandas DataFrame or an Arrow table."""

    def __init__(self, source: object, *, threads: int | None = None) -> None:
        import duckdb

        self._duckdb = duckdb
        self._con = duckdb.connect(":memory:")
        self._con.execute("SET enable_progress_bar = false")
        if threads is not None:
            self._con.execute(f"SET threads = {int(threads)}")
        self._label: str
        if isinstance(source, (str, Path)):
            path = Path(source)
            if not path.is_file():
                raise ParameterError(f"`data` file not found: {str(path)!r}")
            name = path.name.lower()
            if name.endswith(_PARQUET_SUFFIXES):
                self._relation = f"read_parquet({_quote_string(str(path))})"
            elif name.endswith(_CSV_SUFFIXES):
                self._relation = f"read_csv({_quote_string(str(path))}, header = true)"
            else:
                raise ParameterError(
                    f"`data` must be a .csv or .parquet file (by extension), not {str(path)!r}"
                )
            self._label = str(path)
        else:
            if not _is_frame(source):
                raise ParameterError(
                    "`data` must be a path to a CSV/Parquet file, a pandas DataFrame or a "
                    f"pyarrow Table, not {type(source).__name__}"
                )
            view = f"__snapdp_src_{next(_names)}"
            try:
                self._con.register(view, source)
            except (self._duckdb.Error, TypeError, ValueError) as exc:
                raise ParameterError(f"`data` cannot be read as a table: {exc}") from None
            self._relation = quote_identifier(view)
            self._label = f"<{type(source).__module__}.{type(source).__name__}>"
        self._types = self._read_schema()

    def _read_schema(self) -> dict[str, str]:
        try:
            rows = self._con.execute(f"DESCRIBE SELECT * FROM {self._relation}").fetchall()
        except self._duckdb.Error as exc:
            raise ParameterError(f"`data` could not be read as a table: {exc}") from None
        return {str(r[0]): str(r[1]) for r in rows}

    def describe(self) -> str:
        return self._label

    def column_names(self) -> list[str]:
        return list(self._types)

    def _is_numeric(self, column: str) -> bool:
        return self._types[column].upper().startswith(_NUMERIC_TYPES)

    def aggregate(self, plan: AggregatePlan) -> Aggregates:
        """Run the plan as one SQL query (see the module docstring)."""
        check_plan_columns(plan, list(self._types))
        n_groups = 1 if plan.keys is None else len(plan.keys)
        sql, params = self._sql(plan)
        try:
            rows = self._con.execute(sql, params).fetchall()
        except self._duckdb.Error as exc:
            raise ParameterError(f"the data could not be aggregated: {exc}") from None
        result = Aggregates.zeros(n_groups, len(plan.columns))
        for row in rows:
            g = int(row[0])
            result.rows[g] = _clip(row[1])
            for j, agg in enumerate(result.columns):
                base = 2 + 4 * j
                agg.sums[g] = _clip(row[base] or 0)
                agg.counts[g] = _clip(row[base + 1])
                agg.nulls += int(row[base + 2])
                agg.non_numeric += int(row[base + 3])
        for cp, agg in zip(plan.columns, result.columns, strict=True):
            if agg.non_numeric:
                agg.example = self._non_numeric_example(cp.column)
        return result

    def _non_numeric_example(self, column: str) -> str | None:
        col = quote_identifier(column)
        row = self._con.execute(
            f"SELECT CAST({col} AS VARCHAR) FROM {self._relation} "
            f"WHERE {col} IS NOT NULL AND TRY_CAST({col} AS DOUBLE) IS NULL LIMIT 1"
        ).fetchone()
        return None if row is None else str(row[0])

    def _sql(self, plan: AggregatePlan) -> tuple[str, dict[str, object]]:
        ctes = [f"src AS (SELECT * FROM {self._relation})"]
        params: dict[str, object] = {}
        grouped = plan.by is not None and plan.keys is not None
        key_expr = "0"
        if grouped:
            assert plan.by is not None and plan.keys is not None
            # The declared keys arrive as one list parameter, numbered in declared order. Keys
            # match the column's text form; for a signed integer column that is the same as
            # matching the integers of the keys written canonically (no other key can match),
            # which spares a string cast per row.
            by = quote_identifier(plan.by)
            if self._types[plan.by].upper() in _SIGNED_INTS:
                params["snapdp_keys"] = [canonical_int(k) for k in plan.keys]
                key_type, key_expr = "BIGINT", f"CAST({by} AS BIGINT)"
            else:
                params["snapdp_keys"] = list(plan.keys)
                key_type, key_expr = "VARCHAR", f"CAST({by} AS VARCHAR)"
            ctes.append(
                f"kk AS (SELECT unnest($snapdp_keys::{key_type}[]) AS k, "
                f"generate_subscripts($snapdp_keys::{key_type}[], 1) - 1 AS i)"
            )
        if plan.privacy_unit is not None:
            # Rows with undeclared keys go first, so that k rows are kept among declared ones.
            if grouped:
                ctes.append(f"f AS (SELECT src.* FROM src SEMI JOIN kk ON {key_expr} = kk.k)")
            else:
                ctes.append("f AS (SELECT * FROM src)")
            unit = quote_identifier(plan.privacy_unit)
            ctes.append(
                "r AS (SELECT *, random() AS __snapdp_r FROM f), "
                "b AS (SELECT * FROM r QUALIFY ROW_NUMBER() OVER "
                f"(PARTITION BY {unit} ORDER BY __snapdp_r) <= {int(plan.max_rows_per_unit)})"
            )
        else:
            # Without contribution bounding, aggregating by the raw key and keeping the declared
            # keys afterwards gives the same result and joins only one row per distinct key.
            ctes.append("b AS (SELECT * FROM src)")
        # v: each value as a double (NULL for null, NaN or non-numeric) and the non-numeric flag,
        # once per row; y: the value coarsely clamped and scaled by 10**decimals; w: y rounded
        # half to even, as integer quanta clamped exactly.
        v_cols, y_cols = [f"{key_expr} AS __snapdp_k"], ["__snapdp_k"]
        w_cols = ["__snapdp_k"]
        select = ["__snapdp_k", "COUNT(*)"]
        for j, cp in enumerate(plan.columns):
            value, bad = self._value_exprs(cp.column)
            v_cols += [f"{value} AS __v{j}"]
            y_cols += [f"__v{j}", f"{_scaled(f'__v{j}', cp)} AS __y{j}"]
            w_cols += [f"__v{j}", f"{_quanta(f'__y{j}', cp)} AS __q{j}"]
            if bad != "FALSE":
                v_cols += [f"{bad} AS __b{j}"]
                y_cols += [f"__b{j}"]
                w_cols += [f"__b{j}"]
            select += [
                f"CAST(SUM(__q{j}) AS HUGEINT)",
                f"COUNT(__q{j})",
                f"COUNT(*) - COUNT(__v{j})",
                "0" if bad == "FALSE" else f"COUNT_IF(__b{j})",
            ]
        ctes.append(f"v AS (SELECT {', '.join(v_cols)} FROM b)")
        ctes.append(f"y AS (SELECT {', '.join(y_cols)} FROM v)")
        ctes.append(f"w AS (SELECT {', '.join(w_cols)} FROM y)")
        ctes.append(f"a AS (SELECT {', '.join(select)} FROM w GROUP BY __snapdp_k)")
        if grouped:
            final = "SELECT kk.i, a.* EXCLUDE (__snapdp_k) FROM a JOIN kk ON a.__snapdp_k = kk.k"
        else:
            final = "SELECT 0, a.* EXCLUDE (__snapdp_k) FROM a"
        return "WITH " + ",\n".join(ctes) + "\n" + final, params

    def _value_exprs(self, column: str) -> tuple[str, str]:
        """(the value as DOUBLE, NULL for null/NaN/non-numeric; the non-numeric flag)."""
        col = quote_identifier(column)
        kind = self._types[column].upper()
        if kind in ("FLOAT", "DOUBLE"):
            return f"(CASE WHEN isnan({col}) THEN NULL ELSE CAST({col} AS DOUBLE) END)", "FALSE"
        if self._is_numeric(column):
            return f"CAST({col} AS DOUBLE)", "FALSE"
        raw = f"TRY_CAST({col} AS DOUBLE)"
        return (
            f"(CASE WHEN isnan({raw}) THEN NULL ELSE {raw} END)",
            f"({col} IS NOT NULL AND {raw} IS NULL)",
        )


def _scaled(value: str, cp: ColumnPlan) -> str:
    """SQL: the double ``value`` (or NULL) coarsely clamped, times 10**decimals. The coarse clamp
    only keeps the integer conversion in range; the exact clamp is the integer one after it.
    DuckDB's LEAST/GREATEST skip NULLs, so a null is kept null explicitly."""
    scale = 10**cp.decimals
    lo_d = float(cp.lower_q // scale - 1)
    hi_d = float(-(-cp.upper_q // scale) + 1)
    return (
        f"(CASE WHEN {value} IS NULL THEN NULL ELSE "
        f"LEAST(GREATEST({value}, {lo_d!r}), {hi_d!r}) * {float(scale)!r} END)"
    )


def _quanta(scaled: str, cp: ColumnPlan) -> str:
    """SQL: the scaled double rounded half to even (as Spark's ``rint``; ROUND(y) − y is exact,
    and 2·ROUND(y/2) is the even neighbour of a tie), clamped exactly to [lower_q, upper_q] as
    an integer, then the null policy. (DuckDB's round_even does the same, about 2× slower.)"""
    even = (
        f"(CASE WHEN abs(ROUND({scaled}) - {scaled}) = 0.5 THEN 2 * ROUND({scaled} / 2) "
        f"ELSE ROUND({scaled}) END)"
    )
    quanta = (
        f"(CASE WHEN {scaled} IS NULL THEN NULL ELSE "
        f"LEAST(GREATEST(CAST({even} AS BIGINT), {cp.lower_q}), {cp.upper_q}) END)"
    )
    if cp.nulls == "lower":
        return f"COALESCE({quanta}, {cp.lower_q})"
    if cp.nulls == "upper":
        return f"COALESCE({quanta}, {cp.upper_q})"
    return quanta


def _clip(x: Any) -> int:
    """An exact integer from SQL, clipped to ±2**62 (beyond every mechanism bound: clamping the
    clipped value gives the same result as clamping the value)."""
    v = int(x)
    return max(-_LIMIT, min(_LIMIT, v))


def _is_frame(obj: object) -> bool:
    """A pandas/polars DataFrame or an Arrow table/dataset/reader: what DuckDB can register."""
    return type(obj).__module__.startswith(("pandas", "pyarrow", "polars"))
