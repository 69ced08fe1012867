r"""The engine contract: exact per-cell aggregates of a declared table (DESIGN §8; docs/data.md).

An engine is the only code that sees the data. Given an :class:`AggregatePlan` (built from the
public declaration and the query, never from the data) it computes, for every cell of the
grouping (the cross product of the grouping columns' declared keys or bins, row-major, the last
grouping column varying fastest; one cell when ungrouped), exact integer aggregates. Every engine
follows the same steps, so that all of them return the same numbers for the same declaration and
``hash_key`` (tested against the pure-Python oracle in ``tests/data_oracle.py``):

1. **Read.** A CSV file is read one record per line, every cell as text (encoding, delimiter and
   header from :class:`~snapdp.data.model.schema.CsvOptions`; docs/data.md, "CSV input"):

   - the file is split into lines at LF (``\n``) only, the text after the last LF being a line
     too; one trailing CR (``\r``) is removed from each line (a CR anywhere else is data); a
     line with no byte above 0x20 is blank and no record; in UTF-8 a byte-order mark at the
     start of a line is removed;
   - each line is decoded on its own (utf-8 or latin-1) and split on its own at the delimiter
     into fields, each either quoted — ``"`` … ``"`` holding anything, ``""`` for a quote — or
     unquoted, holding neither the delimiter nor ``"``; an empty field is null;
   - a line longer than ``max_line_bytes`` (its LF not counted) is no record, read past
     without being held in memory;
   - a line that does not decode, does not split that way, or splits into another number of
     fields than its file's columns is no record, and changes no other line;
   - the header is the first non-blank line of each file (with ``header``), parsed the same way,
     and names that file's columns: the files of a pattern are read by name (null in a column
     a file's header lacks); without a header the columns are declared
     (``CsvOptions.column_names``) and every non-blank line is a candidate record, the first
     one too.

   Parquet files/folders and DataFrames keep their native types. Only a source that cannot be
   opened or parsed as a whole (a file that is empty or has no header line, a header that does
   not decode or parse) raises, naming the file and the kind of failure, never its content.
2. **Cast** every used column to its declared type with a cast that cannot fail (what is not a
   value of the type becomes null). An empty CSV cell is null. From text t (trimmed of spaces):

   - integer: t matching ``[+-]?[0-9]+`` within int64 is that integer; else t matching the decimal
     pattern ``[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?`` whose double d is finite,
     integral and |d| < 2^63 is int(d) ("3.0" and "1e3" are integers, "2.5" is null);
   - decimal: t matching the decimal pattern, as the correctly rounded double, if finite;
   - text: the cell as read (not trimmed);
   - boolean: lower(t) in true/t/yes/1 or false/f/no/0;
   - date: t matching ``[0-9]{4}-[0-9]{2}-[0-9]{2}`` that is a valid date.

   From native types: integers are kept (integer, decimal as a double); doubles that are finite
   (and, for integer, integral with |d| < 2^63) are kept, NaN and ±inf are null; fixed-point
   decimals (Parquet/Arrow DECIMAL) are kept for integer when integral and within int64, and for
   decimal as the nearest double; booleans are
   kept only for boolean; dates only for date; strings follow the text rules above; anything else
   is null, except that text takes integers as their decimal digits. A privacy unit column is
   declared integer or text (text by default); its value enters the ranks of step 5 as two
   32-bit lanes (:func:`unit_lanes`).
3. **Filter.** With a row filter (``where``, a :mod:`snapdp.data.model.predicate` over the cast
   values of ``where_columns``, before any null rule), a row for which it is not true is
   dropped (SQL's three-valued logic; :func:`snapdp.data.model.predicate.evaluate` is the
   definition).
   Cells. A grouping column's null follows its null rule (drop the row, or impute a declared
   key); a value that is not a declared key, or lies outside every bin, drops the row. The cell
   index is the row-major index over the grouping columns. Bins ([eᵢ, eᵢ₊₁)) compare exactly
   for an integer column (the integer v against each rational edge: v >= e ⟺ v >= ⌈e⌉, so
   values near ±2^63 are never rounded across an edge); a decimal column's value (a double) is
   compared with the double nearest each edge (an edge beyond the doubles' range as ±inf). See
   :func:`bin_edges`.
4. **Units.** Rows whose privacy unit is null are dropped, or (``null_units="own"``) each is its
   own unit and skips step 5 (one row meets every bound).
5. **Contribution bounding**, looking only at each unit's own rows, by keyed-hash ranks
   (:func:`row_rank`, :func:`group_rank`, with the release's fresh ``hash_key``): keep the
   ``max_rows_per_group`` (L∞) lowest-ranked rows of each (unit, cell); then the
   ``max_groups_per_unit`` (L0) lowest-ranked cells of each unit; then the ``max_rows_per_unit``
   (k) lowest-ranked rows of each unit. A bound that is None is skipped. Each stage keeps exactly
   its bound (or fewer, when a unit has fewer). A rank is :func:`mix_rank` (64-bit integer
   arithmetic, every product below 2^63) of the row's 32-bit lanes: those of the cell index and
   the value digits (0 for a null quantum, q − L_q + 1 otherwise) packed in mixed radix, after
   one lane for the unit (:func:`row_lanes`; with ``by_value``, :func:`cell_lanes`); how many
   lanes each takes follows from the plan (n_cells, U_q − L_q), never from the data. Rows with
   equal lanes are identical for the plan, so which of them is kept does not matter; different
   rows or cells whose 63-bit ranks collide (probability about 2^-62 per pair for a random key)
   are ordered arbitrarily (Spark's L0 by (rank, cell)), so engines may then keep different
   ones, each within the bound.
6. **Values** (computed before step 5, whose row ranks use them). Each value column's cast
   value v (a double) becomes integer quanta
   q = clamp(round_half_even(clamp(v, L−1, U+1)·10^d), L_q, U_q) (the coarse clamp only keeps the
   conversion in range; see :mod:`snapdp.data.statistics.sensitivity`); a null follows the
   column's null rule (``impute_q``: that many quanta; None: the value is left out of this
   column's sums and counts, the row still counts as a row).
7. **Aggregate** per cell: the number of rows; per value column Σq, the number of non-null q, and
   (when ``squares``) Σ(2q − L_q − U_q)² — all exact integers (128-bit or arbitrary precision; an
   engine never rounds a sum).

Nothing here raises, warns or logs about what the data holds (DESIGN §8.1).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import Protocol, TypeAlias, runtime_checkable

import numpy as np
import numpy.typing as npt
from msgspec import Struct, field

from snapdp.data.model.keys import Key
from snapdp.data.model.observed import joint_cells
from snapdp.data.model.predicate import Predicate
from snapdp.data.model.schema import Column, ContributionBounds
from snapdp.errors import ParameterError

__all__ = [
    "UNIT_MULTIPLIER",
    "AggregatePlan",
    "Aggregates",
    "BinTree",
    "Engine",
    "ExecutorNoiseEngine",
    "NoiseRequest",
    "ValueColumn",
    "bin_edges",
    "bin_tree",
    "cell_lanes",
    "group_rank",
    "int_at_least",
    "int_below",
    "key_lanes",
    "key_value_lanes",
    "key_words",
    "lane_count",
    "mix_rank",
    "row_chunks",
    "row_lanes",
    "row_rank",
    "unit_lanes",
    "with_unit",
]


class ValueColumn(Struct, frozen=True):
    """One value column: cast to ``column.type``, turned into quanta of 10^-``decimals`` clamped to
    [``lower_q``, ``upper_q``]; nulls imputed as ``impute_q`` quanta or left out (None)."""

    column: Column
    decimals: int
    lower_q: int
    upper_q: int
    impute_q: int | None = None
    squares: bool = False

    def __post_init__(self) -> None:
        # engines pack quanta into digits and size their sums from the bounds: a value outside
        # [lower_q, upper_q] would corrupt both, so the plan itself must rule it out
        if self.lower_q > self.upper_q:
            raise ParameterError(
                f"column {self.column.name!r}: lower_q must not exceed upper_q", parameter="bounds"
            )
        if self.impute_q is not None and not self.lower_q <= self.impute_q <= self.upper_q:
            raise ParameterError(
                f"column {self.column.name!r}: impute_q must lie within [lower_q, upper_q]",
                parameter="impute",
            )


class AggregatePlan(Struct, frozen=True):
    """What to aggregate, from the declaration and the query only.

    ``groupings``: columns with declared keys or bins (their cross product is the cell set).
    ``values``: value columns. ``unit``: the privacy-unit column (None: each row is a unit and no
    bounding is done). ``hash_key``: 32 hex digits (four 32-bit key words, :func:`key_words`),
    fresh per release (from the release's random source), keying the ranks of step 5.
    ``where``: the row filter of step 3 (None: every row), over the declared ``where_columns``.
    ``joint``: when not None, the cells of the first ``len(t)`` groupings are these key tuples
    t, in this order, not the product of their keys (groups from the data, docs/sql.md): a row
    whose tuple is none of them is dropped.
    ``by_value``: the columns whose keys came from the data: ranks read key values (step 5).
    """

    groupings: tuple[Column, ...] = ()
    values: tuple[ValueColumn, ...] = ()
    unit: Column | None = None
    null_units: str = "drop"
    bounds: ContributionBounds = field(default_factory=ContributionBounds)
    hash_key: str = "0" * 32
    where: Predicate | None = None
    where_columns: tuple[Column, ...] = ()
    joint: tuple[tuple[Key, ...], ...] | None = None
    by_value: tuple[str, ...] = ()

    @property
    def n_cells(self) -> int:
        """The number of cells (1 when ungrouped)."""
        return joint_cells(self.groupings, self.joint)

    def used_columns(self) -> list[str]:
        """Every column the plan reads, once, in a stable order."""
        names = [g.name for g in self.groupings] + [v.column.name for v in self.values]
        if self.unit is not None:
            names.append(self.unit.name)
        names += [c.name for c in self.where_columns]
        return list(dict.fromkeys(names))


class Aggregates(Struct):
    """Exact aggregates per cell: lists of Python ints, aligned with the plan's cells and values."""

    rows: list[int]
    sums: list[list[int]] = field(default_factory=list)
    counts: list[list[int]] = field(default_factory=list)
    squares: list[list[int] | None] = field(default_factory=list)

    @classmethod
    def zeros(cls, plan: AggregatePlan) -> Aggregates:
        """All-zero aggregates for ``plan``, to fill in."""
        n = plan.n_cells
        return cls(
            [0] * n,
            [[0] * n for _ in plan.values],
            [[0] * n for _ in plan.values],
            [[0] * n if v.squares else None for v in plan.values],
        )


class Engine(Protocol):
    """Computes :class:`Aggregates` for a plan over one table (see the module docstring)."""

    def column_names(self) -> list[str]:
        """The source's column names (from its header or schema: not from its values)."""
        ...

    def aggregate(self, plan: AggregatePlan) -> Aggregates:
        """The exact aggregates of the plan."""
        ...

    def describe(self) -> str:
        """A short public label of the data source (its resolved path, or the frame's type)."""
        ...


class NoiseRequest(Struct, frozen=True):
    """One array of noisy values to draw where the aggregates live: ``source`` names the exact
    aggregate (``"rows"``, ``"sum<j>"``, ``"count<j>"``, ``"squares<j>"`` for value column j),
    ``mechanism`` the parameters (epsilon, sensitivity, lower, upper as exact rationals) of the
    snapping mechanism to apply per cell; ``key`` names the result."""

    key: str
    source: str
    mechanism: tuple[object, object, object, object]


@runtime_checkable
class ExecutorNoiseEngine(Engine, Protocol):
    """An engine that can also draw the noise where the aggregates live (Spark executors)."""

    def wants_executor_noise(self, n_cells: int) -> bool:
        """Whether to draw the noise in the engine for this many cells."""
        ...

    def noisy_aggregate(
        self, plan: AggregatePlan, requests: Sequence[NoiseRequest]
    ) -> dict[str, npt.NDArray[np.float64]]:
        """The noisy arrays (the mechanism's outputs, in cell order), drawn on the CSPRNG of the
        machines holding the aggregates; the exact aggregates need not leave the engine."""
        ...


# -- bins (step 3) ----------------------------------------------------------------------------
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1


def bin_edges(column: Column) -> list[int] | list[float]:
    """The edges every engine compares a binned column's cast value with (step 3).

    Integer column: ⌈e⌉ per edge, an exact integer (possibly outside int64: an engine then
    compares with :func:`int_at_least` / :func:`int_below`). Decimal column: the double nearest
    each edge, ±inf past the largest double."""
    assert column.bins is not None
    if column.type == "integer":
        return [-((-e.numerator) // e.denominator) for e in column.bins]
    out: list[float] = []
    for e in column.bins:
        try:
            out.append(float(e))  # correctly rounded
        except OverflowError:
            out.append(math.inf if e > 0 else -math.inf)
    return out


#: a node of :func:`bin_tree`: a leaf (the bin index, or None outside every bin) or
#: (j, below, at_or_above): compare the value with edge j, ``below`` when v < e_j
BinTree: TypeAlias = int | tuple[int, "BinTree", "BinTree"] | None


def bin_tree(n_edges: int) -> BinTree:
    """A binary search over ``n_edges`` non-decreasing edges e₀ ≤ … ≤ e_{n−1} (bins
    [eᵢ, eᵢ₊₁)) whose every root-to-leaf path makes exactly ⌈log2(n_edges + 1)⌉ comparisons
    ``v < e_j``, so a row's work does not depend on where its value lies (docs/data.md,
    "Run time").

    It finds p = #{j : e_j ≤ v} over the edges padded with copies of the last one to 2^D − 1;
    the bin is p − 1 for 1 ≤ p ≤ n_edges − 1, else None (below e₀ or at/above the last edge).
    That is the first i with v < eᵢ₊₁ among v ≥ e₀ — the contract's rule, equal edges included
    (an empty bin). An index j past the last edge means the last edge."""
    if n_edges < 2:
        raise ValueError("a binned column needs at least two edges")
    depth = n_edges.bit_length()  # 2^depth − 1 >= n_edges
    last = n_edges - 1

    def node(lo: int, hi: int) -> BinTree:
        if lo == hi:
            return lo - 1 if 1 <= lo <= last else None
        mid = (lo + hi + 1) // 2
        return (min(mid - 1, last), node(lo, mid - 1), node(mid, hi))

    return node(0, (1 << depth) - 1)


def int_at_least(edge: int) -> bool | None:
    """For an int64 v and an integer edge: True if v >= edge always holds, False if never, None
    when it depends on v (the edge is within int64)."""
    if edge <= INT64_MIN:
        return True
    if edge > INT64_MAX:
        return False
    return None


def int_below(edge: int) -> bool | None:
    """For an int64 v and an integer edge: True if v < edge always holds, False if never, None
    when it depends on v."""
    if edge > INT64_MAX:
        return True
    if edge <= INT64_MIN:
        return False
    return None


# -- keyed-hash ranks (step 5): the one definition every engine reproduces ---------------------
RANK_MASK = 0xFFFFFFFF
#: odd multipliers below 2^31: a 32-bit lane times one stays below 2^63, so no engine's 64-bit
#: arithmetic can overflow (Spark's ANSI mode and DuckDB both raise on overflow)
RANK_MULTIPLIERS = (0x5BD1E995, 0x27D4EB2F)
UNIT_MULTIPLIER = 0x165667B1  # odd, below 2^31: folds a unit's high lane into its low one
ROW_TAG, GROUP_TAG = 1, 2


def key_words(hash_key: str) -> tuple[int, int, int, int]:
    """The release key (32 hex digits) as four 32-bit words, most significant first."""
    return tuple(int(hash_key[i : i + 8], 16) for i in range(0, 32, 8))  # type: ignore[return-value]


def lane_count(width: int) -> int:
    """How many 32-bit lanes an integer in [0, ``width``) takes (at least one); from the plan."""
    return max(1, -(-(width - 1).bit_length() // 32))


def int_lanes(value: int, count: int) -> list[int]:
    """The ``count`` 32-bit lanes of a non-negative ``value``, least significant first."""
    return [(value >> (32 * i)) & RANK_MASK for i in range(count)]


def unit_lanes(unit: int | str) -> list[int]:
    """The two lanes of a privacy unit: an integer unit's 64-bit two's complement, a text unit's
    first 8 MD5 bytes of its UTF-8 text (little-endian; unkeyed: the key enters in
    :func:`mix_rank`)."""
    if isinstance(unit, str):
        digest = hashlib.md5(unit.encode("utf-8"), usedforsecurity=False).digest()
        n = int.from_bytes(digest[:8], "little")
    else:
        n = unit & ((1 << 64) - 1)
    return int_lanes(n, 2)


def _fold(t: int) -> int:
    return (t ^ (t >> 32)) & RANK_MASK


def mix_rank(hash_key: str, tag: int, lanes: Sequence[int]) -> int:
    """The keyed rank of a sequence of 32-bit lanes, in [0, 2^63).

    Two 32-bit accumulators a = k0 ^ tag, b = k1 ^ tag (k0..k3: :func:`key_words`); each lane x
    updates a ← fold((a ^ x)·m_a), b ← fold((b ^ x)·m_b) with fold(t) = (t ^ (t >> 32)) & M
    (M = 2^32 − 1; m_a, m_b: :data:`RANK_MULTIPLIERS`; every product is below 2^63); then one
    last round with k2 ^ n for a and k3 ^ n for b (n: the number of lanes); the rank is a·2^31
    + (b >> 1). A keyed mixing function, not a cryptographic one (docs/data.md, "Contribution
    bounding")."""
    k0, k1, k2, k3 = key_words(hash_key)
    ma, mb = RANK_MULTIPLIERS
    a, b = k0 ^ tag, k1 ^ tag
    for x in lanes:
        a = _fold((a ^ x) * ma)
        b = _fold((b ^ x) * mb)
    n = len(lanes)
    a = _fold((a ^ k2 ^ n) * ma)
    b = _fold((b ^ k3 ^ n) * mb)
    return (a << 31) + (b >> 1)


def row_radices(plan: AggregatePlan) -> list[int]:
    """The radices of a row's digits: n_cells for the cell index (not with ``by_value``), then
    per value column U_q − L_q + 2 (its digit: 0 for a null quantum, q − L_q + 1 otherwise)."""
    values = [vc.upper_q - vc.lower_q + 2 for vc in plan.values]
    return values if plan.by_value else [plan.n_cells, *values]


def row_chunks(plan: AggregatePlan) -> list[list[int]]:
    """The row's digits (indices into :func:`row_radices`) in consecutive chunks, each as long as
    the product of its radices stays below 2^63 (a digit whose radix alone reaches it is a chunk
    of its own): each chunk is one integer that a 64-bit engine computes without overflow."""
    chunks: list[list[int]] = []
    product = 1 << 63
    for i, radix in enumerate(row_radices(plan)):
        if product * radix >= 1 << 63:
            chunks.append([])
            product = 1
        chunks[-1].append(i)
        product *= radix
    return chunks


def chunk_width(plan: AggregatePlan, chunk: Sequence[int]) -> int:
    """The product of a chunk's radices (its value lies in [0, width))."""
    radices = row_radices(plan)
    return math.prod(radices[i] for i in chunk)


def with_unit(unit: Sequence[int], lanes: Sequence[int]) -> list[int]:
    """One lane for the unit, u_lo ^ ((u_hi·m_u) & M) (m_u: :data:`UNIT_MULTIPLIER`), then
    ``lanes``: each unit enters the row lanes from its own pseudo-random state (two units share
    it with probability about 2^-32, and then only order their rows alike), and every row lane
    passes through two or more rounds of :func:`mix_rank`."""
    return [unit[0] ^ ((unit[1] * UNIT_MULTIPLIER) & RANK_MASK), *lanes]


def row_lanes(
    plan: AggregatePlan, unit: int | str, cell: int, quanta: Sequence[int | None]
) -> list[int]:
    """A row's rank lanes: per chunk (:func:`row_chunks`) the lanes (``lane_count(chunk_width)``)
    of its digits in mixed radix, the first digit most significant (with one chunk: the row
    packed as the engines pack it), after the :func:`cell_lanes` with ``by_value``; then
    :func:`with_unit`."""
    digits = [] if plan.by_value else [cell]
    digits += [
        0 if q is None else q - vc.lower_q + 1 for vc, q in zip(plan.values, quanta, strict=True)
    ]
    radices = row_radices(plan)
    out: list[int] = cell_lanes(plan, cell) if plan.by_value else []
    for chunk in row_chunks(plan):
        value = 0
        for i in chunk:
            value = value * radices[i] + digits[i]
        out += int_lanes(value, lane_count(chunk_width(plan, chunk)))
    return with_unit(unit_lanes(unit), out)


def row_rank(plan: AggregatePlan, unit: int | str, cell: int, quanta: Sequence[int | None]) -> int:
    """The rank of a row (unit, cell, quanta after the null rule) under ``plan.hash_key``."""
    return mix_rank(plan.hash_key, ROW_TAG, row_lanes(plan, unit, cell, quanta))


def group_rank(plan: AggregatePlan, unit: int | str, cell: int) -> int:
    """The rank of a (unit, cell) pair for the L0 bound."""
    return mix_rank(plan.hash_key, GROUP_TAG, with_unit(unit_lanes(unit), cell_lanes(plan, cell)))


def key_lanes(key: object) -> list[int]:
    """The two lanes of a key read from the data: the first 8 MD5 bytes (little-endian) of its
    text (a date YYYY-MM-DD, an integer its digits; the release key enters in :func:`mix_rank`)."""
    text = key.isoformat() if hasattr(key, "isoformat") else str(key)
    digest = hashlib.md5(text.encode("utf-8"), usedforsecurity=False).digest()
    return int_lanes(int.from_bytes(digest[:8], "little"), 2)


def key_value_lanes(plan: AggregatePlan, g: Column, v: Key | int) -> list[int]:
    """One grouping column's part of a cell ranked by value: a ``by_value`` column's key ``v``
    by :func:`key_lanes`, a declared key or bin (``v`` its index) by its index."""
    if g.keys is None:
        return int_lanes(int(v), lane_count(g.n_cells))  # type: ignore[arg-type]
    if g.name in plan.by_value:
        return key_lanes(v)
    return int_lanes(g.keys.index(v), lane_count(g.n_cells))


def cell_lanes(plan: AggregatePlan, cell: int) -> list[int]:
    """The lanes standing for a cell in a rank: its index; when the plan ranks by value, its
    columns' :func:`key_value_lanes` (a ``joint`` tuple's, then the other columns'), from the
    key tuple and the declaration only (docs/data.md, "Privacy units")."""
    if not plan.by_value:
        return int_lanes(cell, lane_count(plan.n_cells))
    width = 0 if plan.joint is None else len(plan.joint[0]) if plan.joint else len(plan.groupings)
    stride = math.prod(g.n_cells for g in plan.groupings[width:])
    tup = plan.joint[cell // stride] if plan.joint else ()
    parts = list(zip(plan.groupings[: len(tup)], tup, strict=True))
    for g in plan.groupings[width:]:
        stride //= g.n_cells
        i = cell // stride % g.n_cells
        parts.append((g, i if g.keys is None else g.keys[i]))
    return [x for g, v in parts for x in key_value_lanes(plan, g, v)]
