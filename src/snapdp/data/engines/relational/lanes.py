"""The lanes of the bounding ranks as SQL expressions (docs/data.md, "Contribution bounding"):
an integer's 32-bit lanes, and, for a plan that ranks by value (docs/data.md, "Privacy units"),
the join to tables of each cell's key lanes (:func:`~snapdp.data.engines.base.cell_lanes`)."""

from __future__ import annotations

import math

from sqlglot import exp

from snapdp.data.engines.base import (
    RANK_MASK,
    AggregatePlan,
    key_lanes,
    key_value_lanes,
    lane_count,
)
from snapdp.data.engines.relational import nodes
from snapdp.data.engines.relational.topn import node_column as _c
from snapdp.data.engines.relational.topn import node_int as _n
from snapdp.data.engines.relational.topn import node_type as _t

__all__ = ["CELL", "P", "by_value_lanes", "int_lanes_sql", "p_and", "p_paren", "p_shr", "p_xor"]

P = "_snapdp_"
CELL = f"{P}cell"


def p_paren(e: exp.Expression) -> exp.Paren:
    return exp.Paren(this=e)


def p_xor(a: exp.Expression, b: exp.Expression) -> exp.Paren:
    return p_paren(exp.BitwiseXor(this=a, expression=b))


def p_and(a: exp.Expression, b: int) -> exp.Paren:
    return p_paren(exp.BitwiseAnd(this=a, expression=_n(b)))


def p_shr(a: exp.Expression, bits: int) -> exp.Paren:
    return p_paren(exp.BitwiseRightShift(this=a, expression=_n(bits)))


def int_lanes_sql(value: exp.Expression, count: int) -> list[exp.Expression]:
    """The ``count`` 32-bit lanes of the non-negative integer ``value`` as BIGINTs."""
    if count == 1:
        return [exp.Cast(this=value, to=_t("BIGINT"))]
    return [
        exp.Cast(this=p_and(p_shr(value.copy(), 32 * i), RANK_MASK), to=_t("BIGINT"))
        for i in range(count)
    ]


def by_value_lanes(
    plan: AggregatePlan, relation: exp.Expression, carried: list[str]
) -> tuple[exp.Expression, list[exp.Expression]]:
    """``relation`` joined to tables of the lanes that stand for its cell when the plan ranks by
    value (:func:`~snapdp.data.engines.base.cell_lanes`), computed here so that every engine
    reads the same numbers: one table for the ``joint`` tuples (by tuple index), one per other
    ``by_value`` column (by key index); and those lanes (a declared column's: its own index)."""
    joined = exp.select(*nodes.columns(carried)).from_(relation)
    out: list[exp.Expression] = []
    width = 0 if plan.joint is None else len(plan.joint[0]) if plan.joint else len(plan.groupings)
    if plan.joint is not None and not plan.joint:
        return relation, [_n(0)]  # no cell: no row reaches the ranks
    stride = math.prod(g.n_cells for g in plan.groupings[width:])

    def join(name: str, index: exp.Expression, rows: list[list[int]]) -> None:
        nonlocal joined
        t, i = f"{P}v{name}", f"{P}vi{name}"
        lanes = [f"{P}vl{name}_{j}" for j in range(len(rows[0]))]
        table = exp.Values(
            expressions=[
                exp.Tuple(expressions=[_n(k), *(_n(x) for x in r)]) for k, r in enumerate(rows)
            ],
            alias=exp.TableAlias(
                this=exp.to_identifier(t), columns=[exp.to_identifier(n) for n in (i, *lanes)]
            ),
        )
        on = exp.EQ(this=index, expression=exp.column(i, table=t))
        joined = joined.select(*nodes.columns(lanes), copy=False).join(table, on=on, copy=False)
        out.extend(exp.Cast(this=_c(x), to=_t("BIGINT")) for x in lanes)

    if width:
        cols = plan.groupings[:width]
        rows = [
            [x for g, v in zip(cols, t, strict=True) for x in key_value_lanes(plan, g, v)]
            for t in plan.joint or ()
        ]
        index: exp.Expression = _c(CELL)
        join(
            "j",
            p_paren(exp.IntDiv(this=index, expression=_n(stride))) if stride > 1 else index,
            rows,
        )
    for gi, g in enumerate(plan.groupings[width:], start=width):
        stride //= g.n_cells
        index = _c(CELL)
        if stride > 1:
            index = p_paren(exp.IntDiv(this=index, expression=_n(stride)))
        if gi > 0:
            index = p_paren(exp.Mod(this=index, expression=_n(g.n_cells)))
        if g.name in plan.by_value and g.keys is not None:
            join(str(gi), index, [key_lanes(k) for k in g.keys])
        else:
            out += int_lanes_sql(index, lane_count(g.n_cells))
    return joined.subquery(f"{P}r"), out
