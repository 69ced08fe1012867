"""An :class:`~snapdp.data.engines.base.AggregatePlan` as ONE sqlglot query tree for both engines.

The query is a chain of common table expressions, each one step of the engine contract
(docs/data.md, "The engine contract"; docs/architecture.md, "Engines"):

* ``s0``: the used source columns, cast by the contract's rules under internal aliases (no user
  column name appears anywhere else, so none can collide with them; a text cell's check and
  trim are computed once below its casts, :func:`~.exprs.cast_select`);
* ``s1``: the cell index (a join to a typed keys table per keyed grouping, a comparison tree or
  grid arithmetic per binned one, kept only for values in a bin: its first and last
  comparisons), the row filter, the quanta per value column and the unit;
* ``b0``, ``b1``, …: contribution bounding by keyed-hash ranks (:func:`ranked`, equal to
  :func:`~snapdp.data.engines.base.row_rank` / ``group_rank``): L∞ keeps the lowest-ranked
  rows per (unit, cell), L0 the cells of lowest group rank per unit (a semi-join), k the
  lowest-ranked rows per unit, each a :class:`~.topn.TopRows` node;
* the final aggregate per cell: rows, exact sums and counts, sums of squares (whole, or in
  limbs recombined in Python).

Each value is computed once and read by name: no cast of a column to the type it already has,
no subexpression written twice (the query's size drives Spark's analysis and optimisation and
DuckDB's planning; docs/performance.md, "The query's size").

The tree is rendered by :mod:`.dialects`; ``wide`` says whether the engine has 128-bit integer
arithmetic (DuckDB's HUGEINT: quanta and sums of squares in it; Spark: longs, DECIMAL(38, 0)
sums and 31-bit limbs). That, and the custom nodes, are the only differences.
"""

from __future__ import annotations

from collections.abc import Mapping

from msgspec import Struct
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
from snapdp.data.engines.relational import exprs, nodes
from snapdp.data.engines.relational.lanes import CELL, P, by_value_lanes
from snapdp.data.engines.relational.lanes import int_lanes_sql as _lanes
from snapdp.data.engines.relational.lanes import p_and as _and
from snapdp.data.engines.relational.lanes import p_paren as _p
from snapdp.data.engines.relational.lanes import p_shr as _shr
from snapdp.data.engines.relational.lanes import p_xor as _xor
from snapdp.data.engines.relational.topn import Digest, DigestLane, Kept, TopRows, TopSpec
from snapdp.data.engines.relational.topn import node_column as _c
from snapdp.data.engines.relational.topn import node_int as _n
from snapdp.data.engines.relational.topn import node_type as _t
from snapdp.data.model.schema import Column
from snapdp.errors import ParameterError

__all__ = ["LONG_SUM_LIMIT", "Query", "aggregate_query", "check_values", "q_type", "ranked"]

UNIT = f"{P}u"
LONG_SUM_LIMIT = 1 << 19  # longs sum exactly below 2^44 values of quanta below 2^19


class Query(Struct, frozen=True):
    """The query tree; per value column how its squares come back (``"direct"`` or
    ``"limbs"``) and the limb width in bits. Output columns: ``_cell``, ``_rows``, per value
    column j ``_sum{j}``, ``_cnt{j}`` and ``_sq{j}`` or ``_sq{j}_hh``, ``_hl``, ``_ll``."""

    tree: exp.Select
    layout: list[str]
    limb_bits: int


# -- checks ----------------------------------------------------------------------------------
def _quanta_bits(vc: ValueColumn) -> int:
    scale: int = 10**vc.decimals
    return max(abs(vc.lower_q), abs(vc.upper_q)) + 2 * scale + 2


def q_type(vc: ValueColumn, wide: bool = True) -> str:
    """The SQL type of a value column's quanta."""
    return "BIGINT" if not wide or _quanta_bits(vc) < 1 << 62 else "HUGEINT"


def check_values(plan: AggregatePlan) -> None:
    """Every value column numeric, with a non-empty quanta range narrow enough to sum exactly."""
    for vc in plan.values:
        name = vc.column.name
        if vc.column.type not in ("integer", "decimal"):
            raise ParameterError(
                f"column {name!r}: a value column must be integer or decimal, "
                f"not {vc.column.type!r}",
                parameter="type",
            )
        if not vc.lower_q <= vc.upper_q:
            raise ParameterError(f"column {name!r}: empty quanta range", parameter="lower")
        if _quanta_bits(vc) >= 1 << 64:
            raise ParameterError(
                f"column {name!r}: bounds too wide to sum exactly (|bound|·10^decimals "
                "must stay below 2^64)",
                parameter="upper",
            )


