"""The custom relational nodes of the bounding stages, and how each engine lowers them.

Two real differences between the engines are written as nodes of the shared tree:

* :class:`TopRows`: the ``n`` lowest-ranked rows of each group. DuckDB keeps them by one
  aggregate, ``arg_min`` (n = 1) or ``unnest(min_by(…, n))``, over the kept columns packed into
  one BIGINT or HUGEINT when the declared domain allows (a fixed-size state: no sort, little
  memory), else a struct. Spark keeps n = 1 by ``min_by`` over a packed long or a struct (its
  ``min_by`` takes no count) and n > 1 by a ``row_number`` window.
* :class:`Digest` and :class:`DigestLane`: a text unit's 128-bit digest and its two low 32-bit
  lanes (DuckDB ``md5_number``; Spark the hex digits of ``md5``, little-endian words).

A packed row is the digits of radix n_cells for the cell, then U_q − L_q + 2 per value column
(0 for a null quantum, q − L_q + 1 otherwise), most significant first.
"""

from __future__ import annotations

import functools
import math
from typing import Any, ClassVar

from msgspec import Struct
from sqlglot import exp

from snapdp.data.engines.base import RANK_MASK
from snapdp.data.engines.relational import nodes

__all__ = ["Digest", "DigestLane", "Kept", "TopRows", "TopSpec", "lower_duckdb", "lower_spark"]


class Kept(Struct, frozen=True):
    """A kept value column: its name, the digit offset L_q − 1, its radix and SQL type."""

    name: str
    offset: int
    radix: int
    type: str


class TopSpec(Struct, frozen=True):
    """What :class:`TopRows` keeps: per group of ``by``, the ``n`` rows lowest by ``rank`` (then
    ``order``), as the columns ``by`` + ``cell`` + ``values`` (``cell`` of radix ``cells``)."""

    by: tuple[str, ...]
    cell: str
    cells: int
    values: tuple[Kept, ...]
    n: int
    rank: str
    order: tuple[str, ...] = ()

    @property
    def out(self) -> list[str]:
        """The output columns, in order."""
        kept = [self.cell, *(v.name for v in self.values)]
        return [b for b in self.by if b not in kept] + kept

    def radix_product(self) -> int:
        return self.cells * math.prod(v.radix for v in self.values)


class TopRows(exp.Expression):
    """The relation ``this`` cut to ``spec``'s lowest-ranked rows per group (a subquery)."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "spec": True}


class Digest(exp.Expression):
    """The 128-bit digest of the text ``this`` (DuckDB: a number; Spark: 32 hex digits)."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True}


