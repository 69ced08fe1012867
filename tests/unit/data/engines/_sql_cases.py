"""Plans whose queries cover the relational tree's builders (issue 32): counts, sums and means
with their squares, keys, bins, every filter form, units with each bound and both null-unit
rules, text and integer units, keys read from the data (joint and by value), and the
observed-keys query; the source's columns typed natively or as text."""

from __future__ import annotations

import datetime as dt
from fractions import Fraction

from sqlglot import exp

from snapdp.data.engines.base import AggregatePlan, ValueColumn
from snapdp.data.engines.relational import observed
from snapdp.data.engines.relational.plan import aggregate_query
from snapdp.data.model.predicate import And, Compare, InList, IsNull, Not, Or
from snapdp.data.model.schema import Column, ContributionBounds

G = Column("g", "integer", keys=(0, 1, 2))
T = Column("t", "text", keys=("a", "b é", "c'd"))
B = Column("b", "decimal", bins=tuple(Fraction(e, 2) for e in range(0, 21)))
D = Column("d", "date", keys=(dt.date(2020, 1, 1), dt.date(2021, 6, 30)))
F = Column("f", "boolean", keys=(False, True))
X = ValueColumn(Column("x", "decimal", lower=Fraction(0), upper=Fraction(10)), 2, 0, 1000)
Y = ValueColumn(Column("y", "integer", lower=-(1 << 40), upper=1 << 33), 0, -(1 << 40), 1 << 33)
Z = ValueColumn(Column("z", "integer", lower=-(1 << 62), upper=1 << 62), 0, -(1 << 62), 1 << 62)
U = Column("u", "integer")
V = Column("v", "text")
KEY = "5f0e1d2c3b4a69788796a5b4c3d2e1f0"
WHERE = And(
    (
        Or((Compare("g", ">=", 1), InList("t", ("a", "c'd")))),
        Not(IsNull("x")),
        Compare("d", "<", dt.date(2021, 1, 1)),
    )
)


def plans() -> list[AggregatePlan]:
    every = ContributionBounds(4, 2, 3)
    return [
        AggregatePlan(),
        AggregatePlan(groupings=(G, T)),
        AggregatePlan(groupings=(B,), values=(X,)),
        AggregatePlan(groupings=(G, D, F), values=(X, Y, Z), hash_key=KEY),
        AggregatePlan(groupings=(G,), where=WHERE, where_columns=(T, Column("x", "decimal"), D)),
        AggregatePlan(
            groupings=(G,), values=(X,), unit=U, bounds=ContributionBounds(2), hash_key=KEY,
        ),
        AggregatePlan(groupings=(G, T), values=(Y,), unit=V, bounds=every, hash_key=KEY),
        AggregatePlan(
            groupings=(T,), values=(X,), unit=U, bounds=ContributionBounds(None, 1, 2),
            null_units="own", hash_key=KEY,
        ),
        AggregatePlan(
            groupings=(), values=(Z,), unit=V, bounds=ContributionBounds(1), hash_key=KEY,
        ),
        AggregatePlan(groupings=(T,), values=(X,), by_value=("t",)),
        AggregatePlan(groupings=(T, G), joint=(("a", 0), ("c'd", 2))),
        AggregatePlan(
            groupings=(T, G), values=(X,), unit=U, bounds=every, joint=(("a", 0),),
            by_value=("t",), hash_key=KEY,
        ),
    ]  # fmt: skip


NATIVE = {"g": "BIGINT", "t": "VARCHAR", "b": "DOUBLE", "d": "DATE", "f": "BOOLEAN",
          "x": "DOUBLE", "y": "BIGINT", "z": "BIGINT", "u": "BIGINT", "v": "VARCHAR"}  # fmt: skip


def trees() -> list[exp.Expression]:
    """Every plan's query over a native source (wide sums, as DuckDB's, and narrow, as Spark's)
    and over an all-text source (wide), and the observed-keys query with and without a filter."""
    out: list[exp.Expression] = []
    for families, widths in ((NATIVE, (True, False)), (dict.fromkeys(NATIVE, "text"), (True,))):
        fam = {k: _family(v) for k, v in families.items()}
        for plan in plans():
            for wide in widths:
                out.append(aggregate_query(plan, exp.Var(this="src"), fam, wide=wide).tree)
        for where in (None, WHERE):
            columns = (T, G, D)
            wcols = (Column("x", "decimal"),) if where is not None else ()
            out.append(observed.observed_query(columns, where, wcols, exp.Var(this="src"), fam))
    return out


def _family(t: str) -> str:
    from snapdp.data.engines.duckdb.sources import source_family

    return "text" if t == "text" else source_family(t)
