"""The engine contract's expressions as sqlglot nodes, written once for both engines.

Each function returns a node of the tree that :mod:`~snapdp.data.engines.relational.dialects`
renders for DuckDB or for Spark (docs/data.md, "The engine contract"):

* casts (base step 2): text by the contract's regular-expression gates, ``TRY_CAST`` only after a
  gate (so neither engine's laxer parser decides: ``'1_000'``, ``'infinity'``, ``' 5'``); native
  types by their family (``int``, ``float``, ``fixed``, ``bool``, ``date``, ``text``, ``bytes``);
* typed literals: integers exact, decimals as the double nearest the value;
* the row filter (SQL's three-valued logic, as :func:`snapdp.data.model.predicate.evaluate`);
* keys: a typed (key, index) row per declared key, the first of equal doubles winning;
* bins: exact arithmetic over an evenly spaced grid of edges (:mod:`.grid`), else a comparison tree
  of fixed depth (:func:`~snapdp.data.engines.base.bin_tree`): every non-null value does the
  same work wherever it lies (docs/data.md, "Run time");
* quanta (base step 6): clamp, round half to even, clamp to [L_q, U_q]; a null takes ``impute_q``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction

from sqlglot import exp

from snapdp.data.engines.base import INT64_MAX, INT64_MIN, BinTree, ValueColumn, bin_edges, bin_tree
from snapdp.data.engines.relational.builders import and_ as _and
from snapdp.data.engines.relational.builders import case as _case
from snapdp.data.engines.relational.builders import cast as _cast
from snapdp.data.engines.relational.builders import (
    column,
    double,
    nearest_double,
    null,
    sql_type,
    typed_literal,
)
from snapdp.data.engines.relational.builders import is_null as _is_null
from snapdp.data.engines.relational.builders import not_null as _not_null
from snapdp.data.engines.relational.builders import num as _num
from snapdp.data.engines.relational.builders import try_cast as _try_cast
from snapdp.data.engines.relational.dialects import BytesText, CellText, FullMatch, RoundHalfEven
from snapdp.data.engines.relational.grid import grid_index
from snapdp.data.engines.relational.topn import node_type
from snapdp.data.model.predicate import And, Compare, InList, IsNull, Not, Predicate
from snapdp.data.model.schema import Column
from snapdp.errors import ParameterError

__all__ = [
    "DECIMAL_RE",
    "bin_index",
    "bin_range",
    "cast_native",
    "cast_select",
    "cast_text",
    "cell_index",
    "column",
    "key_rows",
    "null",
    "predicate",
    "quanta",
    "reads",
    "sql_type",
    "tree_index",
    "typed_after_rule",
    "typed_literal",
]

DECIMAL_RE = r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?"
INTEGER_RE = r"[+-]?[0-9]+"
DATE_RE = r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
_TRUE = ("true", "t", "yes", "1")
_FALSE = ("false", "f", "no", "0")
_TWO63 = 1 << 63
_MAX_DOUBLE = "1.7976931348623157e308"
#: stands for a part of a cast that reads the source (:func:`cast_text`)
Let = Callable[[exp.Expression], exp.Expression]
_COMPARE = {"=": exp.EQ, "<>": exp.NEQ, "<": exp.LT, "<=": exp.LTE, ">": exp.GT, ">=": exp.GTE}


# -- casts (step 2) --------------------------------------------------------------------------
def _finite(d: exp.Expression) -> exp.Expression:
    """The double ``d`` when finite, else null (NaN compares above every number in both engines)."""
    return _case((exp.LTE(this=exp.Abs(this=d), expression=_num(_MAX_DOUBLE)), d.copy()))


def _integral(d: exp.Expression) -> exp.Expression:
    """The double ``d`` as a BIGINT when integral with |d| < 2^63, else null (NaN, ±inf included).
    Either engine's cast of a double in range (DuckDB rounds, Spark truncates) gives back ``d``
    exactly when ``d`` is integral."""
    small = _case((exp.LT(this=exp.Abs(this=d), expression=double(float(_TWO63))), d.copy()))
    as_long = _cast(small, "BIGINT")
    return _case((exp.EQ(this=_cast(as_long.copy(), "DOUBLE"), expression=small.copy()), as_long))


def _inline(e: exp.Expression) -> exp.Expression:
    return e


def cast_text(x: exp.Expression, kind: str, let: Let = _inline) -> exp.Expression:
    """The text ``x`` (null when empty) cast to ``kind`` by the contract's gates (step 2).

    ``let`` takes the one part that reads the source (the cell's text, trimmed for every kind
    but ``text``) and returns what stands for it: itself (the default: one expression), or a
    reference to it computed once below (:func:`cast_select`), which every gate then reads."""
    if kind == "text":
        return let(x)
    t = let(exp.Trim(this=x, expression=exp.Literal.string(" ")))

    def full(pattern: str) -> FullMatch:
        return FullMatch(this=t.copy(), pattern=exp.Literal.string(pattern))

    if kind == "integer":
        as_int = _try_cast(t.copy(), "BIGINT")
        return _case(
            (_and(full(INTEGER_RE), _not_null(as_int.copy())), as_int),
            (full(DECIMAL_RE), _integral(_try_cast(t.copy(), "DOUBLE"))),
        )
    if kind == "decimal":
        return _case((full(DECIMAL_RE), _finite(_try_cast(t.copy(), "DOUBLE"))))
    if kind == "boolean":
        low = exp.Lower(this=t)

        def among(words: tuple[str, ...]) -> exp.In:
            return exp.In(this=low.copy(), expressions=[exp.Literal.string(w) for w in words])

        return _case((among(_TRUE), exp.true()), (among(_FALSE), exp.false()))
    if kind == "date":
        year = exp.Substring(this=t.copy(), start=_num(1), length=_num(4))
        return _case(
            (
                _and(full(DATE_RE), exp.NEQ(this=year, expression=exp.Literal.string("0000"))),
                _try_cast(t.copy(), "DATE"),
            )
        )
    raise ParameterError(f"unknown column type {kind!r}", parameter="type")


_NATIVE = {
    ("int", "integer"), ("int", "decimal"), ("int", "text"), ("float", "integer"),
    ("float", "decimal"), ("fixed", "integer"), ("fixed", "decimal"), ("bool", "boolean"),
    ("date", "date"),
}  # fmt: skip


def reads(family: str, kind: str) -> bool:
    """Whether :func:`cast_native` can give a value of ``kind`` from a source column of type
    ``family``; when not, every cell of the column is null, whatever it holds (a Parquet BLOB,
    bytes without the UTF-8 annotation, declared text; a DATE declared integer)."""
    return family in ("text", "bytes") or (family, kind) in _NATIVE


def cast_native(c: exp.Expression, family: str, kind: str, let: Let = _inline) -> exp.Expression:
    """The source column ``c`` of a type ``family`` cast to ``kind`` by the contract's rules.

    Families: ``text`` (an empty cell is null), ``bytes`` (text held as bytes: what is not UTF-8
    is null; DuckDB only), ``int``, ``float``, ``fixed`` (a native DECIMAL(p, s): exact integers,
    decimals as doubles), ``bool``, ``date``; anything else casts to null. ``let``: as for
    :func:`cast_text` (a native column: the column itself; a null cast reads nothing)."""
    if family == "bytes":
        return cast_text(BytesText(this=c), kind, let)
    if family == "text":
        return cast_text(CellText(this=c), kind, let)
    if not reads(family, kind):
        return null(kind)
    c = let(c)
    if family == "int":
        if kind == "integer":
            return _try_cast(c, "BIGINT")
        if kind == "decimal":
            return _cast(c, "DOUBLE")
        return _cast(c, "VARCHAR")
    if family == "float":
        if kind == "integer":
            return _integral(_cast(c, "DOUBLE"))
        return _finite(_cast(c, "DOUBLE"))
    if family == "fixed":
        if kind == "integer":
            exact = exp.EQ(this=c, expression=exp.Floor(this=c.copy()))
            small = exp.LT(this=exp.Abs(this=c.copy()), expression=_num(_TWO63))
            return _case((_and(exact, small), _cast(c.copy(), "BIGINT")))
        return _cast(c, "DOUBLE")
    return c


def cast_select(
    columns: Sequence[tuple[str, str, str, str]], source: exp.Expression, lane: str
) -> exp.Select:
    """``SELECT cast AS alias, … FROM source``: per (source name, family, kind, alias) of
    ``columns``, the column cast by :func:`cast_native`. When a cast reads its cell's text more
    than once (a text cell cast to any type but text: a CSV integer cell's trimmed text feeds
    its gates and casts ten times), the part of each cast that reads the source is computed
    once per row in an inner projection, under the internal name ``lane`` + i, and every cast
    reads those names: no source column name reaches the outer projection. No column: the rows
    alone (``lane`` + ``one``)."""
    if not columns:
        return exp.select(exp.alias_(_num(1), f"{lane}one")).from_(source)
    inner: list[exp.Expr] = []
    casts: list[exp.Expr] = []
    reads = 0
    for i, (name, family, kind, alias) in enumerate(columns):
        lane_name = f"{lane}{i}"

        def let(e: exp.Expression, lane_name: str = lane_name) -> exp.Expression:
            inner.append(exp.alias_(e, lane_name))
            return column(lane_name)

        cast = cast_native(column(name), family, kind, let)
        if inner and inner[-1].alias == lane_name and not isinstance(inner[-1].this, exp.Column):
            reads = max(reads, sum(1 for c in cast.find_all(exp.Column) if c.name == lane_name))
        casts.append(exp.alias_(cast, alias))
    if reads <= 1:  # no text read twice: one projection, as cast_native writes it
        flat = [exp.alias_(cast_native(column(n), f, k), a) for n, f, k, a in columns]
        return exp.select(*flat).from_(source)
    lanes = exp.select(*inner).from_(source).subquery(f"{lane}s", copy=False)
    return exp.select(*casts).from_(lanes, copy=False)


# -- keys and bins (step 3) ------------------------------------------------------------------
def key_rows(col: Column) -> list[tuple[exp.Expression, int]]:
    """(typed key, index) per key; a key no cell can equal is left out (an integer past int64,
    a decimal whose nearest double is infinite). Keys of a decimal column with the same nearest
    double go to the first of them (one cell per row)."""
    assert col.keys is not None
    rows: list[tuple[exp.Expression, int]] = []
    seen: set[float] = set()
    for i, key in enumerate(col.keys):
        if col.type == "integer":
            assert isinstance(key, int)
            if not INT64_MIN <= key <= INT64_MAX:
                continue
        if col.type == "decimal":
            assert isinstance(key, (int, Fraction))
            d = nearest_double(key)
            if math.isinf(d) or d in seen:
                continue
            seen.add(d)
        rows.append((typed_literal(col, key), i))
    return rows


def keys_values(col: Column, names: tuple[str, str]) -> exp.Expression | None:
    """The keys as an inline table ``(VALUES (key, index), …) AS k(names)``; None without keys."""
    rows = key_rows(col)
    if not rows:
        return None
    tuples = [exp.Tuple(expressions=[key, _num(i)]) for key, i in rows]
    alias = exp.TableAlias(
        this=exp.to_identifier(f"{names[0]}t", quoted=True),
        columns=[exp.to_identifier(n, quoted=True) for n in names],
    )
    return exp.Values(expressions=tuples, alias=alias)


def bin_index(col: Column, value: exp.Expression, typed: bool = True) -> exp.Expression:
    """The bin index of ``value`` (null outside every bin or for a null) by the contract's
    comparison (:func:`~snapdp.data.engines.base.bin_edges`): an integer column exactly against
    integer edges (an edge past int64 compared with the end of int64: the same truth value for
    every long), a decimal one as a double against the double nearest each edge. ``typed``:
    ``value`` is already of the column's SQL type (BIGINT, DOUBLE; :func:`typed_after_rule`),
    else it is cast to it first.

    Edges that are mostly an evenly spaced grid (a quantile's leaves, ``0, 10, 20, …``; for a
    decimal column a dyadic one) take exact arithmetic (:mod:`.grid`); others a nested CASE of
    fixed depth.
    Either way every non-null value does the same work wherever it lies (docs/data.md, "Run
    time"), and the arithmetic keeps the query small: DuckDB plans the tree in time growing with
    its size, and copies the cast value into each of its comparisons."""
    fast = grid_index(col, value, typed)
    return fast if fast is not None else tree_index(col, value, typed)


def tree_index(col: Column, value: exp.Expression, typed: bool = True) -> exp.Expression:
    """:func:`bin_index` as a nested CASE of fixed depth
    (:func:`~snapdp.data.engines.base.bin_tree`), whatever the edges: every non-null value makes
    the same number of comparisons. Each compares ``value`` itself (cast only when not
    ``typed``) with a literal: an integer edge as a bare number (a long compares exactly with
    it in both engines; the end of int64 typed), a decimal one as its double."""
    below = _below(col, value, typed)
    return _case((_not_null(value.copy()), _tree(bin_tree(len(below)), below)))


def bin_range(col: Column, value: exp.Expression, typed: bool = True) -> exp.Expression:
    """Whether :func:`bin_index` of ``value`` is not null: e₀ ≤ v < e_last by the very
    comparisons of the tree (null for a null value). The tree and the grid give a bin exactly
    for such values, so a filter on the bin's presence needs neither (two comparisons)."""
    below = _below(col, value, typed)
    return exp.Paren(this=_and(exp.Not(this=exp.Paren(this=below[0])), below[-1]))


def _below(col: Column, value: exp.Expression, typed: bool) -> list[exp.Expression]:
    """Per edge e_j of ``col``, the comparison v < e_j of :func:`tree_index` (an integer edge
    past int64 against the end of int64: the same truth value for every long)."""
    edges = bin_edges(col)
    below: list[exp.Expression] = []
    if col.type == "integer":
        v = value if typed else _cast(value, "BIGINT")
        for e in edges:
            assert isinstance(e, int)
            if e > INT64_MAX:
                below.append(exp.LTE(this=v.copy(), expression=_num(INT64_MAX)))
            elif e <= INT64_MIN:
                below.append(exp.LT(this=v.copy(), expression=_cast(_num(INT64_MIN), "BIGINT")))
            else:
                below.append(exp.LT(this=v.copy(), expression=_num(e)))
    else:
        v = value if typed else _cast(value, "DOUBLE")
        below = [exp.LT(this=v.copy(), expression=double(float(e))) for e in edges]
    return below


def _tree(node: BinTree, below: list[exp.Expression]) -> exp.Expression:
    if node is None:
        return _cast(exp.Null(), "INTEGER")
    if isinstance(node, int):
        return _num(node)
    j, left, right = node
    return exp.Paren(this=_case((below[j].copy(), _tree(left, below)), default=_tree(right, below)))


def with_null_rule(col: Column, value: exp.Expression) -> exp.Expression:
    """``value`` after ``col``'s null rule (an imputed null takes the declared value)."""
    if col.nulls.action == "impute":
        return exp.Coalesce(this=value, expressions=[typed_literal(col, col.nulls.value)])
    return value


def typed_after_rule(col: Column) -> bool:
    """Whether a cast value of ``col`` keeps its SQL type after the null rule: always, but for
    an integer column imputing a value past int64 (its literal is 128-bit)."""
    if col.type != "integer" or col.nulls.action != "impute":
        return True
    value = col.nulls.value
    assert isinstance(value, int)
    return INT64_MIN <= value <= INT64_MAX


def binned(
    col: Column, value: exp.Expression, typed: bool = True
) -> tuple[exp.Expression, exp.Expression]:
    """The bin index of the cast ``value`` of a binned ``col`` after its null rule, and the
    condition that it has one (:func:`bin_index`, :func:`bin_range`; ``typed``: ``value`` is of
    the column's SQL type). An integer column imputing a value past int64 compares the long
    itself, and a null takes the imputed value's bin, computed here exactly (public): casting
    the 128-bit imputed literal back to a long failed exactly when the data held a null."""
    if typed_after_rule(col):
        value = with_null_rule(col, value)
        return bin_index(col, value, typed), bin_range(col, value.copy(), typed)
    index, keep = bin_index(col, value, typed), bin_range(col, value.copy(), typed)
    j = _bin_of(col, col.nulls.value)
    if j is None:  # a null row falls in no bin: dropped, as the null itself is
        return index, keep
    return (
        _case((_is_null(value.copy()), _num(j)), default=index),
        exp.Or(this=_is_null(value.copy()), expression=keep),
    )


def _bin_of(col: Column, x: object) -> int | None:
    """The bin of the integer ``x`` by the contract's comparison (None: in no bin)."""
    assert isinstance(x, int)
    edges = bin_edges(col)
    count = sum(1 for e in edges if e <= x)  # the edges at or below x: bins [e_i, e_i+1)
    return count - 1 if 1 <= count <= len(edges) - 1 else None


def cell_index(col: Column, value: exp.Expression) -> exp.Expression:
    """The index of the cast ``value`` among ``col``'s keys or bins after its null rule (null:
    the row is dropped from groupings on the column), as one expression (the engines join a keys
    table instead, with the same result)."""
    if col.bins is not None:
        return binned(col, value)[0]
    value = with_null_rule(col, value)
    rows = key_rows(col)
    if not rows:
        return _cast(exp.Null(), "BIGINT")
    return _case(*((exp.EQ(this=value.copy(), expression=key), _num(i)) for key, i in rows))


# -- quanta (step 6) -----------------------------------------------------------------------
def quanta(
    vc: ValueColumn, value: exp.Expression, q_type: str, typed: bool = True
) -> exp.Expression:
    """The quanta of the cast ``value`` (``typed``: of the column's SQL type, so a decimal
    column's is not cast to DOUBLE again) as ``q_type``:
    q = clamp(round_half_even(clamp(v, lo, hi)·10^d), L_q, U_q) with lo = ⌊L_q/10^d⌋ − 1 and
    hi = ⌈U_q/10^d⌉ + 1 as doubles (the coarse clamp only keeps the conversion in range; the
    exact clamp is the integer one). A null takes ``impute_q`` (or stays null). LEAST/GREATEST
    skip nulls, so they only see non-null values."""
    scale: int = 10**vc.decimals
    lo = float(vc.lower_q // scale - 1)
    hi = float(-(-vc.upper_q // scale) + 1)
    v = value.copy() if typed and vc.column.type == "decimal" else _cast(value.copy(), "DOUBLE")
    y: exp.Expression = exp.Paren(
        this=exp.Least(
            ignore_nulls=True,
            this=exp.Greatest(ignore_nulls=True, this=v, expressions=[double(lo)]),
            expressions=[double(hi)],
        )
    )
    if scale != 1:  # a double times 1.0 is itself
        y = exp.Mul(this=y, expression=double(float(scale)))
    q = exp.Least(
        ignore_nulls=True,
        this=exp.Greatest(
            ignore_nulls=True,
            this=RoundHalfEven(this=y, to=node_type(q_type)),
            expressions=[_num(vc.lower_q)],
        ),
        expressions=[_num(vc.upper_q)],
    )
    missing: exp.Expression = exp.Null() if vc.impute_q is None else _num(int(vc.impute_q))
    return _case((_is_null(value.copy()), missing), default=q)


# -- the row filter (step 3) -----------------------------------------------------------------
def predicate(
    p: Predicate, values: Mapping[str, exp.Expression], decl: Mapping[str, Column]
) -> exp.Expression:
    """The row filter over the cast ``values`` (SQL's three-valued logic), fully parenthesised."""
    if isinstance(p, Compare):
        node = _COMPARE[p.op](
            this=values[p.column].copy(), expression=typed_literal(decl[p.column], p.value)
        )
        return exp.Paren(this=node)
    if isinstance(p, InList):
        items = [typed_literal(decl[p.column], v) for v in p.values]
        return exp.Paren(this=exp.In(this=values[p.column].copy(), expressions=items))
    if isinstance(p, IsNull):
        return exp.Paren(this=_is_null(values[p.column].copy()))
    if isinstance(p, Not):
        return exp.Paren(this=exp.Not(this=predicate(p.term, values, decl)))
    kind = exp.And if isinstance(p, And) else exp.Or
    terms = [predicate(t, values, decl) for t in p.terms]
    out = terms[0]
    for t in terms[1:]:
        out = kind(this=out, expression=t)
    return exp.Paren(this=out)
