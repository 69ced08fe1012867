"""A pandas DataFrame's cells by the engine contract (docs/data.md, "What does not fit"; the
contract: :mod:`snapdp.data.engines.base`, step 2), shared by the DuckDB and Spark engines.

An ``object`` column is never typed by inference from its values: each cell becomes the text
that casts to the contract's value for the column's declared type, or None (null) — a string as
it is unless it is not valid Unicode (a lone surrogate), an integer as its digits, a finite real
for a numeric column, a date for a date column, a boolean for a boolean column; anything else is
null. Typed columns keep their native types. So no cell can make the conversion fail.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import math
from typing import Any

from snapdp.data.engines.base import AggregatePlan
from snapdp.data.model.schema import Column
from snapdp.errors import ParameterError

__all__ = [
    "declared_columns",
    "encodable",
    "exact_numbers",
    "frame_to_arrow",
    "is_pandas_frame",
    "object_cell",
    "python_strings",
    "rescaled",
]


def is_pandas_frame(source: object) -> bool:
    """Whether ``source`` is a pandas DataFrame (told by its type's module and name, without
    importing pandas)."""
    kind = type(source)
    return (kind.__module__ or "").startswith("pandas") and kind.__name__ == "DataFrame"


def declared_columns(plan: AggregatePlan) -> dict[str, Column]:
    """The columns a plan reads, each with its declaration (row filter, groupings, values, then
    the unit; a column named twice takes its last declaration)."""
    decl: dict[str, Column] = {c.name: c for c in plan.where_columns}
    decl.update({g.name: g for g in plan.groupings})
    for v in plan.values:
        decl[v.column.name] = v.column
    if plan.unit is not None:
        decl[plan.unit.name] = plan.unit
    return decl


def frame_to_arrow(frame: Any, decl: dict[str, Column]) -> Any:
    """The used columns of a pandas DataFrame as an Arrow table. Typed columns keep their native
    types; an object column becomes text cell by cell by the contract's rules for the declared
    type (so no type is ever inferred from the data)."""
    import pyarrow as pa

    arrays = []
    names = []
    for name in decl:
        series = frame[next(c for c in frame.columns if str(c) == name)]
        kind = decl[name].type
        if str(series.dtype) == "category":
            arr = _categorical(series, kind)
        else:
            arr = _column(series, kind)
        if pa.types.is_dictionary(arr.type):
            arr = arr.cast(arr.type.value_type)
        if pa.types.is_large_string(arr.type) or pa.types.is_string_view(arr.type):
            arr = arr.cast(pa.string())
        if rescaled(arr.type):  # null by the contract; one value could fail the engine's scan
            arr = pa.nulls(len(arr), arr.type)
        arrays.append(arr)
        names.append(name)
    if not arrays:  # a plan reading no column still counts rows
        arrays, names = [pa.nulls(len(frame), pa.int8())], ["_snapdp_none"]
    return pa.Table.from_arrays(arrays, names=names)


def rescaled(arrow_type: Any) -> bool:
    """Whether an engine converts the Arrow type's values to microseconds when it reads them (so
    that one value can overflow and fail the whole query): a timestamp or a duration in seconds
    or milliseconds (DuckDB rescales the time-zoned timestamps and the durations, Spark all of
    them). The contract casts every such column to null."""
    import pyarrow as pa

    if pa.types.is_timestamp(arrow_type) or pa.types.is_duration(arrow_type):
        return bool(arrow_type.unit in ("s", "ms"))
    return False


def exact_numbers(name: str, column: Any, engine: str) -> Any:
    """The Arrow column ``name`` with the two number types neither DuckDB nor Spark can read
    (half floats, 256-bit decimals) as types they read, holding the same values: a half float
    as a single float, a 256-bit decimal of at most 38 digits as the 128-bit one. A wider
    decimal is refused with a one-line error naming the column and ``engine``. Any other column
    is returned as it is. From the schema alone, never from the cells."""
    import pyarrow as pa

    if pa.types.is_float16(column.type):
        return column.cast(pa.float32())
    if pa.types.is_decimal256(column.type):
        if column.type.precision > 38:
            raise ParameterError(
                f"`data`: column {name!r} is {column.type}, which the {engine} engine cannot "
                "read (at most 38 digits); cast it to a decimal of at most 38 digits or to "
                "float64",
                parameter="data",
            )
        return column.cast(pa.decimal128(column.type.precision, column.type.scale))
    return column


def _column(series: Any, kind: str) -> Any:
    """One column that is not categorical: an object column cell by cell, a typed one as Arrow
    converts it (cell by cell only for a dtype Arrow cannot convert)."""
    import pyarrow as pa

    if series.dtype == object:
        return pa.array([object_cell(x, kind) for x in series], type=pa.string())
    if python_strings(series):
        return _python_string_column(series)
    try:
        return pa.Array.from_pandas(series)
    except (pa.ArrowException, TypeError, ValueError):
        return pa.array([object_cell(x, kind) for x in series], type=pa.string())


def python_strings(series: Any) -> bool:
    """Whether ``series`` is a pandas string column stored as Python objects
    (``dtype="string[python]"``): the one typed column whose cells may hold a text that is not
    valid Unicode (a lone surrogate), which Arrow refuses to convert."""
    dtype = series.dtype
    return type(dtype).__name__ == "StringDtype" and getattr(dtype, "storage", None) == "python"


def _python_string_column(series: Any) -> Any:
    """A ``string[python]`` column, vectorised whatever its cells hold: every cell is scanned
    for a lone surrogate (such a cell becomes null, as :func:`object_cell` makes it), then Arrow
    converts the column. Before, Arrow's refusal of one such cell sent every cell of the column
    through :func:`object_cell`, ~5 times the CPU: the run time showed one person's value."""
    import pyarrow as pa

    invalid = series.str.contains(_SURROGATE, regex=True).fillna(False).to_numpy(dtype=bool)
    return pa.Array.from_pandas(series.mask(invalid), type=pa.string())