# -- ranks (step 5) --------------------------------------------------------------------------
def _fold(t: str) -> exp.Paren:
    return _and(_xor(_c(t), _shr(_c(t), 32)), RANK_MASK)


def _row_lanes(plan: AggregatePlan, wide: bool) -> list[exp.Expression]:
    radices = row_radices(plan)
    digits: list[exp.Expression] = [] if plan.by_value else [_c(CELL)]
    first = len(digits)
    for j, vc in enumerate(plan.values):
        # q_j is of q_type already; a BIGINT one stays a BIGINT digit (q − L_q + 1 < 2^63)
        d: exp.Expression = exp.Coalesce(
            this=exp.Sub(this=_c(f"{P}q{j}"), expression=_n(vc.lower_q - 1)), expressions=[_n(0)]
        )
        narrow = radices[first + j] < 1 << 63 and q_type(vc, wide) != "BIGINT"
        digits.append(exp.Cast(this=d, to=_t("BIGINT")) if narrow else d)
    lanes: list[exp.Expression] = []
    for chunk in row_chunks(plan):
        value = digits[chunk[0]]
        for i in chunk[1:]:
            value = _p(
                exp.Add(this=exp.Mul(this=value, expression=_n(radices[i])), expression=digits[i])
            )
        lanes += _lanes(value, lane_count(chunk_width(plan, chunk)))
    return lanes


def ranked(
    relation: exp.Expression,
    cols: list[str],
    plan: AggregatePlan,
    tag: int,
    values: bool,
    name: str,
    wide: bool = True,
) -> exp.Select:
    """``relation`` (its columns ``cols``: the unit, the cell and, with ``values``, the quanta)
    with a column ``name`` holding :func:`~snapdp.data.engines.base.mix_rank` of the row's
    lanes. One projection per lane, each reading the accumulators as columns (the query grows
    linearly with the number of lanes); every product stays below 2^63."""
    carried = list(cols)
    if plan.unit is not None and plan.unit.type == "text":
        digest = f"{P}um"
        relation = (
            exp.select(*nodes.columns(cols), exp.alias_(Digest(this=_c(UNIT)), digest))
            .from_(relation, copy=False)
            .subquery(f"{P}r", copy=False)
        )
        carried.append(digest)
        units: list[exp.Expression] = [DigestLane(this=_c(digest), index=i) for i in (0, 1)]
    else:
        units = [_and(_c(UNIT), RANK_MASK), _and(_shr(_c(UNIT), 32), RANK_MASK)]
    cell_lanes = _lanes(_c(CELL), lane_count(plan.n_cells))
    if plan.by_value:
        relation, cell_lanes = by_value_lanes(plan, relation, carried)
    if not values:
        lanes = cell_lanes
    elif plan.by_value:
        lanes = [*cell_lanes, *_row_lanes(plan, wide)]
    else:
        lanes = _row_lanes(plan, wide)
    unit_lane = _xor(
        units[0], _and(_p(exp.Mul(this=units[1], expression=_n(UNIT_MULTIPLIER))), RANK_MASK)
    )
    lanes.insert(0, unit_lane)
    xs = [f"{P}x{i}" for i in range(len(lanes))]
    rel = (
        exp.select(
            *nodes.columns(cols), *(exp.alias_(x, c) for x, c in zip(lanes, xs, strict=True))
        )
        .from_(relation, copy=False)
        .subquery(f"{P}r", copy=False)
    )
    k0, k1, k2, k3 = key_words(plan.hash_key)
    ma, mb = RANK_MULTIPLIERS
    ta, tb = f"{P}ta", f"{P}tb"
    n = len(lanes)
    pairs: list[tuple[exp.Expression, exp.Expression]] = [(_c(x), _c(x)) for x in xs]
    pairs.append((_n(k2 ^ n), _n(k3 ^ n)))
    xa, xb = pairs[0]
    first_a = exp.Mul(
        this=_xor(exp.Cast(this=_n(k0 ^ tag), to=_t("BIGINT")), xa), expression=_n(ma)
    )
    first_b = exp.Mul(
        this=_xor(exp.Cast(this=_n(k1 ^ tag), to=_t("BIGINT")), xb), expression=_n(mb)
    )
    select = exp.select(
        *nodes.columns([*cols, *xs]), exp.alias_(first_a, ta), exp.alias_(first_b, tb)
    ).from_(rel, copy=False)
    for xa, xb in pairs[1:]:
        step_a = exp.Mul(this=_xor(_fold(ta), xa), expression=_n(ma))
        step_b = exp.Mul(this=_xor(_fold(tb), xb), expression=_n(mb))
        # each step wraps the last one, which nothing else holds: no copy (a copy made the
        # rendering quadratic in the number of lanes)
        select = exp.select(
            *nodes.columns([*cols, *xs]), exp.alias_(step_a, ta), exp.alias_(step_b, tb)
        ).from_(select.subquery(f"{P}r", copy=False), copy=False)
    rank = exp.Add(
        this=exp.Mul(this=_fold(ta), expression=_n(1 << 31)), expression=_shr(_fold(tb), 1)
    )
    last = select.subquery(f"{P}r", copy=False)
    return exp.select(*nodes.columns(cols), exp.alias_(rank, name)).from_(last, copy=False)


