"""A pure-Python reference engine: the engine contract of ``snapdp.data.engines.base``, written
as plainly as possible, for small tables. Every real engine (DuckDB, Spark) must return exactly
its aggregates for the same plan and hash key. It is an oracle for tests, not a product engine.

Sources: a CSV path (read by the CSV rule of docs/data.md, "CSV input", with its own line
parser: one record per line, every cell text, empty cells null, a line that does not decode or
split into the header's number of fields skipped), a list of row dicts (native values), a pandas
DataFrame or an Arrow table (turned into row dicts).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections import defaultdict
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

from snapdp.data.engines.base import (
    AggregatePlan,
    Aggregates,
    ValueColumn,
    group_rank,
    row_rank,
)
from snapdp.data.model.schema import Column, CsvOptions
from snapdp.errors import ParameterError
from tests.csv_oracle import read_csvs

__all__ = ["OracleEngine", "cast", "quanta"]

_INT = re.compile(r"[+-]?[0-9]+")
_DEC = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_TRUE = ("true", "t", "yes", "1")
_FALSE = ("false", "f", "no", "0")
_I64 = 1 << 63


def _native(x: Any) -> Any:
    """numpy/pandas scalars → Python values; pandas' NA/NaT → None."""
    if x is None:
        return None
    item = getattr(x, "item", None)
    if callable(item) and type(x).__module__.startswith("numpy"):
        x = item()
    if type(x).__name__ in ("NAType", "NaTType"):
        return None
    return x


def _valid_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _arrow_rows(table: Any) -> list[dict[str, Any]]:
    """An Arrow table's rows, text columns as bytes (a cell that is not UTF-8 stays readable)."""
    import pyarrow as pa

    columns = []
    for column in table.columns:
        t = column.type
        if pa.types.is_dictionary(t):
            column = column.cast(t.value_type)
            t = t.value_type
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            target = pa.binary() if pa.types.is_string(t) else pa.large_binary()
            column = pa.chunked_array([c.view(target) for c in column.chunks], target)
            columns.append([_text(b) for b in column.to_pylist()])
        else:
            columns.append(column.to_pylist())
    names = list(table.column_names)
    return [dict(zip(names, row, strict=True)) for row in zip(*columns, strict=True)]


def _text(cell: bytes | None) -> str | None:
    """An Arrow text cell's bytes as text; None (null) when they are not UTF-8."""
    try:
        return None if cell is None else cell.decode("utf-8")
    except UnicodeDecodeError:
        return None


def cast(kind: str, cell: Any) -> Any:
    """The contract's cast of one cell to ``kind`` (None for null or failure)."""
    cell = _native(cell)
    if cell is None:
        return None
    if isinstance(cell, str):
        if cell == "" or not _valid_unicode(cell):  # a lone surrogate: not text
            return None
        t = cell.strip(" ")
        if kind == "text":
            return cell
        if kind == "integer":
            if _INT.fullmatch(t):
                v = int(t)
                return v if -_I64 <= v < _I64 else None
            if _DEC.fullmatch(t):
                d = float(t)
                if math.isfinite(d) and d.is_integer() and abs(d) < _I64:
                    return int(d)
            return None
        if kind == "decimal":
            if _DEC.fullmatch(t):
                d = float(t)
                return d if math.isfinite(d) else None
            return None
        if kind == "boolean":
            low = t.lower()
            return True if low in _TRUE else False if low in _FALSE else None
        if kind == "date":
            if _DATE.fullmatch(t):
                try:
                    return dt.date.fromisoformat(t)
                except ValueError:
                    return None
            return None
        raise AssertionError(kind)
    if isinstance(cell, bool):
        return cell if kind == "boolean" else None
    if isinstance(cell, int):
        if kind == "integer":
            return cell if -_I64 <= cell < _I64 else None
        if kind == "decimal":
            return float(cell)
        if kind == "text":
            return str(cell)
        return None
    if isinstance(cell, float):
        if not math.isfinite(cell):
            return None
        if kind == "integer":
            return int(cell) if cell.is_integer() and abs(cell) < _I64 else None
        if kind == "decimal":
            return cell
        return None
    if isinstance(cell, Decimal):  # a native fixed-point decimal (Parquet/Arrow DECIMAL)
        if not cell.is_finite():
            return None
        if kind == "integer":
            return int(cell) if cell == cell.to_integral_value() and abs(cell) < _I64 else None
        if kind == "decimal":
            return float(cell)  # correctly rounded
        return None
    if isinstance(cell, dt.datetime):
        return None
    if isinstance(cell, dt.date):
        return cell if kind == "date" else None
    return None


