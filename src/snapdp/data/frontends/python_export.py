"""A workload as a runnable Python script or a Jupyter notebook (docs/notebooks.md, "Export a
plan").

The front ends read text into a :class:`~snapdp.data.model.workload.Workload`; this module writes
one back out as Python that builds the same plan with the public API (``snapdp.data``: Schema,
Column, Query, PlannedQuery, Plan) and runs it as ``snapdp run`` does. Every name and value the
user wrote is emitted as a Python literal (``repr``), every rational exactly as
``Fraction("…")``, so the script plans exactly what the plan file plans. The notebook
(nbformat 4, built with :mod:`json`) holds the script's code cells, in order, with a few
markdown cells between them: its code cells joined by newlines are the script.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

from msgspec import Struct

from snapdp._rational import exact_text
from snapdp._records import field_defaults
from snapdp.data.model.workload import Workload
from snapdp.errors import ParameterError

__all__ = ["DEFAULT_LEDGER", "export_notebook", "export_python", "notebook_json"]

#: The ledger file an exported script keeps its budget in, unless told otherwise.
DEFAULT_LEDGER = "snapdp-ledger.sqlite"
#: The names ``snapdp.data`` exports (others are imported from their own module).
_PUBLIC = frozenset(
    {"Column", "ContributionBounds", "CsvOptions", "NullRule", "PlannedQuery", "Query", "Schema"}
)
_WIDTH = 96


def export_python(
    workload: Workload,
    *,
    ledger: str | None = DEFAULT_LEDGER,
    output: str | None = None,
    seed: int | None = None,
    total_epsilon: int | str | None = None,
) -> str:
    """A Python script that releases ``workload`` as ``snapdp run`` would: it builds the plan with
    the public API, shows its preview (nothing spent), then runs it on ``ledger`` (a file path;
    None: a budget in memory, for one run), writing the result files to ``output`` (None:
    nothing written). ``seed``: a number makes the noise reproducible and NOT private (tests
    only). The source must be a file path (a relative one is resolved against the plan's
    folder)."""
    return "\n".join(_code_cells(workload, ledger, output, seed, total_epsilon))


def export_notebook(
    workload: Workload,
    *,
    ledger: str | None = DEFAULT_LEDGER,
    output: str | None = None,
    seed: int | None = None,
    total_epsilon: int | str | None = None,
) -> str:
    """The same as :func:`export_python`, as a Jupyter notebook (nbformat 4 JSON text)."""
    cells = _code_cells(workload, ledger, output, seed, total_epsilon)
    return json.dumps(notebook_json(cells, _NOTES), indent=1, ensure_ascii=False) + "\n"


def notebook_json(code: list[str], notes: dict[int, str]) -> dict[str, Any]:
    """An nbformat 4.5 notebook of the ``code`` cells, each preceded by the markdown of
    ``notes`` at its index (if any)."""
    cells: list[dict[str, Any]] = []
    for i, text in enumerate(code):
        if i in notes:
            cells.append({"cell_type": "markdown", "id": f"note-{i}", "metadata": {},
                          "source": _lines(notes[i])})  # fmt: skip
        cells.append({"cell_type": "code", "execution_count": None, "id": f"code-{i}",
                      "metadata": {}, "outputs": [], "source": _lines(text)})  # fmt: skip
    return {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


_NOTES = {
    0: "# A release plan\n\nExported by snapdp (docs/notebooks.md). Running the last cell "
    "spends privacy budget; everything before it spends nothing.",
    1: "## Settings\n\n`SEED` must stay `None` for a private release: a seed makes the noise "
    "reproducible and **not private**.",
    2: "## The declaration\n\nWhat is public about the table: its columns, their bounds and "
    "keys, the privacy unit (docs/data.md).",
    3: "## The queries\n\nEach with a fixed ε, a target ± or a weight (docs/plans.md).",
    4: "## The plan\n\nEvery query's ε and ± before anything is spent.",
    5: "## The release\n\nOne ledger entry for the whole plan. `done.to_pandas()` or "
    "`done.to_polars()` give the results as a DataFrame.",
}


def _code_cells(workload: Workload, ledger: str | None, output: str | None,
                seed: int | None, total_epsilon: int | str | None) -> list[str]:  # fmt: skip
    source = workload.declaration.source_path()
    if not isinstance(source, (str, Path)):
        raise ParameterError(
            "a plan exported as Python needs a `source` file path (docs/notebooks.md)",
            parameter="source",
        )
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ParameterError("`seed` must be None or an integer", parameter="seed")
    imports: dict[str, set[str]] = {}
    schema = _code(workload.schema, imports, 0)  # first: the header lists what they use
    queries = "[\n" + "".join(
        f"    {_code(pq, imports, 1)},\n" for pq in workload.queries
    ) + "]"  # fmt: skip
    plan_args = ["schema", "queries", "source=SOURCE"]
    d = workload.declaration
    if d.total_epsilon is not None:
        plan_args.append(f"total_epsilon={_code(d.total_epsilon, imports, 1)}")
    if d.consistent:
        plan_args.append(f"consistent={d.consistent!r}")
    run_args = ["ledger=LEDGER", "total_epsilon=TOTAL_EPSILON", "output=OUTPUT", "rng=rng",
                "preview=preview"]  # fmt: skip
    if d.dataset is not None:
        run_args.append(f"dataset={d.dataset!r}")
    return [
        _header(imports),
        f"SOURCE = {str(Path(source).expanduser().resolve())!r}\n"
        f"LEDGER = {ledger!r}  # the budget's ledger file (None: in memory, this run only)\n"
        f"TOTAL_EPSILON = {total_epsilon!r}  # a new entry's budget (the owner's)\n"
        f"OUTPUT = {output!r}  # a folder for results.csv, .parquet, .json, report.html\n"
        f"SEED = {seed!r}  # keep None: a number makes the noise reproducible, NOT private\n",
        f"schema = {schema}\n",
        f"queries = {queries}\n",
        f"plan = Plan({', '.join(plan_args)})\n"
        "preview = plan.preview()  # every query's ε and ±; nothing read or spent\n"
        "print(preview.describe())\n",
        "rng = None if SEED is None else np.random.default_rng(SEED)\n"
        f"done = plan.run({', '.join(run_args)})\n"
        'print(f"Spent ε = {done.spent}")\n'
        "for result in done.results:\n"
        "    for row in result.rows:\n"
        "        print(result.label, *row.keys, row.value, '±', row.accuracy)\n"
        "done  # in Jupyter: the results as a table\n",
    ]


def _header(imports: dict[str, set[str]]) -> str:
    """The module docstring and the imports, grouped and sorted as isort does."""
    imports.setdefault("snapdp.data", set()).add("Plan")
    standard = [m for m in ("datetime", "fractions") if m in imports]
    lines = ['"""A release plan exported by snapdp (docs/notebooks.md): run it with Python."""', ""]
    lines += [f"from {m} import {', '.join(sorted(imports[m]))}" for m in standard]
    lines += [""] if standard else []
    lines += ["import numpy as np", ""]
    lines += [
        f"from {m} import {', '.join(sorted(imports[m]))}"
        for m in sorted(imports)
        if m not in standard
    ]
    return "\n".join(lines) + "\n"


def _code(value: object, imports: dict[str, set[str]], depth: int) -> str:
    """``value`` as a Python expression, wrapped one argument a line when long."""
    if value is None or isinstance(value, (bool, int, str, float)):
        return repr(value)
    if isinstance(value, Fraction):  # whole ones as ints: every field takes exact ints
        if value.denominator == 1:
            return str(value.numerator)
        imports.setdefault("fractions", set()).add("Fraction")
        return f'Fraction("{exact_text(value)}")'
    if isinstance(value, _dt.date):
        imports.setdefault("datetime", set()).add("date")
        return f"date({value.year}, {value.month}, {value.day})"
    if isinstance(value, Path):
        return repr(str(value))
    if isinstance(value, (tuple, list)):
        parts = [_code(v, imports, depth + 1) for v in value]
        if isinstance(value, tuple) and len(parts) == 1 and "\n" not in parts[0]:
            return f"({parts[0]},)"
        return _wrap("(" if isinstance(value, tuple) else "[", parts,
                     ")" if isinstance(value, tuple) else "]", depth)  # fmt: skip
    if isinstance(value, Struct):
        kind = type(value)
        module = "snapdp.data" if kind.__name__ in _PUBLIC else kind.__module__
        imports.setdefault(module, set()).add(kind.__name__)
        parts = [
            f"{name}={_code(getattr(value, name), imports, depth + 1)}"
            for name, default in field_defaults(value)
            if not name.startswith("_") and not _default(getattr(value, name), default)
        ]
        return _wrap(f"{kind.__name__}(", parts, ")", depth)
    raise ParameterError(
        f"a plan holding a {type(value).__name__} cannot be exported as Python",
        parameter="plan",
    )


def _default(value: object, default: Callable[[], object] | None) -> bool:
    """Whether ``value`` is its field's default, of the same type (``default``: a function
    giving the default, :func:`snapdp._records.field_defaults`)."""
    if default is None:
        return False
    expected = default()
    return bool(value == expected and type(value) is type(expected))


def _wrap(open_: str, parts: list[str], close: str, depth: int) -> str:
    one = open_ + ", ".join(parts) + close
    if len(one) + 4 * depth <= _WIDTH and "\n" not in one:
        return one
    pad = "    " * (depth + 1)
    return open_ + "\n" + "".join(f"{pad}{p},\n" for p in parts) + "    " * depth + close


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)