# -- the query ---------------------------------------------------------------------------------
def aggregate_query(
    plan: AggregatePlan, source: exp.Expression, families: Mapping[str, str], *, wide: bool
) -> Query:
    """The query for ``plan`` over the relation ``source``, whose used columns have the type
    ``families`` of :func:`~snapdp.data.engines.relational.exprs.cast_native`."""
    check_values(plan)
    used = plan.used_columns()
    alias = {name: f"{P}c{i}" for i, name in enumerate(used)}
    decl = declared_columns(plan)
    columns = [(n, families[n], decl[n].type, alias[n]) for n in used]
    s0 = exprs.cast_select(columns, source, f"{P}l")
    s1, qnames = _cells_and_quanta(plan, alias, decl, wide)
    ctes: list[tuple[str, exp.Select]] = [(f"{P}s0", s0), (f"{P}s1", s1)]
    final = f"{P}s1"
    if plan.unit is not None:
        final = _bounding(plan, ctes, qnames, wide)
    tree, layout = _aggregates(plan, final, wide)
    for name, body in ctes:
        tree = tree.with_(nodes.cte_alias(name), as_=body, copy=False)
    return Query(tree, layout, 32 if wide else 31)


def _scale(term: exp.Expression, stride: int) -> exp.Expression:
    return term if stride == 1 else exp.Mul(this=term, expression=_n(stride))


def _cells_and_quanta(
    plan: AggregatePlan, alias: dict[str, str], decl: Mapping[str, Column], wide: bool
) -> tuple[exp.Select, list[str]]:
    """``s1``: the cell index, the row filter, the quanta and the unit."""
    s1 = exp.select().from_(nodes.table(f"{P}s0"))
    where: list[exp.Expression] = []
    terms: list[exp.Expression] = []
    stride = plan.n_cells
    skip = 0
    if plan.joint is not None:  # groups from the data: one table of the observed tuples
        skip = len(plan.groupings) if not plan.joint else len(plan.joint[0])
        stride = plan.n_cells // max(1, len(plan.joint))
        s1 = _joint_join(plan, alias, s1, where, terms, stride)
    for gi, g in enumerate(plan.groupings):
        if gi < skip:
            continue
        stride //= g.n_cells
        if g.keys is None:
            # the tree or grid once, in the cell; the filter keeps the rows it puts in a bin
            # by the tree's first and last comparisons (Spark and DuckDB push a filter below
            # the projection, copying what it reads)
            index, keep = exprs.binned(g, exprs.column(alias[g.name]), decl[g.name].type == g.type)
            where.append(keep)
            terms.append(_scale(_p(index), stride))
            continue
        node = exprs.with_null_rule(g, exprs.column(alias[g.name]))
        rows = exprs.key_rows(g)
        if not rows:
            where.append(exp.false())
            continue
        k, kv, ki = f"{P}k{gi}", f"{P}kv{gi}", f"{P}ki{gi}"
        table = exp.Values(
            expressions=[exp.Tuple(expressions=[key, _n(i)]) for key, i in rows],
            alias=exp.TableAlias(
                this=exp.to_identifier(k), columns=[exp.to_identifier(kv), exp.to_identifier(ki)]
            ),
        )
        s1 = s1.join(table, on=exp.EQ(this=node, expression=exp.column(kv, table=k)), copy=False)
        terms.append(_scale(exp.column(ki, table=k), stride))
    if plan.where is not None:  # step 3: the row filter, on the cast values
        values = {name: exprs.column(alias[name]) for name in alias}
        where.append(exprs.predicate(plan.where, values, decl))
    cell: exp.Expression = _n(0)
    for i, term in enumerate(terms):
        cell = term if i == 0 else exp.Add(this=cell, expression=term)
    items: list[exp.Expr] = [exp.alias_(exp.Cast(this=cell, to=_t("BIGINT")), CELL)]
    qnames = [f"{P}q{j}" for j in range(len(plan.values))]
    for j, vc in enumerate(plan.values):
        qt = q_type(vc, wide)
        typed = decl[vc.column.name].type == vc.column.type
        q = exprs.quanta(vc, exprs.column(alias[vc.column.name]), qt, typed)
        items.append(exp.alias_(exp.Cast(this=q, to=_t(qt)), qnames[j]))
    if plan.unit is not None:
        items.append(exp.alias_(exprs.column(alias[plan.unit.name]), UNIT))
    s1 = s1.select(*items, copy=False)
    if where:
        s1 = s1.where(*where, copy=False)
    return s1, qnames


