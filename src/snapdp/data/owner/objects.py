"""For ``snapdp check`` only (it reads the data WITHOUT privacy; never in a release path): the
cells of a pandas DataFrame that hold a value the contract makes null.

A release converts an ``object`` column cell by cell for its declared type
(:func:`snapdp.data.engines._cells.object_cell`): a cell of a Python type the type never reads (a
``bytes`` cell in a text column, a float in a text column, an infinite ``Decimal`` in a numeric
one, a string that is not valid Unicode) becomes null before the engine sees it, so the
engine's check counted it as a null cell. These are found here, in Python, by the same rule, so
that the report counts them as cells that are not values of the declared type and names their
Python types.
"""

from __future__ import annotations

import decimal
import numbers
import reprlib
from typing import Any

from msgspec import Struct

from snapdp.data.engines._cells import object_cell, python_strings
from snapdp.data.model.schema import Column

__all__ = ["UnreadCells", "unread_cells"]


class UnreadCells(Struct, frozen=True):
    """A column's cells that hold a value the contract makes null: how many (rows), the first
    few distinct ones as text, and where they are held (``"pandas object holding bytes"``)."""

    cells: int
    examples: list[str]
    held: str


def unread_cells(frame: Any, columns: dict[str, Column], limit: int) -> dict[str, UnreadCells]:
    """Per declared column of ``frame`` converted cell by cell (an ``object`` or
    ``string[python]`` column, or a categorical of such categories), the cells that are not
    missing to pandas (None, NaN, NA, NaT) and that the contract makes null for the declared
    type, with up to ``limit`` distinct examples (in row order; a categorical's in category
    order). Columns without such cells are left out. One pass over each such column in Python,
    as the release's own conversion."""
    import numpy as np

    found: dict[str, UnreadCells] = {}
    for name, column in columns.items():
        series = frame[next(c for c in frame.columns if str(c) == name)]
        dtype = str(series.dtype)
        cells: Any
        if dtype == "category":
            categories = series.cat.categories
            if not _per_cell(type(series)(categories, dtype=categories.dtype)):
                continue
            codes = series.cat.codes.to_numpy()
            rows = np.bincount(codes[codes >= 0], minlength=len(categories)).tolist()
            cells = zip(categories, rows, strict=True)
        elif _per_cell(series):  # pandas' missing cells (None, NaN, NA, NaT) are nulls
            cells = ((x, 1) for x in series[series.notna()])
        else:
            continue
        count = 0
        examples: list[str] = []
        types: set[str] = set()
        for x, rows_of in cells:
            if not rows_of or object_cell(x, column.type) is not None:
                continue
            count += rows_of
            types.add(_type_name(x, column.type))
            text = _text(x)
            if len(examples) < limit and text not in examples:
                examples.append(text)
        if count:
            held = f"pandas {dtype} holding {', '.join(sorted(types))}"
            found[name] = UnreadCells(count, examples, held)
    return found


def _per_cell(series: Any) -> bool:
    """Whether a release converts ``series`` cell by cell by :func:`object_cell` (an ``object``
    column; a ``string[python]`` one is scanned for lone surrogates, with the same result)."""
    return bool(series.dtype == object) or python_strings(series)


def _type_name(x: object, kind: str) -> str:
    """The Python type of a cell made null, and why when the type is read otherwise."""
    if isinstance(x, str):
        return "str (not valid Unicode)"
    numeric = isinstance(x, (numbers.Real, decimal.Decimal)) and not isinstance(x, bool)
    if kind in ("integer", "decimal") and numeric:
        return f"{type(x).__name__} (not finite)"
    return type(x).__name__


def _text(x: object) -> str:
    """The cell as an example: bytes decoded (a byte that is not UTF-8 as its escape, ``\\xff``),
    a string with its lone surrogates escaped, anything else as a short repr."""
    if isinstance(x, (bytes, bytearray, memoryview)):
        return bytes(x).decode("utf-8", "backslashreplace")
    if isinstance(x, str):
        return x.encode("utf-8", "backslashreplace").decode("utf-8")
    try:
        return reprlib.repr(x)
    except Exception:  # an object whose repr fails is still named by its type
        return f"<{type(x).__name__}>"
