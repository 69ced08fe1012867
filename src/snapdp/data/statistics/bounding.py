"""What one privacy unit can change, from the declared contribution bounds (DESIGN §8.3–8.4).

After bounding (docs/data.md, "Contribution bounds"), a unit keeps at most L∞ rows in each cell,
at most L0 cells, and at most k rows in all (each bound optional). Adding or removing the unit
then changes, in rows:

* one cell by at most ``per_cell`` = min(k, L∞);
* at most ``cells`` = min(k, L0, number of cells) cells;
* all cells together (L1) by at most ``l1`` = min(k, cells·per_cell).

A value statistic multiplies these row counts by the most one row can move it (e.g. max(|L|, |U|)
quanta for a sum). Without a privacy unit every row is its own unit: all three are 1. Rows whose
unit is null, when declared ``null_units="own"``, are one-row units and meet every bound.
"""

from __future__ import annotations

from msgspec import Struct

from snapdp.data.model.schema import Schema
from snapdp.errors import ParameterError

__all__ = ["Reach", "reach"]


class Reach(Struct, frozen=True):
    """How many rows one unit can add or remove: in one cell, in how many cells, in all cells."""

    per_cell: int
    cells: int
    l1: int
    relation: str

    @property
    def per_cell_total(self) -> int:
        """cells·per_cell: the L1 bound that composing per-cell guarantees pays for."""
        return self.cells * self.per_cell


def reach(schema: Schema, n_cells: int) -> Reach:
    """The reach of one unit over a grouping of ``n_cells`` cells (1 when ungrouped).

    A ParameterError when a privacy unit is declared without a bound on its rows per cell (k or
    L∞): the sensitivity would be unbounded.
    """
    if schema.privacy_unit is None:
        return Reach(1, 1, 1, "add or remove one row")
    b = schema.bounds
    k, l0, linf = b.max_rows_per_unit, b.max_groups_per_unit, b.max_rows_per_group
    if k is None and linf is None:
        raise ParameterError(
            f"privacy unit {schema.privacy_unit!r} needs a bound on its rows: max_rows_per_unit "
            "(k) or max_rows_per_group (L∞) (docs/data.md, 'Contribution bounds')",
            parameter="max_rows_per_unit",
        )
    per_cell = min(v for v in (k, linf) if v is not None)
    cells = min(v for v in (k, l0, n_cells) if v is not None)
    l1 = min(v for v in (k, cells * per_cell) if v is not None)
    parts = []
    if k is not None:
        parts.append(f"at most {k} row(s)")
    if l0 is not None:
        parts.append(f"at most {l0} group(s)")
    if linf is not None:
        parts.append(f"at most {linf} row(s) per group")
    relation = f"add or remove one {schema.privacy_unit} ({', '.join(parts)})"
    return Reach(per_cell, max(1, cells), l1, relation)