def _joint_join(
    plan: AggregatePlan,
    alias: dict[str, str],
    s1: exp.Select,
    where: list[exp.Expression],
    terms: list[exp.Expression],
    stride: int,
) -> exp.Select:
    """``s1`` joined to the table of ``plan.joint``'s tuples (their index times ``stride`` added
    to the cell); no tuple: no row is kept."""
    assert plan.joint is not None
    if not plan.joint:
        where.append(exp.false())
        return s1
    cols = plan.groupings[: len(plan.joint[0])]
    k = f"{P}kj"
    names = [f"{P}kv{j}" for j in range(len(cols))] + [f"{P}ki"]
    table = exp.Values(
        expressions=[
            exp.Tuple(
                expressions=[
                    *(exprs.typed_literal(c, v) for c, v in zip(cols, t, strict=True)),
                    _n(i),
                ]
            )
            for i, t in enumerate(plan.joint)
        ],
        alias=exp.TableAlias(
            this=exp.to_identifier(k), columns=[exp.to_identifier(n) for n in names]
        ),
    )
    on = [
        exp.EQ(
            this=exprs.with_null_rule(c, exprs.column(alias[c.name])),
            expression=exp.column(names[j], table=k),
        )
        for j, c in enumerate(cols)
    ]
    terms.append(_scale(exp.column(names[-1], table=k), stride))
    return s1.join(table, on=exp.and_(*on), copy=False)