def _cell_index(column: Column, value: Any) -> int | None:
    """The index of ``value`` (already cast) among the column's keys or bins, or None."""
    if value is None:
        if column.nulls.action != "impute":
            return None
        value = column.nulls.value
        if isinstance(value, Fraction):
            value = float(value)
    if column.keys is not None:
        for i, key in enumerate(column.keys):
            k = float(key) if isinstance(key, Fraction) else key
            if type(k) is type(value) and k == value:
                return i
        return None
    assert column.bins is not None
    if column.type == "integer":  # exact: the integer against the rational edges
        exact = column.bins
        for i in range(len(exact) - 1):
            if exact[i] <= value < exact[i + 1]:
                return i
        return None
    edges = _float_edges(column.bins)
    v = float(value)
    for i in range(len(edges) - 1):
        if edges[i] <= v < edges[i + 1]:
            return i
    return None


_EDGES: dict[int, tuple[tuple[Fraction, ...], list[float]]] = {}


def _float_edges(bins: tuple[Fraction, ...]) -> list[float]:
    """The doubles nearest a decimal column's edges, remembered per ``bins`` object (the same
    for every row; kept by identity, as hashing a long tuple of fractions costs as much)."""
    held = _EDGES.get(id(bins))
    if held is None or held[0] is not bins:
        if len(_EDGES) >= 1024:
            _EDGES.clear()
        held = _EDGES[id(bins)] = (bins, [_nearest(e) for e in bins])
    return held[1]


def _nearest(e: Fraction) -> float:
    """The double nearest ``e``; ±inf past the largest double."""
    try:
        return float(e)
    except OverflowError:
        return math.inf if e > 0 else -math.inf


