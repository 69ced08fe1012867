"""The writers of a release's results: CSV (long form), Parquet (the same table, typed) and JSON
(columnar), each file whole or not at all (docs/plans.md, "Outputs").

Every field is a function of the declaration, the query and the mechanisms' outputs (DESIGN §8.1).
"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from snapdp._rational import exact_text
from snapdp.data.output.results import QueryResult, _json_value

__all__ = ["RESULT_FILES", "long_table", "results_json", "write_results"]


# -- writers (docs/plans.md, "Outputs") -------------------------------------------------------
#: The files :func:`write_results` writes (the HTML report is :mod:`snapdp.data.output.report`'s).
RESULT_FILES = ("results.csv", "results.parquet", "results.json")


def long_table(results: Sequence[QueryResult]) -> tuple[list[str], list[list[object]]]:
    """All results as one long table: a row per released number with its query, statistic,
    column, one column per key column used by any query (empty where a query has no such key),
    quantile, value, accuracy (±), rank accuracy, confidence, the query's exact ε and, for planned
    queries with a target, ``target_met`` (empty otherwise)."""
    key_names: list[str] = list(dict.fromkeys(k for r in results for k in r.key_columns))
    header = ["query", "statistic", "column", *key_names, "quantile", "value", "accuracy",
              "rank_accuracy", "confidence", "epsilon", "target_met"]  # fmt: skip
    rows: list[list[object]] = []
    for r in results:
        for row in r.rows:
            keys = dict(zip(r.key_columns, row.keys, strict=True))
            rows.append(
                [
                    r.label,
                    r.query.statistic,
                    r.query.column,
                    *(_json_value(keys[k]) if k in keys else None for k in key_names),
                    None if row.quantile is None else float(row.quantile),
                    row.value,
                    row.accuracy,
                    row.rank_accuracy,
                    r.confidence,
                    exact_text(r.epsilon),
                    r.target_met,
                ]
            )
    return header, rows


def results_json(results: Sequence[QueryResult]) -> dict[str, Any]:
    """The columnar JSON form: ``{"queries": [QueryResult.as_dict(), ...], "epsilon": total}``."""
    total = sum((r.epsilon for r in results), Fraction(0))
    return {"queries": [r.as_dict() for r in results], "epsilon": exact_text(total)}


def write_results(results: Sequence[QueryResult], folder: str | Path) -> tuple[Path, ...]:
    """Write ``results.csv`` (long form), ``results.parquet`` (the same table, typed) and
    ``results.json`` (columnar) into ``folder``; each file appears whole or not at all (written
    to a temporary file, then renamed). Returns their paths."""
    out = Path(folder)
    header, rows = long_table(results)
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow(["" if v is None else v for v in row])
    paths = [
        _atomic(out / "results.csv", text.getvalue().encode("utf-8")),
        _atomic(out / "results.parquet", _parquet_bytes(header, rows)),
        _atomic(
            out / "results.json",
            (json.dumps(results_json(results), indent=2, default=str) + "\n").encode("utf-8"),
        ),
    ]
    return tuple(paths)


def _parquet_bytes(header: list[str], rows: list[list[object]]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrays = []
    for i, _name in enumerate(header):
        column = [row[i] for row in rows]
        built = arrow_column(column)
        if built is not None:
            arrays.append(built)
            continue
        try:
            arrays.append(pa.array(column))
        except (pa.ArrowInvalid, pa.ArrowTypeError):  # keys of several types: keep them as text
            arrays.append(pa.array([None if v is None else str(v) for v in column]))
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_arrays(arrays, names=header), buf)
    return buf.getvalue()


_FLOAT_INT = 1 << 53  # an int mixed with floats converts exactly below this
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def arrow_column(values: Sequence[object]) -> Any:
    """The Arrow array ``pyarrow.array(values)`` infers, built from its buffers for the value
    types a result table holds (None, bool, int64, float, int mixed with float, str), so that
    writing results.parquet does not make pyarrow import pandas (~0.25 s at a fresh start);
    None for anything else (the caller then asks ``pyarrow.array``)."""
    import numpy as np
    import pyarrow as pa

    kinds = {type(v) for v in values if v is not None}
    valid = np.array([v is not None for v in values], dtype=bool)
    n = len(values)
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little").tobytes())
    nulls = n - int(valid.sum())
    if not kinds:
        return pa.nulls(n)
    if kinds == {bool}:
        bits = np.packbits(np.array([v is True for v in values]), bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), n, [bitmap, pa.py_buffer(bits.tobytes())], nulls)
    if kinds == {int}:
        if not all(INT64_MIN <= v <= INT64_MAX for v in values if isinstance(v, int)):
            return None
        data = np.array([0 if v is None else v for v in values], dtype=np.int64)
        return pa.Array.from_buffers(pa.int64(), n, [bitmap, pa.py_buffer(data)], nulls)
    if kinds <= {int, float}:
        if not all(-_FLOAT_INT <= v <= _FLOAT_INT for v in values if type(v) is int):
            return None
        numbers = [float(v) if isinstance(v, (int, float)) else 0.0 for v in values]
        data = np.array(numbers, dtype=np.float64)
        return pa.Array.from_buffers(pa.float64(), n, [bitmap, pa.py_buffer(data)], nulls)
    if kinds == {str}:
        encoded = [v.encode("utf-8") if isinstance(v, str) else b"" for v in values]
        offsets = np.zeros(n + 1, dtype=np.int64)
        offsets[1:] = np.cumsum([len(b) for b in encoded], dtype=np.int64)
        if offsets[-1] >= 1 << 31:
            return None
        offsets = offsets.astype(np.int32)
        data = pa.py_buffer(b"".join(encoded))
        return pa.Array.from_buffers(pa.string(), n, [bitmap, pa.py_buffer(offsets), data], nulls)
    return None


def _umask() -> int:
    """The process's umask (read once: setting it back at once is the only portable way)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


#: New result files get the mode an ordinary ``open`` would give them (0666 less the umask),
#: not the private 0600 of a temporary file.
_FILE_MODE = 0o666 & ~_umask()


def _atomic(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` whole or not at all, with the user's umask."""
    fd, tmp = tempfile.mkstemp(prefix="." + path.name, dir=path.parent)
    try:
        os.fchmod(fd, _FILE_MODE)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
