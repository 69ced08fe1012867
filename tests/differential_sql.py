"""Differential testing of SQL releases: D against D' = D plus one privacy unit's awkward row
(docs/sql.md; docs/data.md, "What is public, what is protected"; issue 30).

The SQL counterpart of ``tests/differential.py``, whose tables, awkward rows
(``tests/awkward_rows.py``), sources and masking it reuses. A SQL release over D' must look
exactly like one over D but for its noisy numbers, whatever the added row holds. The queries
(:data:`SQLS`) use WHERE, HAVING, ORDER BY, OPTIONS (ε, the declared unit restated, contribution
bounds) and per-aggregate bounds (CLAMP, ``contribution_bounds_per_group``). HAVING and ORDER BY
act on released values, so a threshold or an order on them would differ between D and D' through
the noise alone: here HAVING compares with thresholds no released value can cross, or with a
grouping column, and ORDER BY names grouping columns, so every difference left is a leak.

* :func:`decl_toml` — the declaration file (``[data]``, ``[columns]``) of ``snapdp sql``.
* :func:`run_sql_case` — one release over D and one over D' through ``snapdp sql`` (text and
  JSON, in click's runner) or :meth:`snapdp.data.PrivateTable.sql` (``api``), on DuckDB.
* :func:`sql_cases` — random cases for the long run (``benchmarks/differential.py --sql``); the
  short one is ``tests/unit/data/test_differential_sql.py``.
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from tests.awkward_rows import AWKWARD, DATES, Awkward
from tests.differential import (
    SOURCES,
    Outcome,
    Source,
    _invoke,
    make_table,
    mask_doc,
    mask_text,
    names_for,
)

EPSILON = "1"

#: The queries, over the columns g (text keys), k (integer keys), v (decimal in [0, 100]),
#: w (integer, no declared bounds), d (date keys) and the unit u; ``{g}`` is the column's name in
#: the source (``column0`` … without a header).
SQLS: tuple[str, ...] = (
    "SELECT {g}, COUNT(*) AS n, AVG({v}) AS m FROM people WHERE {v} >= 10 AND "
    "{d} <> DATE '2024-02-29' GROUP BY {g} HAVING n > -1000000000 ORDER BY {g} DESC",
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon = 1, privacy_unit_column = {u}, "
    "max_groups_contributed = 2, max_rows_contributed = 3) {k}, SUM(CLAMP({w}, 0, 1000)) AS s "
    "FROM people WHERE {g} IN ('a', 'b') OR {v} BETWEEN 10 AND 50 GROUP BY {k} HAVING {k} <> 1",
    "SELECT {d}, COUNT({v}) AS c, VAR_POP({v}) AS var, "
    "AVG({w}, contribution_bounds_per_group => (0, 1000)) AS mw FROM people "
    "WHERE NOT ({k} = 0) AND {v} IS NOT NULL GROUP BY {d} ORDER BY 1",
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(max_rows_contributed = 2) MEDIAN({v}) AS med, "
    "COUNT(*) AS n FROM people WHERE {d} >= '2024-02-01' -- a comment, (0, 5)\n"
    "HAVING n < 1000000000 ORDER BY med",
)

#: Sources ``snapdp sql`` reads (files) and those only the API can hold.
FILE_SOURCES = ("csv", "csv no header", "parquet")
API_SOURCES = (*FILE_SOURCES, "pandas", "arrow")


def sql_text(index: int, source: Source) -> str:
    """Query ``index`` of :data:`SQLS` with the source's column names."""
    return SQLS[index].format(**names_for(source))


def decl_toml(source: Source, data_name: str) -> str:
    """The declaration of D for ``snapdp sql`` (docs/sql.md), reading ``data_name`` beside it."""
    n = names_for(source)
    dates = ", ".join(f'"{d.isoformat()}"' for d in DATES)
    names = "column_names = [" + ", ".join(f'"{v}"' for v in n.values()) + "]"
    return f"""[data]
source = "{data_name}"
name = "people"
privacy_unit = "{n["u"]}"
max_groups_per_unit = 1
max_rows_per_group = 2
header = {str(source.header).lower()}
{"" if source.header else names}

[columns]
{n["g"]} = {{ type = "text", keys = ["a", "b", "c"] }}
{n["k"]} = {{ type = "integer", keys = [0, 1, 2] }}
{n["v"]} = {{ type = "decimal", lower = 0, upper = 100 }}
{n["w"]} = "integer"
{n["h"]} = "integer"
{n["d"]} = {{ type = "date", keys = [{dates}] }}
"""