class DigestLane(exp.Expression):
    """The 32-bit lane ``index`` (0 or 1, little-endian) of the :class:`Digest` ``this``."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "index": True}


def node_column(name: str) -> exp.Column:
    """A column reference by ``name``."""
    return exp.column(name)


def node_int(x: int) -> exp.Expression:
    """The integer ``x`` as a literal (a negative one in parentheses)."""
    if x < 0:
        return exp.Paren(this=exp.Neg(this=exp.Literal.number(-x)))
    return exp.Literal.number(x)


def node_type(name: str) -> exp.DataType:
    """The SQL type ``name`` (written as DuckDB spells it; each dialect renders its own): a copy
    of the node parsed once per process (a tree takes a few dozen, of a handful of names)."""
    return _parsed_type(name).copy()


#: The type names these trees use, as sqlglot's DuckDB dialect reads them (without importing it:
#: docs/performance.md, "Latency"); tests/unit/data/engines/test_duckdb_dialect.py checks each.
_DUCKDB_NAMES: dict[str, str] = {
    "BIGINT": "BIGINT",
    "BOOLEAN": "BOOLEAN",
    "DATE": "DATE",
    "DOUBLE": "DOUBLE",
    "HUGEINT": "INT128",
    "INTEGER": "INT",
    "UBIGINT": "UBIGINT",
    "VARCHAR": "TEXT",
}


@functools.lru_cache(maxsize=64)
def _parsed_type(name: str) -> exp.DataType:
    if name in _DUCKDB_NAMES:
        return exp.DataType(this=exp.DataType.Type[_DUCKDB_NAMES[name]], nested=False)
    if name.startswith("DECIMAL("):
        return exp.DataType.build(name)  # read alike by every dialect
    return exp.DataType.build(name, dialect="duckdb")


_c, _n, _t = node_column, node_int, node_type


def _as(name: str, has: str, type_: str) -> exp.Expression:
    """The column ``name`` (of the SQL type ``has``) as ``type_``: cast only to another type."""
    return _c(name) if has == type_ else exp.Cast(this=_c(name), to=_t(type_))


def _packed(spec: TopSpec, type_: str) -> exp.Expression:
    out: exp.Expression = _as(spec.cell, "BIGINT", type_)
    for v in spec.values:
        digit = exp.Coalesce(
            this=exp.Sub(this=_as(v.name, v.type, type_), expression=_n(v.offset)),
            expressions=[_n(0)],
        )
        out = exp.Paren(
            this=exp.Add(this=exp.Mul(this=out, expression=_n(v.radix)), expression=digit)
        )
    return out


def _unpacked(spec: TopSpec, t: str) -> list[exp.Expr]:
    items: list[exp.Expr] = []
    divisor = 1
    for v in reversed(spec.values):
        digit = exp.Paren(
            this=exp.Mod(
                this=exp.Paren(this=exp.IntDiv(this=_c(t), expression=_n(divisor))),
                expression=_n(v.radix),
            )
        )
        value = exp.Case().when(
            exp.EQ(this=digit, expression=_n(0)),
            exp.Null(),
            copy=False,
        )
        value = value.else_(exp.Add(this=digit.copy(), expression=_n(v.offset)), copy=False)
        items.append(exp.alias_(exp.Cast(this=value, to=_t(v.type)), v.name))
        divisor *= v.radix
    last = exp.Cast(this=exp.IntDiv(this=_c(t), expression=_n(divisor)), to=_t("BIGINT"))
    items.append(exp.alias_(last, spec.cell))
    return items[::-1]


def _struct(spec: TopSpec) -> exp.Struct:
    names = [spec.cell, *(v.name for v in spec.values)]
    return exp.Struct(
        expressions=[exp.PropertyEQ(this=exp.to_identifier(n), expression=_c(n)) for n in names]
    )


def _by_aggregate(e: TopRows, type_: str | None, count: bool) -> exp.Select:
    """Per group one aggregate over the kept row packed into ``type_`` (None: a struct), then
    unpacked; with ``count``, the ``n`` lowest as a list, unnested."""
    spec: TopSpec = e.args["spec"]
    t = "_snapdp_t" if spec.values else spec.cell
    picked: exp.Expression
    if not spec.values:
        picked = _c(spec.cell)
    elif type_ is None:
        picked = _struct(spec)
    else:
        picked = _packed(spec, type_)
    agg: exp.Expression = exp.ArgMin(this=picked, expression=_c(spec.rank))
    if count:
        agg = exp.Unnest(
            expressions=[exp.ArgMin(this=picked, expression=_c(spec.rank), count=_n(spec.n))]
        )
    keys = [b for b in spec.by if b != t]  # without values the cell is the picked column
    # one copy of the ranked rows (the tree being rendered keeps its own); the builders below
    # add to the fresh selects in place
    inner = (
        exp.select(*nodes.columns(keys), exp.alias_(agg, t))
        .from_(e.this.copy(), copy=False)
        .group_by(*nodes.columns(spec.by), copy=False)
    )
    if not spec.values:
        return inner
    if type_ is None:
        names = [spec.cell, *(v.name for v in spec.values)]
        unpack = [
            exp.alias_(exp.Dot(this=_c(t), expression=exp.to_identifier(n)), n) for n in names
        ]
    else:
        unpack = _unpacked(spec, t)
    rest = [b for b in spec.by if b != spec.cell]
    return exp.select(*nodes.columns(rest), *unpack).from_(
        inner.subquery("_snapdp_p", copy=False), copy=False
    )


def lower_duckdb(gen: Any, e: TopRows) -> str:
    """DuckDB: one aggregate per group, no sort."""
    spec: TopSpec = e.args["spec"]
    total = spec.radix_product()
    type_ = "BIGINT" if total < 1 << 63 else "HUGEINT" if total < 1 << 126 else None
    return str(gen.sql(_by_aggregate(e, type_, spec.n > 1)))


def lower_spark(gen: Any, e: TopRows) -> str:
    """Spark: ``min_by`` over a packed long or a struct for n = 1, else a ``row_number`` window."""
    spec: TopSpec = e.args["spec"]
    if spec.n == 1:
        type_ = "BIGINT" if spec.radix_product() < 1 << 63 else None
        return str(gen.sql(_by_aggregate(e, type_, False)))
    window = exp.Window(
        this=exp.RowNumber(),
        partition_by=[_c(b) for b in spec.by],
        order=exp.Order(expressions=[exp.Ordered(this=_c(o)) for o in (spec.rank, *spec.order)]),
    )
    numbered = exp.select(nodes.star(), exp.alias_(window, "_snapdp_n")).from_(
        e.this.copy(), copy=False
    )
    kept = (
        exp.select(*nodes.columns(spec.out))
        .from_(numbered.subquery("_snapdp_w", copy=False), copy=False)
        .where(exp.LTE(this=_c("_snapdp_n"), expression=_n(spec.n)), copy=False)
    )
    return str(gen.sql(kept))


def duckdb_digest(gen: Any, e: Digest) -> str:
    return f"md5_number({gen.sql(e, 'this')})"


def spark_digest(gen: Any, e: Digest) -> str:
    return f"md5({gen.sql(e, 'this')})"


def duckdb_digest_lane(gen: Any, e: DigestLane) -> str:
    i = int(e.args["index"])
    return f"CAST((({gen.sql(e, 'this')}) >> {32 * i}) & {RANK_MASK} AS BIGINT)"


def spark_digest_lane(gen: Any, e: DigestLane) -> str:
    w = int(e.args["index"])
    d = gen.sql(e, "this")
    hexes = ", ".join(f"substring({d}, {8 * w + 2 * i + 1}, 2)" for i in (3, 2, 1, 0))
    return f"CAST(conv(concat({hexes}), 16, 10) AS BIGINT)"
