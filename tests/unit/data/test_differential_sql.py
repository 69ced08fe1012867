"""Differential tests of SQL releases, short version (docs/sql.md; docs/data.md, "What is
public, what is protected"; issue 30).

For every awkward-row kind of ``tests/awkward_rows.py``, a random D (fixed seed) and D' = D plus
one such row (one privacy unit's change) are released by a SQL query with WHERE, HAVING,
ORDER BY, OPTIONS and CLAMP or ``contribution_bounds_per_group`` (``tests/differential_sql.py``),
rotating over the queries, over ``snapdp sql`` (text and JSON) and ``PrivateTable.sql``, and over
CSV with and without a header, Parquet, pandas and Arrow: the exit status, the messages with
numbers masked, the notes, flags, mechanisms, keys and the output's shape must be the same. The
long version: ``python benchmarks/differential.py --sql --examples N``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.awkward_rows import AWKWARD
from tests.differential import differences
from tests.differential_sql import API_SOURCES, FILE_SOURCES, SQLS, SqlCase, run_sql_case

pytestmark = pytest.mark.slow

SEED = 20_261_126


def _cases() -> list[SqlCase]:
    out = []
    for i, kind in enumerate(sorted(AWKWARD)):
        front = ("cli", "api")[i % 2]
        sources = FILE_SOURCES if front == "cli" else API_SOURCES
        out.append(SqlCase(SEED + i, kind, sources[(i // 2) % len(sources)], front, i % len(SQLS)))
    return out


def test_every_query_and_front_end_is_covered() -> None:
    cases = _cases()
    assert {c.query for c in cases} == set(range(len(SQLS)))
    assert {(c.front, c.source) for c in cases} >= {("cli", s) for s in FILE_SOURCES}
    assert {c.source for c in cases if c.front == "api"} == set(API_SOURCES)


@pytest.mark.parametrize("case", _cases(), ids=str)
def test_sql_over_d_and_d_plus_one_unit_look_the_same(case: SqlCase, tmp_path: Path) -> None:
    d, d2 = run_sql_case(case, tmp_path)
    assert not differences(d, d2), differences(d, d2)
    assert d.status in ("ok", (0, 0)), d  # the release itself works on D