def _bounding(
    plan: AggregatePlan, ctes: list[tuple[str, exp.Select]], qnames: list[str], wide: bool
) -> str:
    """Append the bounding CTEs (step 5); return the name of the bounded rows' relation."""
    cols = [UNIT, CELL, *qnames]
    kept = tuple(
        Kept(q, vc.lower_q - 1, vc.upper_q - vc.lower_q + 2, q_type(vc, wide))
        for q, vc in zip(qnames, plan.values, strict=True)
    )
    null_unit = exp.Is(this=_c(UNIT), expression=exp.Null())
    b0 = exp.select(*nodes.columns(cols)).from_(nodes.table(f"{P}s1"))
    ctes.append((f"{P}b0", b0.where(exp.Not(this=null_unit))))
    current = f"{P}b0"
    b = plan.bounds

    def top_rows(by: tuple[str, ...], n: int) -> exp.Select:
        rel = ranked(nodes.table(current), cols, plan, ROW_TAG, True, f"{P}rr", wide)
        spec = TopSpec(by, CELL, plan.n_cells, kept, n, f"{P}rr")
        top = TopRows(this=rel.subquery(f"{P}r", copy=False), spec=spec)
        return exp.select(*nodes.columns(cols)).from_(
            exp.Subquery(this=top, alias=exp.TableAlias(this=exp.to_identifier(f"{P}top")))
        )

    stages: list[tuple[str, int | None]] = [
        ("rows per group", b.max_rows_per_group),
        ("groups per unit", b.max_groups_per_unit),
        ("rows per unit", b.max_rows_per_unit),
    ]
    for step, (kind, n) in enumerate(stages, start=1):
        if n is None:
            continue
        if kind == "rows per group":
            body = top_rows((UNIT, CELL), n)
        elif kind == "rows per unit":
            body = top_rows((UNIT,), n)
        else:
            pair = nodes.columns((UNIT, CELL))
            cells = exp.select(*pair).distinct().from_(nodes.table(current)).subquery(f"{P}d")
            rel = ranked(cells, [UNIT, CELL], plan, GROUP_TAG, False, f"{P}gr", wide)
            spec = TopSpec((UNIT,), CELL, plan.n_cells, (), n, f"{P}gr", (CELL,))
            top = TopRows(this=rel.subquery(f"{P}r", copy=False), spec=spec)
            ctes.append(
                (
                    f"{P}h{step}",
                    exp.select(*nodes.columns((UNIT, CELL))).from_(
                        exp.Subquery(
                            this=top, alias=exp.TableAlias(this=exp.to_identifier(f"{P}top"))
                        )
                    ),
                )
            )
            everything = exp.select(nodes.star()).from_(nodes.table(current))
            body = nodes.semi_join(everything, f"{P}h{step}", (UNIT, CELL))
        ctes.append((f"{P}b{step}", body))
        current = f"{P}b{step}"
    if plan.null_units == "own":
        out = [CELL, *qnames]
        own = exp.select(*nodes.columns(out)).from_(nodes.table(f"{P}s1")).where(null_unit.copy())
        bounded = exp.select(*nodes.columns(out)).from_(nodes.table(current))
        ctes.append((f"{P}bz", exp.union(bounded, own, distinct=False)))  # type: ignore[arg-type]
        return f"{P}bz"
    return current


def _aggregates(plan: AggregatePlan, relation: str, wide: bool) -> tuple[exp.Select, list[str]]:
    """Step 7: per cell the rows and, per value column, the exact sum, the count and the sum of
    squares Σ(2q − L_q − U_q)², whole or as limbs (from the declared bounds only)."""
    items: list[exp.Expr] = [
        exp.alias_(_c(CELL), "_cell"),
        exp.alias_(exp.Count(this=exp.Star()), "_rows"),
    ]
    layout: list[str] = []

    def out(e: exp.Expression, name: str) -> None:
        items.append(exp.alias_(exp.Coalesce(this=e, expressions=[_n(0)]), name))

    for j, vc in enumerate(plan.values):
        q = _c(f"{P}q{j}")
        if wide:
            total: exp.Expression = exp.Cast(this=exp.Sum(this=q), to=_t("HUGEINT"))
        elif max(abs(vc.lower_q), abs(vc.upper_q)) < LONG_SUM_LIMIT:
            total = exp.Sum(this=q.copy())
        else:
            total = exp.Sum(this=exp.Cast(this=q.copy(), to=_t("HUGEINT")))
        out(total, f"_sum{j}")
        items.append(exp.alias_(exp.Count(this=q.copy()), f"_cnt{j}"))
        limbs = not wide or (vc.upper_q - vc.lower_q) >= 1 << 31
        layout.append("limbs" if vc.squares and limbs else "direct")
        if not vc.squares:
            continue
        centre = _n(vc.lower_q + vc.upper_q)
        if wide:
            twice = exp.Mul(this=_n(2), expression=exp.Cast(this=q.copy(), to=_t("HUGEINT")))
            c: exp.Expression = _p(exp.Sub(this=twice, expression=centre))
            if not limbs:
                out(exp.Sum(this=exp.Mul(this=c, expression=c.copy())), f"_sq{j}")
                continue
        else:
            c = exp.Sub(this=exp.Mul(this=q.copy(), expression=_n(2)), expression=centre)
        bits = 32 if wide else 31
        a = exp.Abs(this=c)
        hi, lo = _shr(a, bits), _and(a.copy(), (1 << bits) - 1)
        for name, x, y in (("hh", hi, hi), ("hl", hi, lo), ("ll", lo, lo)):
            term: exp.Expression = exp.Mul(this=x.copy(), expression=y.copy())
            if not wide:
                term = exp.Cast(this=term, to=_t("HUGEINT"))
            out(exp.Sum(this=term), f"_sq{j}_{name}")
    tree = exp.select(*items).from_(nodes.table(relation)).group_by(_c(CELL))
    return tree, layout
