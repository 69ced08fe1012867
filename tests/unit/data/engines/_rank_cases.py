"""Random rows for the rank-parity tests (DuckDB, Spark): plans whose lanes span every width (one,
two and three lanes per value digit, more than 2^32 cells), integer units at the ends of int64,
text units with awkward characters, null quanta, and keys at the ends of their range."""

from __future__ import annotations

import random

from snapdp.data.engines.base import AggregatePlan, ValueColumn
from snapdp.data.model.schema import Column, ContributionBounds

KEYS = ("5f0e1d2c3b4a69788796a5b4c3d2e1f0", "0" * 32, "f" * 32)
_TEXT = "ab|0é€😀 '\"\\"
_WIDE = 1 << 17  # two groupings of 2^17 keys: 2^34 cells (two cell lanes)


def _value(lower: int, upper: int) -> ValueColumn:
    return ValueColumn(Column("v", "integer", lower=lower, upper=upper), 0, lower, upper)


def plans(extreme: int) -> list[AggregatePlan]:
    """Bounded plans over value columns: small (one lane), wide (two lanes) and ±``extreme``
    (two or three lanes); a text unit and an integer unit; 3 cells and 2^34 cells."""
    small = Column("g", "integer", keys=(0, 1, 2))
    big = (
        Column("a", "integer", keys=tuple(range(_WIDE))),
        Column("b", "integer", keys=tuple(range(_WIDE))),
    )
    values = (_value(-500, 1000), _value(-(1 << 40), 1 << 33), _value(-extreme, extreme))
    bounds = ContributionBounds(1)
    u_int = Column("u", "integer")
    return [
        AggregatePlan((small,), values, Column("u", "text"), bounds=bounds, hash_key=key)
        for key in KEYS
    ] + [
        AggregatePlan(big, values[:1], u_int, bounds=bounds, hash_key=KEYS[0]),
        AggregatePlan((small,), values[2:], u_int, bounds=bounds, hash_key=KEYS[2]),
        AggregatePlan((), (), Column("u", "text"), bounds=bounds, hash_key=KEYS[0]),
    ]


def rows(plan: AggregatePlan, n: int, seed: int) -> list[tuple[object, int, list[int | None]]]:
    """``n`` random (unit, cell, quanta) rows for ``plan``, the ends of every range included."""
    rng = random.Random(seed)
    out: list[tuple[object, int, list[int | None]]] = []
    for i in range(n):
        if plan.unit is not None and plan.unit.type == "integer":
            unit: object = rng.choice(
                [-(1 << 63), (1 << 63) - 1, 0, -1, 1 << 32, rng.randrange(-(1 << 63), 1 << 63)]
            )
        else:
            unit = "".join(rng.choice(_TEXT) for _ in range(rng.randrange(12)))
        cell = rng.choice([0, plan.n_cells - 1, rng.randrange(plan.n_cells)])
        quanta: list[int | None] = []
        for vc in plan.values:
            ends = [vc.lower_q, vc.upper_q, None, 0]
            quanta.append(rng.choice([*ends, rng.randint(vc.lower_q, vc.upper_q)]))
        out.append((unit, cell, quanta) if i else (unit, 0, [vc.lower_q for vc in plan.values]))
    return out
