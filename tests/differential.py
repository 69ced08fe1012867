"""Differential testing of releases: D against D' = D plus one awkward row (docs/data.md, "What
is public, what is protected"; issue 21 item 8).

A release over D' = D + r must look exactly like one over D but for its noisy numbers, whatever
r holds. This module builds the pair and compares everything a release shows:

* :data:`~tests.awkward_rows.AWKWARD` — the registry of awkward-row kinds (invalid UTF-8, NUL,
  integers near 2^63, NaN text, empty cells, wrong types, undeclared keys, null units, bad dates,
  long text, extra or missing fields, quotes, CRLF, …), in ``tests/awkward_rows.py``; add a kind
  there with ``@awkward("name")``.
* :func:`make_table` — a random D (rows of typed Python values) from a seed.
* :data:`SOURCES` — how D and D' are written or held: a CSV with or without header, a Parquet
  file, a pandas DataFrame, an Arrow table.
* :func:`run_case` — one release over D and one over D' through a front end (``cli``: ``snapdp
  release`` in click's runner, text and JSON; ``api``: :class:`~snapdp.data.PrivateTable`;
  ``plan``: ``snapdp run`` of a TOML plan writing its files) on an engine (``duckdb`` or
  ``spark``); the :class:`Outcome` of each holds the exit status, the output with every number
  masked, the JSON with the noisy values masked (notes, flags, mechanisms, keys and the shape
  kept), and the files written. :func:`differences` lists what differs.

The short version runs in the suite (``tests/unit/data/test_differential.py``), the long one in
``benchmarks/differential.py --examples N``.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from tests.awkward_rows import (
    AWKWARD,
    COLUMNS,
    DATES,
    G_KEYS,
    K_KEYS,
    TOP,
    Awkward,
    base_row,
    csv_field,
)

#: Whether an awkward row may be the first line of a CSV without a header: it may, since the
#: columns of a header-less CSV are declared (`column_names`), so its first line is a record like
#: any other (docs/data.md, "CSV input").
FIRST_LINE_OK = True

EPSILON = "1"


# -- the table D and its sources ------------------------------------------------------------------
def make_table(seed: int, n: int | None = None) -> list[dict[str, object]]:
    """A random D: ``n`` plain rows (default: 60 to 160) from ``seed``."""
    rng = random.Random(seed)
    size = n if n is not None else rng.randrange(60, 161)
    units = max(2, size // 3)
    return [base_row(rng, units) for _ in range(size)]


def _csv_bytes(
    rows: list[dict[str, object]], extra: tuple[int, Awkward] | None, header: bool
) -> bytes:
    lines = [b",".join(csv_field(r.get(c)) for c in COLUMNS) for r in rows]
    if extra is not None:
        pos, row = extra
        line = row.csv_line
        if line is None:
            line = b",".join(csv_field(row.cells.get(c)) for c in COLUMNS)
        lines.insert(pos, line)
    head = [",".join(COLUMNS).encode()] if header else []
    return b"\n".join(head + lines) + b"\n"


def _arrow_text(cell: object) -> bytes | None:
    if isinstance(cell, bytes):
        return cell
    if isinstance(cell, str):
        return cell.encode("utf-8", "surrogatepass")
    return None


def _arrow_int(cell: object) -> int | None:
    if isinstance(cell, int) and not isinstance(cell, bool) and -(1 << 63) <= cell <= TOP:
        return cell
    return None


def _arrow_float(cell: object) -> float | None:
    if isinstance(cell, (int, float)) and not isinstance(cell, bool):
        try:
            return float(cell)
        except OverflowError:
            return None
    return None


def _arrow_date(cell: object) -> dt.date | None:
    return cell if isinstance(cell, dt.date) else None


def arrow_table(rows: list[dict[str, object]]) -> Any:
    """Rows as a typed Arrow table: text columns may hold any bytes (a binary array viewed as
    strings); a cell that does not fit its column's type is null."""
    import pyarrow as pa

    def text(name: str) -> Any:
        return pa.array([_arrow_text(r.get(name)) for r in rows], pa.binary()).view(pa.string())

    return pa.table(
        {
            "g": text("g"),
            "k": pa.array([_arrow_int(r.get("k")) for r in rows], pa.int64()),
            "v": pa.array([_arrow_float(r.get("v")) for r in rows], pa.float64()),
            "w": pa.array([_arrow_int(r.get("w")) for r in rows], pa.int64()),
            "h": pa.array([_arrow_int(r.get("h")) for r in rows], pa.int64()),
            "d": pa.array([_arrow_date(r.get("d")) for r in rows], pa.date32()),
            "u": text("u"),
        }
    )


