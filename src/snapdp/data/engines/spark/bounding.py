"""The Spark engine's contribution bounding (step 5): keyed-hash ranks and top-n per group.

Ranks are :func:`~snapdp.data.engines.base.mix_rank` in long arithmetic (every product below
2^63, so ANSI mode never raises), one projection per lane; a text unit's lanes come from the hex
digits of its ``md5``. Row bounds of 1 are ``min_by`` aggregates over the row packed into a long
(no sort of each unit's rows); larger row bounds and L0 use ``row_number``/``dense_rank`` windows.
"""

from __future__ import annotations

import math
from typing import Any

from snapdp.data.engines.base import (
    GROUP_TAG,
    RANK_MASK,
    RANK_MULTIPLIERS,
    UNIT_MULTIPLIER,
    AggregatePlan,
    chunk_width,
    key_words,
    lane_count,
    row_chunks,
    row_radices,
)

__all__ = ["packed_radices", "top_cells", "top_rows", "with_rank"]


# -- contribution bounding (step 5) ----------------------------------------------------------
def top_rows(df: Any, plan: AggregatePlan, by: list[str], n: int) -> Any:
    """The ``n`` lowest-ranked rows (rank ``_rr``) of each ``by`` group.

    For n = 1 one ``min_by`` aggregate (no sort of each unit's rows; it spills like any
    aggregate), whose state is the row packed into one long when the declared domain allows
    (:func:`packed_radices`; a fixed-width state keeps Spark's hash aggregate) or else a struct (a
    sort aggregate); for n > 1 a ``row_number`` window. Either keeps exactly ``n`` rows. Rows of
    equal rank text are the same row for the plan; rows whose ranks collide otherwise (about
    2^-61 per pair) are ordered arbitrarily, as the contract allows."""
    from pyspark.sql import Window
    from pyspark.sql import functions as sf

    if n > 1:
        w = Window.partitionBy(*by).orderBy("_rr")
        df = df.withColumn("_n", sf.row_number().over(w))
        return df.where(sf.col("_n") <= n).drop("_n")
    qnames = [f"_q{j}" for j in range(len(plan.values))]
    radices = packed_radices(plan)
    if radices is None:
        rest = ["_cell", *qnames, "_rr"]
        picked = df.groupBy(*by).agg(sf.min_by(sf.struct(*rest), sf.col("_rr")).alias("_t"))
        return picked.select("_u", *[sf.col("_t").getField(c).alias(c) for c in rest])
    packed = sf.col("_cell").cast("bigint")
    for q, vc, radix in zip(qnames, plan.values, radices[1:], strict=True):
        digit = sf.coalesce(sf.col(q) - sf.lit(vc.lower_q - 1), sf.lit(0))
        packed = packed * sf.lit(radix) + digit
    picked = df.groupBy(*by).agg(
        sf.min_by(packed, sf.col("_rr")).alias("_t"), sf.min("_rr").alias("_rr")
    )
    items = []
    divisor = 1
    for q, vc, radix in reversed(list(zip(qnames, plan.values, radices[1:], strict=True))):
        digit = sf.expr(f"(_t div {divisor}) % {radix}")
        value = sf.when(digit != 0, digit + sf.lit(vc.lower_q - 1)).cast("bigint")
        items.append(value.alias(q))
        divisor *= radix
    items.append(sf.expr(f"_t div {divisor}").cast("bigint").alias("_cell"))
    return picked.select("_u", *items[::-1], "_rr")


def packed_radices(plan: AggregatePlan) -> list[int] | None:
    """The digits of a packed row: n_cells, then U_q − L_q + 2 per value column (0 for a null
    quantum, q − L_q + 1 otherwise); None when their product reaches 2^63."""
    radices = [plan.n_cells, *(vc.upper_q - vc.lower_q + 2 for vc in plan.values)]
    return radices if math.prod(radices) < 1 << 63 else None


