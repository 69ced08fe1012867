"""A release's results as a table for notebooks: Arrow, pandas and polars DataFrames and an HTML
table for Jupyter (docs/notebooks.md).

One row per released number, the same rows as ``results.csv`` (docs/plans.md, "Outputs"), with
these columns: ``query``, ``statistic``, ``column``, one column per key column of any query (null
where a query has no such key), ``quantile``, ``value``, ``value_exact``, ``accuracy`` (the ±),
``rank_accuracy``, ``confidence``, ``epsilon``, ``epsilon_exact`` and, when a query has a target
±, ``target_met``. A key column named like one of these gets ``_key`` after its name.

Conversions, stated once: ``value`` is float64 (a released float is one exactly; an integer
beyond 2^53 becomes the nearest double), ``value_exact`` is the released value as text exactly
(an integer's digits, or the shortest decimal that reads back as the same double); ``epsilon`` is
the float64 nearest the exact ε, ``epsilon_exact`` its exact decimal (or ``p/q``) text; key
columns keep their declared type (integer, text, boolean, date; a decimal key as the double
nearest it; bins as their labels), or become text where queries disagree on a column's type.

pandas and polars are imported only when asked for (``pip install 'snapdp[notebook]'``). Every
field is a function of the declaration, the queries and the mechanisms' outputs (DESIGN §8.1).
The functions take a sequence of :class:`~snapdp.data.output.results.QueryResult` (that module
imports this one, for its methods, so this one names it only in words).
"""

from __future__ import annotations

import html
import importlib
from collections.abc import Sequence
from fractions import Fraction
from types import ModuleType
from typing import Any

from snapdp._rational import exact_text

__all__ = ["HTML_ROWS", "html_table", "result_columns", "to_arrow", "to_pandas", "to_polars"]

#: The most rows :func:`html_table` shows (the rest are counted in a last line).
HTML_ROWS = 200


def result_columns(results: Sequence[Any]) -> dict[str, list[Any]]:
    """The long table of ``results`` as plain Python columns, in display order (see the module
    docstring for each column)."""
    keys: list[str] = list(dict.fromkeys(k for r in results for k in r.key_columns))
    label = {k: f"{k}_key" if k in _FIXED else k for k in keys}
    names = ["query", "statistic", "column", *label.values(), "quantile", "value",
             "value_exact", "accuracy", "rank_accuracy", "confidence", "epsilon",
             "epsilon_exact"]  # fmt: skip
    with_target = any(r.target_met is not None for r in results)
    if with_target:
        names.append("target_met")
    columns: dict[str, list[Any]] = {n: [] for n in names}
    for r in results:
        for row in r.rows:
            cell = dict(zip(r.key_columns, row.keys, strict=True))
            columns["query"].append(r.label)
            columns["statistic"].append(r.query.statistic)
            columns["column"].append(r.query.column)
            for k in keys:
                columns[label[k]].append(_key_value(cell[k]) if k in cell else None)
            columns["quantile"].append(None if row.quantile is None else float(row.quantile))
            columns["value"].append(float(row.value))
            columns["value_exact"].append(_exact_text(row.value))
            columns["accuracy"].append(float(row.accuracy))
            columns["rank_accuracy"].append(row.rank_accuracy)
            columns["confidence"].append(r.confidence)
            columns["epsilon"].append(float(r.epsilon))
            columns["epsilon_exact"].append(exact_text(r.epsilon))
            if with_target:
                columns["target_met"].append(r.target_met)
    return columns


def to_arrow(results: Sequence[Any]) -> Any:
    """``results`` as a ``pyarrow.Table`` (the columns of :func:`result_columns`)."""
    import pyarrow as pa

    columns = result_columns(results)
    arrays = [_arrow_column(pa, name, values) for name, values in columns.items()]
    return pa.Table.from_arrays(arrays, names=list(columns))


def to_pandas(results: Sequence[Any]) -> Any:
    """``results`` as a pandas DataFrame: integer and boolean columns with nulls keep their type
    (pandas' nullable ``Int64`` and ``boolean``), never turned into floats."""
    pd = _optional("pandas", "to_pandas()")
    import pyarrow as pa

    nullable = {pa.int64(): pd.Int64Dtype(), pa.bool_(): pd.BooleanDtype()}
    return to_arrow(results).to_pandas(types_mapper=nullable.get)


def to_polars(results: Sequence[Any]) -> Any:
    """``results`` as a polars DataFrame."""
    pl = _optional("polars", "to_polars()")
    return pl.from_arrow(to_arrow(results))


def html_table(results: Sequence[Any], caption: str = "") -> str:
    """``results`` as an HTML table (Jupyter's ``_repr_html_``); every text escaped. Shows the
    first :data:`HTML_ROWS` rows and counts the rest."""
    columns = result_columns(results)
    shown = [n for n in columns if n not in ("value_exact", "epsilon_exact")]
    n_rows = len(columns["query"])
    head = "".join(f"<th>{_cell(_HEADINGS.get(n, n))}</th>" for n in shown)
    body = []
    for i in range(min(n_rows, HTML_ROWS)):
        cells = "".join(f"<td>{_cell(_shown(n, columns, i))}</td>" for n in shown)
        body.append(f"<tr>{cells}</tr>")
    if n_rows > HTML_ROWS:
        body.append(
            f'<tr><td colspan="{len(shown)}">… {n_rows - HTML_ROWS} more rows '
            "(to_pandas() has them all)</td></tr>"
        )
    title = f"<caption>{_cell(caption)}</caption>" if caption else ""
    return (
        f'<table class="snapdp-results">{title}<thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


_HEADINGS = {"accuracy": "±", "epsilon": "ε", "rank_accuracy": "± ranks", "target_met": "target"}


def _shown(name: str, columns: dict[str, list[Any]], i: int) -> object:
    if name == "value":
        return columns["value_exact"][i]
    if name == "epsilon":
        return columns["epsilon_exact"][i]
    value = columns[name][i]
    if name == "target_met" and value is not None:
        return "met" if value else "missed"
    if isinstance(value, float):
        return f"{value:.6g}"
    return value


def _key_value(key: object) -> object:
    """A typed key as a table cell: a decimal key (a Fraction) as an int when whole, else the
    double nearest it; integers, text, booleans and dates as they are."""
    if isinstance(key, Fraction):
        return int(key) if key.denominator == 1 else float(key)
    return key


def _cell(value: object) -> str:
    return "" if value is None else html.escape(str(value), quote=True)


def _exact_text(value: float | int) -> str:
    return str(value) if isinstance(value, int) else repr(float(value))


#: The columns every table has (their Arrow types); a key column of the same name gets ``_key``.
_FIXED = {
    "query": "string", "statistic": "string", "column": "string", "quantile": "float64",
    "value": "float64", "value_exact": "string", "accuracy": "float64",
    "rank_accuracy": "float64", "confidence": "float64", "epsilon": "float64",
    "epsilon_exact": "string", "target_met": "bool_",
}  # fmt: skip


def _arrow_column(pa: Any, name: str, values: list[Any]) -> Any:
    if name in _FIXED:
        return pa.array(values, type=getattr(pa, _FIXED[name])())
    try:  # a key column: its declared type, as typed keys are (docs/data.md)
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # queries disagree on its type: text
        return pa.array([None if v is None else str(v) for v in values], type=pa.string())


def _optional(module: str, call: str) -> ModuleType:
    """Import ``module`` or raise a one-line ImportError naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ImportError(
            f"{call} needs {module}: pip install 'snapdp[notebook]' (docs/notebooks.md)"
        ) from None
