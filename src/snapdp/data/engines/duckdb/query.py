"""The DuckDB engine's query: an :class:`~snapdp.data.engines.base.AggregatePlan` as one SQL
query (casts, cells, quanta and aggregates from the shared tree of
:mod:`snapdp.data.engines.relational`; the bounding CTEs by keyed-hash ranks, no sort).

Internal names: the source's columns are read once, under aliases ``_snapdp_…`` chosen here; no
user column name appears anywhere else in the query, so no user column can collide with them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sqlglot import exp

from snapdp.data.engines._cells import declared_columns
from snapdp.data.engines.base import (
    GROUP_TAG,
    RANK_MASK,
    RANK_MULTIPLIERS,
    ROW_TAG,
    UNIT_MULTIPLIER,
    AggregatePlan,
    ValueColumn,
    chunk_width,
    key_words,
    lane_count,
    row_chunks,
    row_radices,
)
from snapdp.data.engines.duckdb.sources import (
    PREFIX,
    TEXT_BLOB,
    source_family,
    sql_string,
)
from snapdp.data.engines.relational import exprs
from snapdp.data.engines.relational.dialects import duckdb_sql
from snapdp.data.model.schema import Column
from snapdp.errors import ParameterError

__all__ = [
    "cast_sql",
    "cell_index_sql",
    "check_columns",
    "check_plan",
    "plan_sql",
]

_P = PREFIX
_HEX32 = re.compile(r"[0-9a-fA-F]{32}")


def plan_sql(plan: AggregatePlan, relation: str, types: dict[str, str]) -> tuple[str, list[str]]:
    """The query for ``plan`` over ``relation`` (the source's column ``types``) and, per value
    column, how its squares come back."""
    used = plan.used_columns()
    alias = {name: f"{_P}c{i}" for i, name in enumerate(used)}
    # s0: the used columns under internal aliases, cast to their declared types.
    casts = []
    decl = declared_columns(plan)
    for name in used:
        casts.append(f"{cast_sql(name, decl[name], types)} AS {alias[name]}")
    ctes = [f"{_P}s0 AS (SELECT {', '.join(casts) or '1 AS _snapdp_one'} FROM {relation})"]
    # s1: cells, quanta, unit text.
    cols: list[str] = []
    joins: list[str] = []
    cell_terms: list[str] = []
    stride = plan.n_cells
    where: list[str] = []
    for gi, g in enumerate(plan.groupings):
        stride //= g.n_cells
        node = exprs.with_null_rule(g, exprs.column(alias[g.name]))
        value = duckdb_sql(node)
        if g.keys is not None:
            keys = _keys_table(g)
            if keys is None:
                where.append("FALSE")
                continue
            joins.append(
                f"JOIN (VALUES {keys}) AS {_P}k{gi}({_P}kv, {_P}ki) ON {value} = {_P}k{gi}.{_P}kv"
            )
            cell_terms.append(f"{_P}k{gi}.{_P}ki * {stride}")
        else:
            index = duckdb_sql(exprs.bin_index(g, node))
            where.append(f"({index}) IS NOT NULL")
            cell_terms.append(f"({index}) * {stride}")
    if plan.where is not None:  # step 3: the row filter, on the cast values
        values = {name: exprs.column(alias[name]) for name in alias}
        where.append(duckdb_sql(exprs.predicate(plan.where, values, decl)))
    cell = " + ".join(cell_terms) if cell_terms else "0"
    cols.append(f"CAST({cell} AS BIGINT) AS {_P}cell")
    layout: list[str] = []
    for j, vc in enumerate(plan.values):
        q, q_type = _quanta_expr(exprs.column(alias[vc.column.name]), vc)
        cols.append(f"CAST({q} AS {q_type}) AS {_P}q{j}")
        layout.append("limbs" if _needs_limbs(vc) else "direct")
    if plan.unit is not None:
        cols.append(f"{alias[plan.unit.name]} AS {_P}u")
    ctes.append(
        f"{_P}s1 AS (SELECT {', '.join(cols)} FROM {_P}s0 {' '.join(joins)}"
        + (f" WHERE {' AND '.join(where)}" if where else "")
        + ")"
    )
    qnames = [f"{_P}q{j}" for j in range(len(plan.values))]
    final = f"{_P}s1"
    if plan.unit is not None:
        final = _bounding(plan, ctes, qnames)
    select = [f"{_P}cell", "COUNT(*)"]
    for j, vc in enumerate(plan.values):
        q = f"{_P}q{j}"
        select += [f"CAST(SUM({q}) AS HUGEINT)", f"COUNT({q})"]
        if vc.squares:
            centre = vc.lower_q + vc.upper_q
            c = f"(2 * CAST({q} AS HUGEINT) - ({centre}))"
            if layout[j] == "limbs":
                a = f"abs({c})"
                hi, lo = f"({a} >> 32)", f"({a} & 4294967295)"
                select += [f"SUM({hi} * {hi})", f"SUM({hi} * {lo})", f"SUM({lo} * {lo})"]
            else:
                select.append(f"SUM({c} * {c})")
    query = (
        "WITH " + ",\n".join(ctes) + f"\nSELECT {', '.join(select)} FROM {final} GROUP BY {_P}cell"
    )
    return query, layout


def _bounding(plan: AggregatePlan, ctes: list[str], qnames: list[str]) -> str:
    """Append the bounding CTEs (step 5); return the name of the bounded rows' relation.

    Each stage is one aggregate: per group of the stage, the ``n`` lowest-ranked rows by
    ``arg_min``/``min_by(…, n)``, the row packed into one integer when the declared domain
    allows (a fixed-size state: less memory, no sort), else a struct. The row rank is a
    function of the row (unit, cell, quanta), so each stage recomputes it."""
    packer = _Packer(plan, qnames)
    b = plan.bounds
    ctes.append(f"{_P}b0 AS (SELECT * FROM {_P}s1 WHERE {_P}u IS NOT NULL)")
    current = f"{_P}b0"
    step = 1
    if b.max_rows_per_group is not None:
        current = _top_rows(
            ctes, current, step, [f"{_P}u", f"{_P}cell"], b.max_rows_per_group, packer, plan
        )
        step += 1
    if b.max_groups_per_unit is not None:
        n = b.max_groups_per_unit
        pick = (
            f"arg_min({_P}cell, {_P}gr) AS {_P}cell"
            if n == 1
            else f"unnest(min_by({_P}cell, {_P}gr, {n})) AS {_P}cell"
        )
        cells = f"(SELECT DISTINCT {_P}u, {_P}cell FROM {current})"
        ctes.append(
            f"{_P}g{step} AS (SELECT * FROM {_ranked(cells, plan, GROUP_TAG, False, f'{_P}gr')})"
        )
        ctes.append(f"{_P}h{step} AS (SELECT {_P}u, {pick} FROM {_P}g{step} GROUP BY {_P}u)")
        ctes.append(
            f"{_P}b{step} AS (SELECT * FROM {current} SEMI JOIN {_P}h{step} "
            f"USING ({_P}u, {_P}cell))"
        )
        current = f"{_P}b{step}"
        step += 1
    if b.max_rows_per_unit is not None:
        current = _top_rows(ctes, current, step, [f"{_P}u"], b.max_rows_per_unit, packer, plan)
        step += 1
    out = ", ".join([f"{_P}cell", *qnames])
    if plan.null_units == "own":
        ctes.append(
            f"{_P}bz AS (SELECT {out} FROM {current} UNION ALL "
            f"SELECT {out} FROM {_P}s1 WHERE {_P}u IS NULL)"
        )
        return f"{_P}bz"
    return current


def cast_sql(name: str, column: Column, types: dict[str, str]) -> str:
    """SQL: the source column ``name`` cast to ``column.type`` by the contract's rules."""
    source = types.get(name, "VARCHAR")
    family = "bytes" if source == TEXT_BLOB else source_family(source)
    return duckdb_sql(exprs.cast_native(exprs.column(name), family, column.type))


def _keys_table(column: Column) -> str | None:
    """SQL VALUES rows (typed key, index), or None when no cell can equal any key."""
    rows = exprs.key_rows(column)
    return ", ".join(f"({duckdb_sql(key)}, {i})" for key, i in rows) if rows else None


def cell_index_sql(column: Column, value: str) -> str:
    """SQL: the index of the cast column ``value`` among ``column``'s keys or bins after its
    null rule (NULL: the row is dropped from groupings on the column). For ``snapdp check``;
    the engine itself joins a keys table, with the same result."""
    return duckdb_sql(exprs.cell_index(column, exprs.column(value)))


def _quanta_bits(vc: ValueColumn) -> int:
    scale: int = 10**vc.decimals
    return max(abs(vc.lower_q), abs(vc.upper_q)) + 2 * scale + 2


def _q_type(vc: ValueColumn) -> str:
    return "BIGINT" if _quanta_bits(vc) < 1 << 62 else "HUGEINT"


def _quanta_expr(value: exp.Expression, vc: ValueColumn) -> tuple[str, str]:
    """SQL: the quanta of the double ``value`` (step 6) and their SQL type.

    q = clamp(round_half_even(clamp(v, lo, hi)·10^d), L_q, U_q) with lo = ⌊L_q/10^d⌋ − 1 and
    hi = ⌈U_q/10^d⌉ + 1 as doubles: the coarse clamp only keeps the conversion in range, the exact
    clamp is the integer one. Ties to even: DuckDB's cast of a DOUBLE to an integer rounds to
    nearest, ties to even (as ``nearbyint``; tested equal to Python's ``round`` on ties and random
    doubles, for BIGINT and HUGEINT)."""
    if vc.column.type not in ("integer", "decimal"):
        raise ParameterError(
            f"column {vc.column.name!r}: a value column must be integer or decimal, "
            f"not {vc.column.type!r}",
            parameter="type",
        )
    if not vc.lower_q <= vc.upper_q:
        raise ParameterError(f"column {vc.column.name!r}: empty quanta range", parameter="lower")
    magnitude = _quanta_bits(vc)
    if magnitude >= 1 << 64:
        raise ParameterError(
            f"column {vc.column.name!r}: bounds too wide to sum exactly (|bound|·10^decimals "
            "must stay below 2^64)",
            parameter="upper",
        )
    q_type = _q_type(vc)
    return duckdb_sql(exprs.quanta(vc, value, q_type)), q_type


def _needs_limbs(vc: ValueColumn) -> bool:
    """Whether Σ(2q − L − U)² needs 32-bit limbs: a row's square may reach 2^62 (then 2^63+
    rows could overflow HUGEINT). From the declared bounds only."""
    return vc.squares and (vc.upper_q - vc.lower_q) >= 1 << 31


def _fold_sql(t: str) -> str:
    return f"(xor({t}, {t} >> 32) & {RANK_MASK})"


def _lanes_sql(value: str, count: int) -> list[str]:
    """SQL: the ``count`` 32-bit lanes of the non-negative integer ``value`` as BIGINTs."""
    if count == 1:
        return [f"CAST({value} AS BIGINT)"]
    return [f"CAST((({value}) >> {32 * i}) & {RANK_MASK} AS BIGINT)" for i in range(count)]


def _ranked(relation: str, plan: AggregatePlan, tag: int, values: bool, name: str) -> str:
    """SQL: ``relation`` (columns unit, cell and, with ``values``, the quanta) with a column
    ``name`` holding :func:`~snapdp.data.engines.base.mix_rank` of the row's lanes (tested
    equal to ``row_rank``/``group_rank``). One projection per lane: each reads the previous
    accumulators as columns, so the SQL grows linearly with the number of lanes."""
    u = f"{_P}u"
    if plan.unit is not None and plan.unit.type == "text":
        relation = f"(SELECT *, md5_number({u}) AS {_P}um FROM {relation})"
        units = _lanes_sql(f"{_P}um", 2)
    else:
        units = [f"({u} & {RANK_MASK})", f"(({u} >> 32) & {RANK_MASK})"]
    lanes: list[str] = []
    if not values:
        lanes += _lanes_sql(f"{_P}cell", lane_count(plan.n_cells))
    else:
        radices = row_radices(plan)
        digits = [f"{_P}cell"]
        for j, vc in enumerate(plan.values):
            d = f"COALESCE(CAST({_P}q{j} AS {_q_type(vc)}) - ({vc.lower_q - 1}), 0)"
            digits.append(d if radices[j + 1] >= 1 << 63 else f"CAST({d} AS BIGINT)")
        for chunk in row_chunks(plan):
            value = digits[chunk[0]]
            for i in chunk[1:]:
                value = f"({value} * {radices[i]} + {digits[i]})"
            lanes += _lanes_sql(value, lane_count(chunk_width(plan, chunk)))
    # with_unit: one lane for the unit first
    lanes.insert(0, f"xor({units[0]}, ({units[1]} * {UNIT_MULTIPLIER}) & {RANK_MASK})")
    # each lane computed once (both accumulators read it), as a column
    xs = [f"{_P}x{i}" for i in range(len(lanes))]
    relation = (
        f"(SELECT *, {', '.join(f'{x} AS {c}' for x, c in zip(lanes, xs, strict=True))} "
        f"FROM {relation})"
    )
    k0, k1, k2, k3 = key_words(plan.hash_key)
    ma, mb = RANK_MULTIPLIERS
    ta, tb = f"{_P}ta", f"{_P}tb"
    n = len(lanes)
    pairs = [(x, x) for x in xs] + [(str(k2 ^ n), str(k3 ^ n))]
    xa, xb = pairs[0]
    rel = (
        f"(SELECT *, xor(CAST({k0 ^ tag} AS BIGINT), {xa}) * {ma} AS {ta}, "
        f"xor(CAST({k1 ^ tag} AS BIGINT), {xb}) * {mb} AS {tb} FROM {relation})"
    )
    for xa, xb in pairs[1:]:
        rel = (
            f"(SELECT * REPLACE (xor({_fold_sql(ta)}, {xa}) * {ma} AS {ta}, "
            f"xor({_fold_sql(tb)}, {xb}) * {mb} AS {tb}) FROM {rel})"
        )
    text_unit = plan.unit is not None and plan.unit.type == "text"
    drop = ", ".join([ta, tb, *xs, *([f"{_P}um"] if text_unit else [])])
    return (
        f"(SELECT * EXCLUDE ({drop}), {_fold_sql(ta)} * {1 << 31} + ({_fold_sql(tb)} >> 1) "
        f"AS {name} FROM {rel})"
    )


class _Packer:
    """A row (cell, quanta) as one integer when the declared domain allows: digits of radix
    n_cells, then (U_q − L_q + 2) per value column (0 for a null quantum, q − L_q + 1 otherwise).
    BIGINT when the product of the radices is below 2^63, HUGEINT below 2^126, else a struct."""

    def __init__(self, plan: AggregatePlan, qnames: list[str]) -> None:
        self.qnames = qnames
        self.values = plan.values
        self.radices = [v.upper_q - v.lower_q + 2 for v in plan.values]
        total = plan.n_cells
        for r in self.radices:
            total *= r
        self.type = "BIGINT" if total < 1 << 63 else "HUGEINT" if total < 1 << 126 else None

    def pack(self) -> str:
        if self.type is None:
            return (
                "{" + ", ".join(f"{sql_string(c)}: {c}" for c in [f"{_P}cell", *self.qnames]) + "}"
            )
        expr = f"CAST({_P}cell AS {self.type})"
        for q, vc, radix in zip(self.qnames, self.values, self.radices, strict=True):
            digit = f"COALESCE(CAST({q} AS {self.type}) - ({vc.lower_q - 1}), 0)"
            expr = f"({expr} * {radix} + {digit})"
        return expr

    def unpack(self, packed: str) -> list[str]:
        """SQL select items restoring ``cell`` and the quanta from ``packed``."""
        if self.type is None:
            return [f"{packed}.{c} AS {c}" for c in [f"{_P}cell", *self.qnames]]
        items: list[str] = []
        divisor = 1
        columns = list(zip(self.qnames, self.values, self.radices, strict=True))
        for q, vc, radix in reversed(columns):
            digit = f"(({packed} // {divisor}) % {radix})"
            items.append(
                f"CAST(CASE WHEN {digit} = 0 THEN NULL ELSE {digit} + ({vc.lower_q - 1}) END "
                f"AS {_q_type(vc)}) AS {q}"
            )
            divisor *= radix
        items.append(f"CAST({packed} // {divisor} AS BIGINT) AS {_P}cell")
        return items[::-1]


def _top_rows(
    ctes: list[str],
    current: str,
    step: int,
    by: list[str],
    n: int,
    packer: _Packer,
    plan: AggregatePlan,
) -> str:
    """Append CTEs keeping the ``n`` lowest-ranked rows per ``by`` by one aggregate (no sort)."""
    rank = f"{_P}rr"
    current = _ranked(current, plan, ROW_TAG, True, rank)
    keys = ", ".join(by)
    if n == 1:
        pick = f"arg_min({packer.pack()}, {rank}) AS {_P}t"
    else:
        pick = f"unnest(min_by({packer.pack()}, {rank}, {n})) AS {_P}t"
    ctes.append(f"{_P}a{step} AS (SELECT {keys}, {pick} FROM {current} GROUP BY {keys})")
    ctes.append(
        f"{_P}b{step} AS (SELECT {_P}u, {', '.join(packer.unpack(f'{_P}t'))} FROM {_P}a{step})"
    )
    return f"{_P}b{step}"


def check_plan(plan: AggregatePlan, names: Sequence[str]) -> None:
    check_columns(plan.used_columns(), names)
    if not _HEX32.fullmatch(plan.hash_key):
        raise ParameterError("`hash_key` must be 32 hex digits", parameter="hash_key")
    if plan.unit is not None and plan.unit.type not in ("integer", "text"):
        raise ParameterError(
            f"the privacy unit {plan.unit.name!r} must be declared integer or text, not "
            f"{plan.unit.type!r}",
            parameter="privacy_unit",
        )
    if plan.null_units not in ("drop", "own"):
        raise ParameterError(
            f"`null_units` must be 'drop' or 'own', not {plan.null_units!r}",
            parameter="null_units",
        )


def check_columns(used: Sequence[str], names: Sequence[str]) -> None:
    """Every used column must be in the source (its names are public: header or schema)."""
    missing = [c for c in used if c not in names]
    if missing:
        raise ParameterError(
            f"column {missing[0]!r} is not in the data (its columns: "
            f"{', '.join(repr(n) for n in names[:20])}{', …' if len(names) > 20 else ''})",
            parameter="columns",
        )