def pandas_frame(rows: list[dict[str, object]]) -> Any:
    """Rows as a pandas DataFrame: a numeric column is int64/float64 while every cell fits, else
    an object column holding the cells as they are (as a user's frame would)."""
    import pandas as pd

    columns: dict[str, Any] = {}
    for name in COLUMNS:
        cells = [r.get(name) for r in rows]
        if name in ("k", "w", "h") and all(_arrow_int(c) is not None for c in cells):
            columns[name] = pd.Series(cells, dtype="int64")
        elif name == "v" and all(type(c) in (int, float) for c in cells):
            columns[name] = pd.Series(cells, dtype="float64")
        else:
            columns[name] = pd.Series(cells, dtype=object)
    return pd.DataFrame(columns)


@dataclass(frozen=True)
class Source:
    """How D is held: ``write(rows, awkward, folder)`` returns the source (a path or a frame)."""

    name: str
    header: bool
    files: bool  # a file on disk (the CLI can read it)
    write: Callable[[list[dict[str, object]], tuple[int, Awkward] | None, Path], object]


def _write_csv(header: bool) -> Callable[..., object]:
    def write(
        rows: list[dict[str, object]], extra: tuple[int, Awkward] | None, folder: Path
    ) -> object:
        path = folder / "data.csv"
        path.write_bytes(_csv_bytes(rows, extra, header))
        return path

    return write


def _with_row(
    rows: list[dict[str, object]], extra: tuple[int, Awkward] | None
) -> list[dict[str, object]]:
    if extra is None:
        return rows
    pos, row = extra
    return [*rows[:pos], dict(row.cells), *rows[pos:]]


def _write_parquet(
    rows: list[dict[str, object]], extra: tuple[int, Awkward] | None, folder: Path
) -> object:
    import pyarrow.parquet as pq

    path = folder / "data.parquet"
    pq.write_table(arrow_table(_with_row(rows, extra)), path)
    return path


SOURCES: dict[str, Source] = {
    "csv": Source("csv", True, True, _write_csv(True)),
    "csv no header": Source("csv no header", False, True, _write_csv(False)),
    "parquet": Source("parquet", True, True, _write_parquet),
    "pandas": Source("pandas", True, False, lambda r, e, f: pandas_frame(_with_row(r, e))),
    "arrow": Source("arrow", True, False, lambda r, e, f: arrow_table(_with_row(r, e))),
}


def names_for(source: Source) -> dict[str, str]:
    """The column names a declaration uses: the header's, or declared column0, column1, …
    without one."""
    if source.header:
        return {c: c for c in COLUMNS}
    return {c: f"column{i}" for i, c in enumerate(COLUMNS)}


# -- the release: declaration, front ends, outcomes -----------------------------------------------
def schema_for(source: Source) -> Any:
    """The declaration of D (public): typed keys, bounds, a privacy unit and its bounds."""
    from snapdp.data import Column, ContributionBounds, Schema
    from snapdp.data.model.schema import CsvOptions

    n = names_for(source)
    return Schema(
        (
            Column(n["g"], "text", keys=G_KEYS),
            Column(n["k"], "integer", keys=K_KEYS),
            Column(n["v"], "decimal", Fraction(0), Fraction(100)),
            Column(n["w"], "integer", Fraction(0), Fraction(1000)),
            Column(n["h"], "integer", Fraction(0), Fraction(TOP)),
            Column(n["d"], "date", keys=DATES),
        ),
        privacy_unit=n["u"],
        bounds=ContributionBounds(max_groups_per_unit=1, max_rows_per_group=2),
        csv=CsvOptions(
            header=source.header,
            column_names=None if source.header else tuple(n[c] for c in COLUMNS),
        ),
    )


def queries_for(source: Source) -> list[Any]:
    """The statistics released: a count by key, a sum by integer key, a mean by date and
    quantiles of a column reaching 2^63 − 1 (the CLI adds a variance)."""
    from snapdp.data import Query

    n = names_for(source)
    return [
        Query("count", by=(n["g"],)),
        Query("sum", n["w"], by=(n["k"],)),
        Query("mean", n["v"], by=(n["d"],)),
        Query("quantiles", n["h"], quantiles=(Fraction(1, 2),), resolution=Fraction(TOP, 64)),
    ]