def quanta(vc: ValueColumn, value: Any) -> int | None:
    """Step 6 of the contract for one cast value (None: null before the null rule)."""
    if value is None:
        return vc.impute_q
    v = float(value)
    scale = 10**vc.decimals
    lo_d = float(vc.lower_q // scale - 1)
    hi_d = float(-(-vc.upper_q // scale) + 1)
    y = min(max(v, lo_d), hi_d) * float(scale)
    q = round(y)  # Python rounds a float half to even, exactly
    return min(max(q, vc.lower_q), vc.upper_q)


def _holds(p: Any, row: dict[str, Any]) -> bool | None:
    """The row filter by SQL's three-valued logic (None: unknown), written out plainly: decimal
    values are doubles and meet the double nearest each literal."""
    kind = type(p).__name__
    if kind in ("Compare", "InList"):
        v = row[p.column]
        if v is None:
            return None
        literals = [p.value] if kind == "Compare" else list(p.values)
        if isinstance(v, float):
            literals = [_as_double(x) for x in literals]
        if kind == "InList":
            return any(v == x for x in literals)
        x = literals[0]
        return {
            "=": v == x, "<>": v != x, "<": v < x, "<=": v <= x, ">": v > x, ">=": v >= x,
        }[p.op]  # fmt: skip
    if kind == "IsNull":
        return row[p.column] is None
    if kind == "Not":
        inner = _holds(p.term, row)
        return None if inner is None else not inner
    values = [_holds(t, row) for t in p.terms]
    if kind == "And":
        return False if False in values else (None if None in values else True)
    return True if True in values else (None if None in values else False)


def _as_double(x: Any) -> float:
    try:
        return float(x)
    except OverflowError:
        return math.inf if x > 0 else -math.inf


class OracleEngine:
    """The reference :class:`~snapdp.data.engines.base.Engine` over a small table."""

    def __init__(
        self, source: object, *, csv_options: CsvOptions | None = None, glob: bool = False
    ) -> None:
        opts = csv_options or CsvOptions()
        if isinstance(source, (str, Path)) and glob:
            import glob as _glob

            paths = [Path(p) for p in sorted(_glob.glob(str(source), recursive=True))]
            self._columns, self._rows = read_csvs(paths, opts)
            self._label = str(source)
        elif isinstance(source, (str, Path)):
            self._columns, self._rows = read_csvs([Path(source)], opts)
            self._label = str(Path(source).resolve())
        elif isinstance(source, list):
            self._rows = [dict(r) for r in source]
            self._columns = list(dict.fromkeys(k for r in self._rows for k in r))
            self._label = "<rows>"
        elif hasattr(source, "to_pylist"):
            self._rows = _arrow_rows(source)
            self._columns = list(source.column_names)
            self._label = "<pyarrow.Table>"
        elif hasattr(source, "to_dict"):
            self._rows = source.to_dict("records")
            self._columns = [str(c) for c in source.columns]
            self._label = "<pandas.DataFrame>"
        else:
            raise ParameterError(f"unsupported source {type(source).__name__}")

    def column_names(self) -> list[str]:
        return list(self._columns)

    def describe(self) -> str:
        return self._label

    def observed_keys(
        self, columns: tuple[Column, ...], where: Any, where_columns: tuple[Column, ...]
    ) -> list[tuple[Any, ...]]:
        """The distinct tuples of ``columns`` (cast, after their null rule) among the rows
        ``where`` keeps; a tuple with a null, or a date past Python's years, is no key."""
        out: set[tuple[Any, ...]] = set()
        for row in self._rows:
            if where is not None:
                cast_row = {c.name: cast(c.type, row.get(c.name)) for c in where_columns}
                if _holds(where, cast_row) is not True:
                    continue
            t = tuple(_keyed(c, cast(c.type, row.get(c.name))) for c in columns)
            if all(v is not None for v in t):
                out.add(t)
        return list(out)

    def aggregate(self, plan: AggregatePlan) -> Aggregates:
        for name in plan.used_columns():
            if name not in self._columns:
                raise ParameterError(f"declared column {name!r} is not in the data")
        kept: list[tuple[int | str | None, int, list[int | None]]] = []
        for row in self._rows:
            if plan.where is not None:
                cast_row = {c.name: cast(c.type, row.get(c.name)) for c in plan.where_columns}
                if _holds(plan.where, cast_row) is not True:
                    continue
            cell = _cell_of(plan, row)
            if cell is None:
                continue
            unit: int | str | None = None
            if plan.unit is not None:
                unit = cast(plan.unit.type, row.get(plan.unit.name))
                if unit is None and plan.null_units != "own":
                    continue
            qs = [quanta(vc, cast(vc.column.type, row.get(vc.column.name))) for vc in plan.values]
            kept.append((unit, cell, qs))
        if plan.unit is not None:
            kept = _bound(plan, kept)
        out = Aggregates.zeros(plan)
        lohi = [vc.lower_q + vc.upper_q for vc in plan.values]
        for _, cell, qs in kept:
            out.rows[cell] += 1
            for j, q in enumerate(qs):
                if q is None:
                    continue
                out.sums[j][cell] += q
                out.counts[j][cell] += 1
                sq = out.squares[j]
                if sq is not None:
                    sq[cell] += (2 * q - lohi[j]) ** 2
        return out


def _cell_of(plan: AggregatePlan, row: dict[str, Any]) -> int | None:
    """The row's cell: row-major over the groupings, the first ones as the index of their tuple
    in ``plan.joint`` when it is given (groups from the data); None when the row is dropped."""
    cell, skip = 0, 0
    if plan.joint is not None:
        skip = len(plan.joint[0]) if plan.joint else len(plan.groupings)
        cols = plan.groupings[:skip]
        values = tuple(_keyed(g, cast(g.type, row.get(g.name))) for g in cols)
        index = {tuple(map(_double, t)): i for i, t in enumerate(plan.joint)}
        if any(v is None for v in values) or values not in index:
            return None
        cell = index[values]  # type: ignore[index]
    for g in plan.groupings[skip:]:
        idx = _cell_index(g, cast(g.type, row.get(g.name)))
        if idx is None:
            return None
        cell = cell * g.n_cells + idx
    return cell


def _double(key: Any) -> Any:
    """A declared decimal key as the double a cell holds (any other key as it is)."""
    return float(key) if isinstance(key, Fraction) else key


def _keyed(column: Column, value: Any) -> Any:
    """A grouping value after the column's null rule (None: the row is dropped)."""
    if value is None and column.nulls.action == "impute":
        return _double(column.nulls.value)
    return value


def _bound(
    plan: AggregatePlan, rows: list[tuple[int | str | None, int, list[int | None]]]
) -> list[tuple[int | str | None, int, list[int | None]]]:
    """Step 5: L∞ per (unit, cell), then L0 per unit, then k per unit, by keyed-hash rank."""
    b = plan.bounds
    own = [r for r in rows if r[0] is None]
    units: dict[int | str, list[tuple[int | str | None, int, list[int | None]]]] = defaultdict(list)
    for r in rows:
        if r[0] is not None:
            units[r[0]].append(r)

    def rank(r: tuple[int | str | None, int, list[int | None]]) -> int:
        assert r[0] is not None
        return row_rank(plan, r[0], r[1], r[2])

    out = list(own)
    for unit, urows in units.items():
        if b.max_rows_per_group is not None:
            by_cell: dict[int, list[Any]] = defaultdict(list)
            for r in urows:
                by_cell[r[1]].append(r)
            urows = [
                r
                for cell_rows in by_cell.values()
                for r in sorted(cell_rows, key=rank)[: b.max_rows_per_group]
            ]
        if b.max_groups_per_unit is not None:
            cells = sorted({r[1] for r in urows}, key=lambda c: group_rank(plan, unit, c))
            keep = set(cells[: b.max_groups_per_unit])
            urows = [r for r in urows if r[1] in keep]
        if b.max_rows_per_unit is not None:
            urows = sorted(urows, key=rank)[: b.max_rows_per_unit]
        out.extend(urows)
    return out