def top_cells(df: Any, plan: AggregatePlan, n: int) -> Any:
    """The rows of each unit's ``n`` lowest-ranked cells (L0; :func:`group_rank`).

    A window over each unit's rows, ordered by (rank, cell): rows of one cell share a dense rank
    and two cells never do, even if their ranks collide, so exactly ``n`` cells are kept."""
    from pyspark.sql import Window
    from pyspark.sql import functions as sf

    w = Window.partitionBy("_u").orderBy("_gr", "_cell")
    df = with_rank(df, plan, GROUP_TAG, False, "_gr")
    df = df.withColumn("_n", sf.dense_rank().over(w))
    return df.where(sf.col("_n") <= n).drop("_n", "_gr")


# -- quanta (step 6) and ranks (step 5) ------------------------------------------------------
def _lanes(value: Any, count: int) -> list[Any]:
    """The ``count`` 32-bit lanes of a non-negative long, least significant first."""
    from pyspark.sql import functions as sf

    if count == 1:
        return [value.cast("bigint")]
    return [sf.shiftright(value, 32 * i).bitwiseAND(sf.lit(RANK_MASK)) for i in range(count)]


def with_rank(df: Any, plan: AggregatePlan, tag: int, values: bool, name: str) -> Any:
    """``df`` (columns ``_u``, ``_cell`` and, with ``values``, ``_q<j>``) with a long column
    ``name`` = :func:`~snapdp.data.engines.base.mix_rank` of the row's lanes. One projection per
    lane (the accumulators are read as columns, so the plan grows linearly)."""
    from pyspark.sql import functions as sf

    mask = sf.lit(RANK_MASK)
    u = sf.col("_u")
    text_unit = plan.unit is not None and plan.unit.type == "text"
    if text_unit:  # the first 8 digest bytes as two little-endian 32-bit words
        df = df.withColumn("_um", sf.md5(u))
        units = [
            sf.conv(
                sf.concat(*(sf.substring("_um", 8 * w + 2 * i + 1, 2) for i in (3, 2, 1, 0))),
                16,
                10,
            ).cast("bigint")
            for w in (0, 1)
        ]
    else:
        units = [u.bitwiseAND(mask), sf.shiftright(u, 32).bitwiseAND(mask)]
    lanes: list[Any] = []
    if not values:
        lanes += _lanes(sf.col("_cell"), lane_count(plan.n_cells))
    else:  # every radix is below 2^62 here (the quanta bounds are below 2^61)
        radices = row_radices(plan)
        digits = [sf.col("_cell").cast("bigint")] + [
            sf.coalesce(sf.col(f"_q{j}") - sf.lit(vc.lower_q - 1), sf.lit(0)).cast("bigint")
            for j, vc in enumerate(plan.values)
        ]
        for chunk in row_chunks(plan):
            value = digits[chunk[0]]
            for i in chunk[1:]:
                value = value * sf.lit(radices[i]) + digits[i]
            lanes += _lanes(value, lane_count(chunk_width(plan, chunk)))
    # with_unit: one lane for the unit first
    unit = units[0].bitwiseXOR((units[1] * sf.lit(UNIT_MULTIPLIER)).bitwiseAND(mask))
    lanes.insert(0, unit)
    k0, k1, k2, k3 = key_words(plan.hash_key)
    ma, mb = (sf.lit(m) for m in RANK_MULTIPLIERS)
    n = len(lanes)
    pairs = [(x, x) for x in lanes] + [(sf.lit(k2 ^ n), sf.lit(k3 ^ n))]

    def fold(t: str) -> Any:
        return sf.col(t).bitwiseXOR(sf.shiftright(t, 32)).bitwiseAND(mask)

    xa, xb = pairs[0]
    df = df.withColumns(
        {
            "_ta": sf.lit(k0 ^ tag).cast("bigint").bitwiseXOR(xa) * ma,
            "_tb": sf.lit(k1 ^ tag).cast("bigint").bitwiseXOR(xb) * mb,
        }
    )
    for xa, xb in pairs[1:]:
        df = df.withColumns(
            {"_ta": fold("_ta").bitwiseXOR(xa) * ma, "_tb": fold("_tb").bitwiseXOR(xb) * mb}
        )
    rank = fold("_ta") * sf.lit(1 << 31) + sf.shiftright(fold("_tb"), 1)
    return df.withColumn(name, rank).drop("_ta", "_tb", *(["_um"] if text_unit else []))