def cli_args(source: Source, quantiles: bool = False) -> list[str]:
    """The same declaration and statistics as ``snapdp release`` flags (grouped by g). The
    quantiles over 3 × 1024 leaves take seconds to plan and aggregate: only with ``quantiles``."""
    n = names_for(source)
    dates = ",".join(d.isoformat() for d in DATES)
    return [
        "--epsilon", EPSILON,
        "--column", f"{n['g']}:text", "--keys", f"{n['g']}=" + ",".join(G_KEYS),
        "--column", f"{n['k']}:integer", "--keys", f"{n['k']}=0,1,2",
        "--column", f"{n['d']}:date", "--keys", f"{n['d']}={dates}",
        "--column", f"{n['h']}:integer",
        "--count", "--sum", f"{n['w']}:0:1000", "--mean", f"{n['v']}:0:100",
        "--var", f"{n['v']}:0:100",
        *(["--quantiles", f"{n['h']}:0:{TOP}:0.5"] if quantiles else []),
        "--by", n["g"], "--privacy-unit", n["u"],
        "--max-groups-per-unit", "1", "--max-rows-per-group", "2",
        *([] if source.header else ["--no-header", "--csv-columns", ",".join(n.values())]),
    ]  # fmt: skip


def plan_toml(source: Source, data_name: str) -> str:
    """The same release as a TOML plan (docs/plans.md) reading ``data_name`` beside it."""
    n = names_for(source)
    dates = ", ".join(f'"{d.isoformat()}"' for d in DATES)
    return f"""[data]
source = "{data_name}"
privacy_unit = "{n["u"]}"
max_groups_per_unit = 1
max_rows_per_group = 2
total_epsilon = 2
header = {str(source.header).lower()}
{"" if source.header else "column_names = [" + ", ".join(f'"{v}"' for v in n.values()) + "]"}

[columns]
{n["g"]} = {{ type = "text", keys = ["a", "b", "c"] }}
{n["k"]} = {{ type = "integer", keys = [0, 1, 2] }}
{n["v"]} = {{ type = "decimal", lower = 0, upper = 100 }}
{n["w"]} = {{ type = "integer", lower = 0, upper = 1000 }}
{n["h"]} = {{ type = "integer", lower = 0, upper = {TOP} }}
{n["d"]} = {{ type = "date", keys = [{dates}] }}

[[query]]
statistic = "count"
by = ["{n["g"]}"]
epsilon = 0.5

[[query]]
statistic = "mean"
column = "{n["v"]}"
by = ["{n["d"]}"]
epsilon = 0.5

[[query]]
statistic = "quantiles"
column = "{n["h"]}"
quantiles = [0.5]
resolution = {1 << 57}
epsilon = 1
"""


@dataclass
class Outcome:
    """What one release showed, its noisy numbers masked."""

    status: object  # exit code, or "ok" / the exception's class
    text: str = ""  # the output or message, numbers masked
    doc: object = None  # the JSON document, noisy values masked
    files: dict[str, object] = field(default_factory=dict)  # file name → masked summary


#: Fields computed from released values. ``interval``: a tree quantile's released leaf, so it
#: moves with the noise (`snapdp run` draws from the CSPRNG: the plan front has no seed).
_NOISY = frozenset(
    {"value", "accuracy", "rank_accuracy", "remaining", "spent", "independent_value", "interval"}
)

#: Text whose numbers come from released values (a two-phase target's note: the ± stated and the
#: rows of the smallest released count); its words must not differ.
_FROM_NOISE = frozenset({"target"})


def mask_text(text: str, *paths: str) -> str:
    """Text with the data's paths, every number and table rules masked, spaces collapsed."""
    for p in sorted(paths, key=len, reverse=True):
        text = text.replace(p, "DATA")
    text = re.sub(r"[-−]?[0-9](?:[0-9.]|,(?=[0-9]))*(?:[eE][-+]?[0-9]+)?", "#", text)
    text = re.sub("[\u2500-\u257f]+", " ", text)
    return re.sub(r"\s+", " ", text).strip()


