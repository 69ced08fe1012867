"""``snapdp check`` on a pandas DataFrame names the Python types of the cells a release makes null.

A release converts an ``object`` column cell by cell for its declared type: a ``bytes`` cell in a
text column (or a float in one, an infinite ``Decimal`` in a decimal column, a string that is
not valid Unicode) becomes null before the engine reads it. ``check`` counted such cells as null
cells and did not say why; it now counts them as cells that are not values of the type and names
the column as holding them (as it names a Parquet BLOB column declared text). Releases still make
each such cell null, exactly as a missing cell.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd

from snapdp.data.engines.base import AggregatePlan
from snapdp.data.engines.duckdb.engine import DuckDBEngine
from snapdp.data.model.query import Query
from snapdp.data.model.schema import Column, Schema
from snapdp.data.owner.check import check
from snapdp.data.release.table import PrivateTable

NAMES = ["a", "b", b"\xff", None, "a", b"a", "b", "a"]  # b"a" is not the text "a"
FRAME = pd.DataFrame({"k": NAMES, "n": [1, 2, 3, 4, 5, 6, 7, 8]})
SCHEMA = Schema((Column("k", "text", keys=("a", "b")), Column("n", "integer", 0, 10)))


def _without_bytes() -> pd.DataFrame:
    return FRAME.assign(k=[None if isinstance(x, bytes) else x for x in NAMES])


def test_check_names_a_text_column_holding_bytes() -> None:
    report = check(FRAME, SCHEMA)
    k, n = report.columns
    assert (k.nulls, k.cast_failures, k.examples) == (1, 2, ["\\xff", "a"])
    assert k.stored_as == "pandas object holding bytes" and not report.fits
    assert n.fits and n.stored_as is None
    text = report.to_text()
    assert (
        "a pandas object column holding cells of type bytes, which releases never read as text: "
        "each such cell is null in releases (counted below as not text). Before the release, "
        'decode the bytes to str (pandas: .str.decode("utf-8"))'
    ) in text
    assert "2 cell(s) not text (become null)" in text and "1 null or empty cell(s)" in text
    assert report.to_dict()["columns"][0]["stored_as"] == "pandas object holding bytes"
    # the same frame with those cells missing: they were counted as nulls, and still are
    (k0, _) = check(_without_bytes(), SCHEMA).columns
    assert (k0.nulls, k0.cast_failures, k0.stored_as) == (3, 0, None)
    assert k0.nulls == k.nulls + k.cast_failures


def test_a_release_reads_a_bytes_cell_as_null() -> None:
    """Seeded: the same released values as with the bytes cells missing."""
    queries = [Query("count", by=("k",)), Query("sum", "n", by=("k",)), Query("mean", "n")]

    def shown(frame: pd.DataFrame, seed: int) -> list[Any]:
        table = PrivateTable(frame, SCHEMA, total_epsilon=100, rng=np.random.default_rng(seed))
        return [[(r.keys, r.value) for r in res.rows] for res in table.release(queries, 3)]

    for seed in range(3):
        assert shown(FRAME, seed) == shown(_without_bytes(), seed)
    # the engine's exact counts: the bytes cells are in neither key (3 "a", 2 "b"; b"a" is null)
    plan = AggregatePlan(groupings=(SCHEMA.columns[0],), values=())
    assert DuckDBEngine(FRAME).aggregate(plan).rows == [3, 2]


def test_check_names_every_python_type_a_release_makes_null() -> None:
    frame = pd.DataFrame(
        {
            "t": ["a", 2.5, "\ud800", float("nan"), 7, "a"],
            "d": ["1", "x", Decimal("-Infinity"), float("inf"), Decimal("1.5"), b"3"],
            "c": pd.Categorical([b"x", "y", None, "y", b"x", "y"]),
            "s": pd.array(["a", "\ud800", None, "b", "c", "d"], dtype="string[python]"),
        }
    )
    schema = Schema(
        (Column("t", "text"), Column("d", "decimal"), Column("c", "text"), Column("s", "text"))
    )
    t, d, c, s = check(frame, schema).columns
    # t: 2.5 and the lone surrogate are null in releases; 7 is read as "7"; NaN is missing
    assert (t.nulls, t.cast_failures, t.examples) == (1, 2, ["2.5", "\\ud800"])
    assert t.stored_as == "pandas object holding float, str (not valid Unicode)"
    # d: "x" fails the engine's cast; the Decimal −∞, inf and the bytes never reach it (a finite
    # Decimal is read, by its decimal text)
    assert (d.nulls, d.cast_failures) == (0, 4)
    assert d.examples == ["Decimal('-Infinity')", "inf", "3"]  # the Python cells first, up to 3
    assert d.stored_as == "pandas object holding Decimal (not finite), bytes, float (not finite)"
    assert (c.nulls, c.cast_failures, c.examples) == (1, 2, ["x"])
    assert c.stored_as == "pandas category holding bytes"
    assert (s.nulls, s.cast_failures, s.stored_as) == (
        1,
        1,
        "pandas string holding str (not valid Unicode)",
    )
    assert "convert them to values of the declared type" in check(frame, schema).to_text()


def test_engine_and_python_examples_are_merged() -> None:
    frame = pd.DataFrame({"i": ["x", b"1", "2", "y"]})
    (i,) = check(frame, Schema((Column("i", "integer"),))).columns
    assert (i.nulls, i.cast_failures, i.examples) == (0, 3, ["1", "x", "y"])
    (i,) = check(frame, Schema((Column("i", "integer"),)), examples=2).columns
    assert (i.cast_failures, i.examples) == (3, ["1", "x"])


def test_a_frame_of_values_is_reported_as_before() -> None:
    frame = pd.DataFrame({"k": ["a", None, "b"], "n": [1, 2, None]})
    k, n = check(frame, Schema((Column("k", "text"), Column("n", "integer")))).columns
    assert (k.nulls, k.cast_failures, k.stored_as) == (1, 0, None)
    assert (n.nulls, n.cast_failures, n.stored_as) == (1, 0, None)