def run_sql_cli(text: str, decl: Path, data: Path) -> Outcome:
    """``snapdp sql`` of ``text``: the text output and the JSON, numbers and paths masked."""
    args = ["sql", text, "--declaration", str(decl), "--epsilon", EPSILON]
    code, out = _invoke(args)
    jcode, jout = _invoke([*args, "--json"])
    paths = (str(data), str(data.parent))
    try:
        doc: object = mask_doc(json.loads(jout), *paths)
    except json.JSONDecodeError:
        doc = mask_text(jout, *paths)
    return Outcome((code, jcode), mask_text(out, *paths), doc)


def run_sql_api(text: str, decl: Path, data: object) -> Outcome:
    """``PrivateTable.sql`` of ``text`` over ``data`` (DuckDB), the declaration from ``decl``."""
    import numpy as np

    from snapdp.data import PrivateTable
    from snapdp.data.engines.duckdb.engine import DuckDBEngine
    from snapdp.data.frontends.toml import load_declaration
    from snapdp.errors import LedgerError, ParameterError, PrivacyBudgetError

    label = [str(data), str(Path(str(data)).parent)] if isinstance(data, Path) else []
    try:
        schema = load_declaration(str(decl)).schema
        table = PrivateTable(
            schema=schema,
            engine=DuckDBEngine(data, csv=schema.csv),
            total_epsilon=1,
            rng=np.random.default_rng(1),
        )
        results = table.sql(text, Fraction(EPSILON))
    except (ParameterError, PrivacyBudgetError, LedgerError) as exc:
        return Outcome(type(exc).__name__, mask_text(str(exc), *label))
    except Exception as exc:
        return Outcome(f"unhandled {type(exc).__name__}", "")
    docs = [r.as_dict() for r in results]
    return Outcome("ok", "", mask_doc(json.loads(json.dumps(docs, default=str)), *label))


@dataclass(frozen=True)
class SqlCase:
    """One case: D from ``seed``, the awkward kind added, the source, the front end (cli, api) and
    the query (an index into :data:`SQLS`)."""

    seed: int
    kind: str
    source: str
    front: str
    query: int

    def __str__(self) -> str:
        where = f"{self.source} | sql {self.front} | query {self.query}"
        return f"{self.kind} | {where} | seed {self.seed}"


def run_sql_case(case: SqlCase, folder: Path) -> tuple[Outcome, Outcome]:
    """The outcomes of the query over D and over D' = D + the awkward row."""
    rng = random.Random(case.seed)
    rows = make_table(case.seed)
    row = AWKWARD[case.kind](rng)
    source = SOURCES[case.source]
    pos = rng.randrange(0, len(rows) + 1)
    text = sql_text(case.query, source)
    outcomes = []
    pairs: list[tuple[str, tuple[int, Awkward] | None]] = [("d", None), ("d2", (pos, row))]
    for name, extra in pairs:
        here = folder / name
        if here.exists():
            shutil.rmtree(here)
        here.mkdir(parents=True)
        data: Any = source.write(rows, extra, here)
        decl = here / "decl.toml"
        data_name = data.name if isinstance(data, Path) else "frame"
        decl.write_text(decl_toml(source, data_name), encoding="utf-8")
        if case.front == "cli":
            outcomes.append(run_sql_cli(text, decl, data))
        else:
            outcomes.append(run_sql_api(text, decl, data))
    return outcomes[0], outcomes[1]


def sql_cases(examples: int, seed: int) -> Iterator[SqlCase]:
    """``examples`` random cases: each awkward kind in turn, the source, front end and query
    drawn at random (the CLI with file sources only)."""
    rng = random.Random(seed)
    kinds = sorted(AWKWARD)
    for i in range(examples):
        front = rng.choice(("cli", "api"))
        source = rng.choice(FILE_SOURCES if front == "cli" else API_SOURCES)
        query = rng.randrange(len(SQLS))
        yield SqlCase(rng.randrange(1 << 30), kinds[i % len(kinds)], source, front, query)