def mask_doc(doc: object, *paths: str) -> object:
    """A JSON document with the noisy values (value, ±) replaced by their shape; paths masked."""
    if isinstance(doc, dict):
        out = {}
        for k, v in doc.items():
            if k in _NOISY:
                out[k] = ["#"] * len(v) if isinstance(v, list) else "#"
            elif k in _FROM_NOISE and isinstance(v, str):
                out[k] = mask_text(v, *paths)  # its words kept, its numbers from released values
            else:
                out[k] = mask_doc(v, *paths)
        return out
    if isinstance(doc, list):
        return [mask_doc(x, *paths) for x in doc]
    if isinstance(doc, str):
        for p in sorted(paths, key=len, reverse=True):
            doc = doc.replace(p, "DATA")
        return doc
    return doc


def _invoke(args: list[str]) -> tuple[int, str]:
    from click.testing import CliRunner

    from snapdp.cli import main

    result = CliRunner().invoke(main, args, env={"COLUMNS": "400"})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return -1, f"unhandled {type(result.exception).__name__}"  # a traceback: a failure
    return result.exit_code, result.output


def run_cli(source: Source, path: Path, engine: str, quantiles: bool = False) -> Outcome:
    """``snapdp release`` on ``path``: the text output and the JSON."""
    args = ["release", str(path), *cli_args(source, quantiles), "--engine", engine]
    code, text = _invoke(args)
    jcode, out = _invoke([*args, "--json"])
    try:
        doc: object = json.loads(out)
    except json.JSONDecodeError:
        doc = mask_text(out, str(path), str(path.parent))
    return Outcome(
        (code, jcode),
        mask_text(text, str(path), str(path.parent)),
        mask_doc(doc, str(path), str(path.parent)),
    )


def run_plan(source: Source, path: Path) -> Outcome:
    """``snapdp run`` of the plan beside ``path``, writing its files into ``out``."""
    plan = path.parent / "plan.toml"
    plan.write_text(plan_toml(source, path.name), encoding="utf-8")
    out = path.parent / "out"
    ledger = path.parent / "budget.sqlite"
    code, text = _invoke(
        [
            "run",
            str(plan),
            "--ledger",
            str(ledger),
            "--total-epsilon",
            "1000",
            "--output",
            str(out),
            "--json",
        ]
    )
    here = str(path.parent)
    try:
        doc: object = mask_doc(json.loads(text), here)
    except json.JSONDecodeError:
        doc = mask_text(text, here)
    files: dict[str, object] = {}
    if out.is_dir():
        for f in sorted(out.iterdir()):
            files[f.name] = _file_summary(f, here)
    return Outcome(code, mask_text(text, here), doc, files)


def _file_summary(path: Path, *paths: str) -> object:
    """A written file without its noisy numbers: JSON masked, CSV header and line count, Parquet
    schema and row count, HTML masked."""
    if path.suffix == ".json":
        return mask_doc(json.loads(path.read_text(encoding="utf-8")), *paths)
    if path.suffix == ".csv":
        lines = path.read_text(encoding="utf-8").splitlines()
        return (lines[:1], len(lines))
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(path)
        return (str(table.schema), table.num_rows)
    html = path.read_text(encoding="utf-8", errors="replace")
    html = re.sub(r"<svg.*?</svg>", "<svg/>", html, flags=re.DOTALL)  # figures: noisy, random ids
    html = re.sub(r"data:image/[a-z]+;base64,[A-Za-z0-9+/=]+", "data:image", html)
    return mask_text(html, *paths)


def run_api(source: Source, data: object, engine: str, spark: Any = None) -> Outcome:
    """``PrivateTable(...).release`` over ``data`` on ``engine``."""
    import numpy as np

    from snapdp.data import PrivateTable
    from snapdp.errors import LedgerError, ParameterError, PrivacyBudgetError

    label = [str(data), str(Path(str(data)).parent)] if isinstance(data, Path) else []
    try:
        if engine == "spark":
            from snapdp.data.engines.spark.engine import SparkEngine

            eng: Any = SparkEngine(data, spark=spark, csv=schema_for(source).csv)
        else:
            from snapdp.data.engines.duckdb.engine import DuckDBEngine

            eng = DuckDBEngine(data, csv=schema_for(source).csv)
        table = PrivateTable(
            schema=schema_for(source), engine=eng, total_epsilon=1, rng=np.random.default_rng(1)
        )
        results = table.release(queries_for(source), Fraction(EPSILON))
    except (ParameterError, PrivacyBudgetError, LedgerError) as exc:
        return Outcome(type(exc).__name__, mask_text(str(exc), *label))
    except Exception as exc:
        return Outcome(f"unhandled {type(exc).__name__}", "")
    docs = [r.as_dict() for r in results]
    return Outcome("ok", "", mask_doc(json.loads(json.dumps(docs, default=str)), *label))