_SURROGATE = "[\ud800-\udfff]"


def _categorical(series: Any, kind: str) -> Any:
    """A categorical column: its categories converted once each, as a column of their dtype
    (:func:`_column`), then taken by the codes in one vectorised step (a missing code is null).
    The same values as converting the column whole; but the work per row no longer depends on
    the categories: before, one category Arrow could not convert (a person's text among integer
    categories) sent every cell of the column through :func:`object_cell`, ~20 times the CPU of
    the vectorised path, so the run time showed whether such a value was present."""
    import pyarrow as pa

    categories = series.cat.categories
    # a Series of the categories' own dtype: ``Index.to_series`` infers again from an object
    # Index's values (pandas 3 makes all-text categories "str", and raises on a category holding
    # a lone surrogate: one person's value would fail the release)
    values = _column(type(series)(categories, dtype=categories.dtype), kind)
    codes = series.cat.codes.to_numpy()
    indices = pa.array(codes, mask=codes < 0)
    return pa.DictionaryArray.from_arrays(indices, values)


def object_cell(x: object, kind: str) -> str | None:
    """One cell of an object column as the text that casts to the contract's value (or None)."""
    import numbers

    if x is None or (isinstance(x, bool) and kind != "boolean"):
        return None
    if isinstance(x, str):
        return x if encodable(x) else None
    if kind == "boolean":
        return ("true" if x else "false") if isinstance(x, (bool,)) else _np_bool(x)
    if isinstance(x, numbers.Integral):
        return _digits(int(x))
    if kind == "date":
        if isinstance(x, _dt.date) and not isinstance(x, _dt.datetime):
            return x.isoformat()
        return None
    if kind in ("integer", "decimal") and isinstance(x, decimal.Decimal):
        # its exact decimal text, cast as the same text in a CSV cell is (a driver's NUMERIC)
        return str(x) if x.is_finite() else None
    if kind in ("integer", "decimal") and isinstance(x, numbers.Real):
        try:
            d = float(x)
        except OverflowError:  # a Fraction past the largest double: not finite, as inf is
            return None
        return repr(d) if math.isfinite(d) else None
    return None


#: Integers below 2**13000 (at most 3,914 digits) are within ``str``'s limit of 4,300 digits.
_STR_BITS = 13000


def _digits(n: int) -> str:
    """``n``'s decimal digits, however many, in time near linear in their number. ``str``
    refuses an integer of more than ``sys.get_int_max_str_digits()`` (4,300) digits, which would
    fail the release on one cell; Python's own conversions past it take time quadratic in the
    digits (``decimal``: ~15 s of CPU for one cell of a million digits, which the run time
    showed), GMP's a few milliseconds."""
    if n.bit_length() < _STR_BITS:
        return str(n)
    import gmpy2

    return str(gmpy2.mpz(n).digits(10))


def encodable(text: str) -> bool:
    """Whether ``text`` is valid Unicode (UTF-8 encodable: no lone surrogate such as '\\ud800')."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _np_bool(x: object) -> str | None:
    if type(x).__name__ == "bool_":
        return "true" if bool(x) else "false"
    return None
