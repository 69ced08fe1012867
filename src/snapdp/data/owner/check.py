"""``snapdp check``: what in the data does not fit its declaration — WITHOUT privacy (docs/data.md).

For the data owner only. A release never says what the data holds beyond its noisy answers
(DESIGN §8.1), so the diagnostics that leave the release path come here: per declared column, the
cells whose cast fails (count and a few examples), the nulls, the values outside the bounds, the
values that are no declared key or lie outside every bin (with counts); for a CSV, the lines
skipped because they are no record (docs/data.md, "CSV input"); per privacy unit, the null
units and the units and rows over each contribution bound; the true row count against a
declared ``rows`` and ``max_rows``. For a pandas DataFrame, the cells of Python types that a
release makes null before the engine reads them (a ``bytes`` cell in an ``object`` column:
:mod:`snapdp.data.owner.objects`) are counted with the cast failures, and the column's
``stored_as`` names those types (``"pandas object holding bytes"``; only those cells are null).
Everything here is exact and may quote cells: it must not be shown to analysts. It never spends
budget and never opens a ledger.

The cast, key and bin rules are the engines' (:mod:`snapdp.data.engines.base`), written once as
the expression tree of :mod:`snapdp.data.engines.relational` and rendered here for DuckDB, so what
is reported is what a release would do with the row.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from msgspec import Struct, field
from sqlglot import exp

from snapdp._records import as_dict
from snapdp.data.engines._cells import is_pandas_frame
from snapdp.data.engines.duckdb.engine import DuckDBEngine
from snapdp.data.engines.relational import builders, exprs
from snapdp.data.engines.relational.dialects import duckdb_sql
from snapdp.data.model.schema import Column, Schema
from snapdp.data.owner.objects import unread_cells

__all__ = ["CheckReport", "ColumnReport", "UnitReport", "check"]

WARNING = (
    "snapdp check reads the data WITHOUT privacy: the counts and cells below are exact. "
    "Do not show this report to anyone who may not see the data."
)


class ColumnReport(Struct):
    """What does not fit one declared column. ``nulls``: empty/null cells; ``cast_failures``:
    cells that are not values of the declared type (they become null), with ``examples``;
    ``below``/``above``: values outside [lower, upper] (clamped in releases); ``outside_domain``:
    values that are no declared key / in no bin (their rows leave groupings on the column), the
    most frequent in ``undeclared`` as (cell text, rows); ``null_rule``: what releases do with
    nulls; ``stored_as``: the column's type in the source when releases never read that type as
    the declared one (every cell is null: a Parquet BLOB, bytes without the UTF-8 annotation,
    declared text), or, for a pandas object column, the Python type of cells releases read as
    null ("pandas object holding bytes"; the other cells are read), else None."""

    name: str
    type: str
    null_rule: str
    nulls: int = 0
    cast_failures: int = 0
    examples: list[str] = field(default_factory=list)
    below: int | None = None
    above: int | None = None
    outside_domain: int | None = None
    undeclared: list[tuple[str, int]] = field(default_factory=list)
    stored_as: str | None = None

    @property
    def fits(self) -> bool:
        """Whether every cell fits the declaration (and the source's type can hold one)."""
        return not (
            self.nulls
            or self.cast_failures
            or self.below
            or self.above
            or self.outside_domain
            or self.stored_as
        )


class UnitReport(Struct):
    """The privacy unit: null units, units, and the units (and rows) over each declared bound.
    L0 and L∞ are counted over the cells of every declared grouping column together (rows outside
    them are not counted there)."""

    column: str
    null_units: int = 0
    null_rule: str = "drop"
    units: int = 0
    max_rows_per_unit: int = 0
    over_rows_per_unit: tuple[int, int] | None = None  # (units, rows beyond the bound)
    over_groups_per_unit: tuple[int, int] | None = None  # (units, cells beyond the bound)
    over_rows_per_group: tuple[int, int] | None = None  # ((unit, cell) pairs, rows beyond)


class CheckReport(Struct):
    """The whole report (see the module docstring); :meth:`to_dict` for JSON, :meth:`to_text`."""

    source: str
    rows: int
    declared_rows: int | None
    max_rows: int
    columns: list[ColumnReport]
    unit: UnitReport | None = None
    skipped_lines: int | None = None  # CSV: non-blank lines that are no record (None: not a CSV)
    skipped_examples: list[str] = field(default_factory=list)  # where the first ones are

    @property
    def fits(self) -> bool:
        """Whether the data fits the declaration in every respect checked."""
        unit_ok = self.unit is None or not (
            self.unit.null_units
            or any(
                o is not None and o[0]
                for o in (
                    self.unit.over_rows_per_unit,
                    self.unit.over_groups_per_unit,
                    self.unit.over_rows_per_group,
                )
            )
        )
        rows_ok = (self.declared_rows is None or self.rows == self.declared_rows) and (
            self.rows <= self.max_rows
        )
        lines_ok = not self.skipped_lines
        return unit_ok and rows_ok and lines_ok and all(c.fits for c in self.columns)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, with the warning first."""
        out: dict[str, Any] = {"warning": WARNING, "fits": self.fits}
        out.update(as_dict(self))
        return out

    def to_text(self) -> str:
        """A plain-text report; its first line is the warning."""
        lines = [WARNING, "", f"data: {self.source}"]
        rows = f"rows: {self.rows:,}"
        if self.declared_rows is not None:
            same = "matches" if self.rows == self.declared_rows else "DOES NOT match"
            rows += f" ({same} the declared rows = {self.declared_rows:,})"
        if self.rows > self.max_rows:
            rows += f" — MORE than max_rows = {self.max_rows:,}: accuracy claims do not hold"
        lines.append(rows)
        if self.skipped_lines:
            where = f", e.g. {', '.join(self.skipped_examples)}" if self.skipped_examples else ""
            lines.append(
                f"{self.skipped_lines:,} line(s) skipped: not a record (a quote left open or "
                "misplaced, a wrong number of fields, bytes that are not in the encoding, or "
                f'longer than max_line_bytes; see docs/data.md, "CSV input"){where}'
            )
        for c in self.columns:
            lines.append("")
            lines.append(f"column {c.name!r} ({c.type}; nulls {c.null_rule})")
            if c.fits:
                lines.append("  every cell fits")
                continue
            if c.stored_as:
                lines.append(f"  {_stored_as(c.stored_as, c.type)}")
            if c.nulls:
                lines.append(f"  {c.nulls:,} null or empty cell(s)")
            if c.cast_failures:
                ex = ", ".join(repr(e) for e in c.examples)
                lines.append(f"  {c.cast_failures:,} cell(s) not {c.type} (become null), e.g. {ex}")
            if c.below:
                lines.append(f"  {c.below:,} value(s) below the lower bound (clamped)")
            if c.above:
                lines.append(f"  {c.above:,} value(s) above the upper bound (clamped)")
            if c.outside_domain:
                top = ", ".join(f"{v!r}: {n:,}" for v, n in c.undeclared)
                lines.append(
                    f"  {c.outside_domain:,} row(s) with a value outside the declared keys/bins "
                    f"(left out of groupings on it): {top}"
                )
        if self.unit is not None:
            u = self.unit
            lines += ["", f"privacy unit {u.column!r}: {u.units:,} unit(s)"]
            lines.append(f"  most rows of one unit: {u.max_rows_per_unit:,}")
            if u.null_units:
                lines.append(f"  {u.null_units:,} row(s) with a null unit ({u.null_rule})")
            for label, over, what in (
                ("max_rows_per_unit", u.over_rows_per_unit, "row(s)"),
                ("max_groups_per_unit", u.over_groups_per_unit, "cell(s)"),
                ("max_rows_per_group", u.over_rows_per_group, "row(s)"),
            ):
                if over is not None:
                    who = "(unit, cell) pair(s)" if label == "max_rows_per_group" else "unit(s)"
                    lines.append(
                        f"  {label}: {over[0]:,} {who} over the bound, {over[1]:,} {what} "
                        "beyond it (not used in releases)"
                    )
        lines += ["", "fits the declaration" if self.fits else "does NOT fit the declaration"]
        return "\n".join(lines)


def check(
    source: object,
    schema: Schema,
    *,
    glob: bool = False,
    examples: int = 3,
    top: int = 10,
    memory_limit: str | None = None,
    temp_directory: str | None = None,
) -> CheckReport:
    """Check ``source`` against ``schema`` WITHOUT privacy (see the module docstring)."""
    engine = DuckDBEngine(
        source, csv=schema.csv, glob=glob, memory_limit=memory_limit, temp_directory=temp_directory
    )
    columns = list(schema.columns)
    unit_col: Column | None = None
    if schema.privacy_unit is not None:
        declared = {c.name: c for c in columns}
        unit_col = declared.get(schema.privacy_unit) or Column(schema.privacy_unit, "text")
        if schema.privacy_unit not in declared:
            columns.append(unit_col)
    base, unread = engine.check_select(columns)
    index = {c.name: i for i, c in enumerate(columns)}
    # a DataFrame's cells that the release makes null before the engine reads them (a bytes cell
    # in an object column): the engine sees nulls, so they are found and counted in Python
    odd = (
        unread_cells(source, {c.name: c for c in columns}, examples)
        if is_pandas_frame(source)
        else {}
    )

    items: list[exp.Expression] = [_count()]
    for i, c in enumerate(columns):
        items += [_count(_is_null(_raw(i))), _count(_and(_not_null(_raw(i)), _is_null(_val(i))))]
        if c.lower is not None and c.upper is not None:
            as_double = exp.Cast(this=_val(i), to=exp.DataType.build("DOUBLE"))
            items += [
                _count(exp.LT(this=as_double, expression=_double(c.lower))),
                _count(exp.GT(this=as_double.copy(), expression=_double(c.upper))),
            ]
        if c.is_grouping:
            items.append(_count(_and(_not_null(_val(i)), _is_null(_cell(c, i)))))
    counts = list(_fetch(engine, base, exp.select(*items).from_("t"))[0])
    rows = int(counts.pop(0))
    reports: list[ColumnReport] = []
    for i, c in enumerate(columns):
        if c is unit_col and c not in schema.columns:
            counts = counts[2:]
            continue
        r = ColumnReport(c.name, c.type, c.nulls.describe(), stored_as=unread.get(c.name))
        r.nulls, r.cast_failures = int(counts.pop(0)), int(counts.pop(0))
        failed_in_engine = r.cast_failures
        if c.name in odd:
            r.nulls -= odd[c.name].cells
            r.cast_failures += odd[c.name].cells
            r.examples = list(odd[c.name].examples)
            r.stored_as = r.stored_as or odd[c.name].held
        if c.lower is not None:
            r.below, r.above = int(counts.pop(0)), int(counts.pop(0))
        if c.is_grouping:
            r.outside_domain = int(counts.pop(0))
        if failed_in_engine and examples > 0:
            failed = (
                exp.select(_raw(i))
                .distinct()
                .from_("t")
                .where(_and(_not_null(_raw(i)), _is_null(_val(i))))
                .order_by(_raw(i))
                .limit(int(examples))
            )
            texts = [str(x[0]) for x in _fetch(engine, base, failed)]
            r.examples += [t for t in texts if t not in r.examples][: examples - len(r.examples)]
        if r.outside_domain:
            outside = (
                exp.select(_raw(i), exp.alias_(_count(), "n"))
                .from_("t")
                .where(_and(_not_null(_val(i)), _is_null(_cell(c, i))))
                .group_by(_raw(i))
                .order_by(exp.Ordered(this=exp.column("n"), desc=True), _raw(i))
                .limit(int(top))
            )
            r.undeclared = [(str(v), int(n)) for v, n in _fetch(engine, base, outside)]
        reports.append(r)
    unit = None
    if unit_col is not None:
        unit = _unit_report(engine, schema, unit_col, base, index, columns)
    lines = engine.line_counts()
    skipped = None if lines is None else lines[0] - lines[1]
    where = engine.skipped_lines(examples) if skipped else []
    return CheckReport(
        engine.describe(), rows, schema.rows, schema.max_rows, reports, unit, skipped, where
    )


def _stored_as(source_type: str, kind: str) -> str:
    """Why no cell of a column stored as ``source_type`` is a value of ``kind``, and what to do;
    for a pandas column with cells of Python types that ``kind`` never reads
    (:class:`~snapdp.data.owner.objects.UnreadCells`), why those cells are not."""
    if source_type.startswith("pandas "):
        dtype, _, held = source_type.removeprefix("pandas ").partition(" holding ")
        types = held.split(", ")
        todo = (
            'decode the bytes to str (pandas: .str.decode("utf-8"))'
            if types == ["bytes"]
            else "convert them to values of the declared type"
        )
        return (
            f"a pandas {dtype} column holding cells of type {held}, which releases never read "
            f"as {kind}: each such cell is null in releases (counted below as not {kind}). "
            f'Before the release, {todo} (docs/data.md, "What does not fit")'
        )
    if kind == "text" and source_type == "BLOB":
        return (
            "stored as BLOB (bytes, not text: binary in Arrow, a Parquet column without the "
            "STRING annotation), which releases never read as text: every cell is null in "
            "releases. Write the column as a string (pyarrow: pa.string()), or cast it to one "
            '(docs/data.md, "What does not fit")'
        )
    return (
        f"stored as {source_type}, which releases never read as {kind}: every cell is null in "
        "releases. Declare the type it is stored as, or convert the column "
        '(docs/data.md, "What does not fit")'
    )


def _unit_report(
    engine: DuckDBEngine,
    schema: Schema,
    unit_col: Column,
    base: str,
    index: dict[str, int],
    columns: Sequence[Column],
) -> UnitReport:
    u = _val(index[unit_col.name])
    report = UnitReport(unit_col.name, null_rule=schema.null_units)
    nulls = exp.select(_count()).from_("t").where(_is_null(u))
    report.null_units = int(_fetch(engine, base, nulls)[0][0])
    per_unit = exp.select(exp.alias_(_count(), "n")).from_("t").where(_not_null(u)).group_by(u)
    most = exp.func("COALESCE", exp.Max(this=exp.column("n")), exp.Literal.number(0))
    units, largest = _fetch(engine, base, exp.select(_count(), most).from_(per_unit.subquery()))[0]
    report.units, report.max_rows_per_unit = int(units), int(largest)
    b = schema.bounds
    if b.max_rows_per_unit is not None:
        report.over_rows_per_unit = _over(engine, base, per_unit, b.max_rows_per_unit)
    groupings = [c for c in columns if c.is_grouping]
    if groupings and (b.max_groups_per_unit is not None or b.max_rows_per_group is not None):
        parts = [_cell(c, index[c.name]) for c in groupings]
        cell = exp.Array(expressions=parts)
        keep = _and(_not_null(u), *(_not_null(p.copy()) for p in parts))
        cells = (
            exp.select(exp.alias_(u.copy(), "u"), exp.alias_(cell, "cell"))
            .from_("t")
            .where(keep)
            .subquery()
        )
        if b.max_groups_per_unit is not None:
            distinct = exp.Count(this=exp.Distinct(expressions=[exp.column("cell")]))
            groups = exp.select(exp.alias_(distinct, "n")).from_(cells).group_by("u")
            report.over_groups_per_unit = _over(engine, base, groups, b.max_groups_per_unit)
        if b.max_rows_per_group is not None:
            rows = exp.select(exp.alias_(_count(), "n")).from_(cells.copy()).group_by("u", "cell")
            report.over_rows_per_group = _over(engine, base, rows, b.max_rows_per_group)
    return report


def _over(engine: DuckDBEngine, base: str, counts: exp.Select, bound: int) -> tuple[int, int]:
    """(how many groups of ``counts`` have n above ``bound``, how much above it in all)."""
    n, k = exp.column("n"), exp.Literal.number(int(bound))
    excess = exp.func(
        "GREATEST", exp.Sub(this=n.copy(), expression=k.copy()), exp.Literal.number(0)
    )
    total = exp.func("COALESCE", exp.Sum(this=excess), exp.Literal.number(0))
    query = exp.select(_count(exp.GT(this=n, expression=k)), total).from_(counts.subquery())
    row = _fetch(engine, base, query)[0]
    return int(row[0]), int(row[1])


def _fetch(engine: DuckDBEngine, base: str, query: exp.Select) -> list[tuple[Any, ...]]:
    """Run ``query`` over ``t``, the engine's raw and cast columns (:meth:`cast_select`)."""
    return list(engine.fetch(f"WITH t AS ({base}) {duckdb_sql(query)}"))


def _count(where: exp.Expression | None = None) -> exp.Expression:
    """COUNT(*), or COUNT(*) FILTER (WHERE ``where``)."""
    count = exp.Count(this=exp.Star())
    return count if where is None else exp.Filter(this=count, expression=exp.Where(this=where))


def _raw(i: int) -> exp.Column:
    return exp.column(f"raw_{i}")


def _val(i: int) -> exp.Column:
    return exp.column(f"val_{i}")


def _is_null(e: exp.Expression) -> exp.Expression:
    return exp.Is(this=e, expression=exp.Null())


def _not_null(e: exp.Expression) -> exp.Expression:
    return exp.Not(this=_is_null(e))


def _and(*terms: exp.Expression) -> exp.Expression:
    out = terms[0]
    for t in terms[1:]:
        out = exp.And(this=out, expression=t)
    return out


def _cell(column: Column, i: int) -> exp.Expression:
    """The index of ``val_i`` among ``column``'s keys or bins (NULL: outside them)."""
    return exprs.cell_index(column, _val(i))


def _double(x: object) -> exp.Expression:
    """The double nearest the bound ``x`` (the engines' typed literal)."""
    assert isinstance(x, (int, Fraction))
    return builders.double(builders.nearest_double(x))