@dataclass(frozen=True)
class Case:
    """One differential case: D from ``seed``, the awkward kind, where it is inserted, the source,
    the front end (cli, api, plan) and the engine."""

    seed: int
    kind: str
    source: str
    front: str
    engine: str = "duckdb"
    quantiles: bool = False  # the CLI's quantiles too (slow: the long version only)

    def __str__(self) -> str:
        return f"{self.kind} | {self.source} | {self.front} | {self.engine} | seed {self.seed}"


def run_case(
    case: Case, folder: Path, spark: Any = None, cache: dict[object, Outcome] | None = None
) -> tuple[Outcome, Outcome]:
    """The outcomes of the release over D and over D' = D + the awkward row. D depends on the
    seed only (not on the kind): with ``cache``, D's outcome is reused across kinds."""
    rng = random.Random(case.seed)
    rows = make_table(case.seed)
    row = AWKWARD[case.kind](rng)
    source = SOURCES[case.source]
    first = 0 if (FIRST_LINE_OK or source.header) else 1
    pos = rng.randrange(first, len(rows) + 1)
    outcomes = []
    key = (case.seed, case.source, case.front, case.engine, case.quantiles)
    pairs: list[tuple[str, tuple[int, Awkward] | None]] = [("d", None), ("d2", (pos, row))]
    if cache is not None and key in cache:
        outcomes.append(cache[key])
        pairs = pairs[1:]
    for name, extra in pairs:
        here = folder / name
        if here.exists():
            shutil.rmtree(here)
        here.mkdir(parents=True)
        data = source.write(rows, extra, here)
        if case.front == "cli":
            assert isinstance(data, Path)
            outcomes.append(run_cli(source, data, case.engine, case.quantiles))
        elif case.front == "plan":
            assert isinstance(data, Path)
            outcomes.append(run_plan(source, data))
        else:
            outcomes.append(run_api(source, data, case.engine, spark))
    if cache is not None:
        cache[key] = outcomes[0]
    return outcomes[0], outcomes[1]


def differences(a: Outcome, b: Outcome) -> list[str]:
    """What differs between two outcomes (empty when they look the same)."""
    out = []
    for name in ("status", "text", "doc", "files"):
        x, y = getattr(a, name), getattr(b, name)
        if x != y:
            out.append(f"{name}: {_first_difference(x, y)}")
    return out


def _first_difference(x: object, y: object, where: str = "") -> str:
    if isinstance(x, dict) and isinstance(y, dict):
        for k in list(x) + [k for k in y if k not in x]:
            if x.get(k) != y.get(k):
                return _first_difference(x.get(k), y.get(k), f"{where}.{k}")
    if isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
        for i, (p, q) in enumerate(zip(x, y, strict=True)):
            if p != q:
                return _first_difference(p, q, f"{where}[{i}]")
    if isinstance(x, str) and isinstance(y, str):
        i = next((i for i, (p, q) in enumerate(zip(x, y, strict=False)) if p != q), len(x))
        lo, hi = max(0, i - 60), i + 60
        return f"{where or 'text'} at {i}: D {x[lo:hi]!r} / D' {y[lo:hi]!r}"
    return f"{where}: D {str(x)[:300]!r} / D' {str(y)[:300]!r}"


def cases(
    examples: int, seed: int, engines: tuple[str, ...] = ("duckdb",), quantiles: bool = False
) -> Iterator[Case]:
    """``examples`` random cases: each awkward kind in turn, the source, front end and engine
    drawn at random (a front end that reads files only with a file source)."""
    rng = random.Random(seed)
    kinds = sorted(AWKWARD)
    for i in range(examples):
        source = rng.choice(sorted(SOURCES))
        engine = rng.choice(engines)
        fronts = ["api"]
        if SOURCES[source].files:
            fronts += ["cli"] + (["plan"] if engine == "duckdb" else [])
        if engine == "spark" and source == "arrow":
            source = "pandas"
        front = rng.choice(fronts)
        yield Case(rng.randrange(1 << 30), kinds[i % len(kinds)], source, front, engine, quantiles)
