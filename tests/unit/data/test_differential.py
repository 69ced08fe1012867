"""Differential tests, short version (DESIGN of the release: nothing but the noisy numbers may
depend on the data; docs/data.md, "What is public, what is protected"; issue 21 item 8).

For every awkward-row kind of ``tests/differential.py`` (invalid UTF-8, NUL, integers near 2^63,
NaN text, empty cells, wrong types, undeclared keys, null units, bad dates, long text, extra or
missing fields, quotes, CRLF, …), a random D (fixed seed) and D' = D plus one such row are
released on DuckDB through one source and front end, rotating over CSV with and without a header,
Parquet, pandas and Arrow through the API, the CLI (``snapdp release``, text and JSON) and a plan
run (``snapdp run``, its files written): the exit status, the messages with numbers masked, the
notes, flags, mechanisms, keys, the output's shape and the files written must be the same. The
long version: ``python benchmarks/differential.py --examples N``. Spark:
``tests/unit/data/engines/test_differential_spark.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.differential import (
    AWKWARD,
    Case,
    Outcome,
    differences,
    mask_doc,
    mask_text,
    run_case,
)

pytestmark = pytest.mark.slow

SEED = 20_260_521
#: kinds also run through the CLI (text and JSON) and through a plan run (files written)
CLI = {"invalid utf-8 key": "csv", "extra field": "csv no header", "near 2^63": "parquet"}
PLAN = {"unbalanced quote": "csv no header"}
#: kinds also run on a second source through the API (where they once leaked)
MORE = {"invalid utf-8 key": "parquet", "python types": "pandas"}
API_SOURCES = ("csv", "csv no header", "parquet", "pandas", "arrow")
_CACHE: dict[object, Outcome] = {}


def _cases() -> list[Case]:
    out = []
    for i, kind in enumerate(sorted(AWKWARD)):
        out.append(Case(SEED, kind, API_SOURCES[i % len(API_SOURCES)], "api"))
        if kind in CLI:
            out.append(Case(SEED, kind, CLI[kind], "cli"))
        if kind in PLAN:
            out.append(Case(SEED, kind, PLAN[kind], "plan"))
        if kind in MORE and MORE[kind] != out[-1].source:
            out.append(Case(SEED, kind, MORE[kind], "api"))
    return out


def test_the_registry_covers_the_issue() -> None:
    """The awkward kinds the issue names are all registered (others may add more)."""
    wanted = {
        "invalid utf-8 key", "NUL", "near 2^63", "NaN and inf text", "empty cells",
        "whitespace cells", "wrong types", "undeclared keys", "null unit", "bad dates",
        "long text", "extra field", "missing field", "quote inside", "CRLF", "lone surrogate",
    }  # fmt: skip
    assert wanted <= set(AWKWARD)


@pytest.mark.parametrize("case", _cases(), ids=str)
def test_d_and_d_plus_one_awkward_row_look_the_same(case: Case, tmp_path: Path) -> None:
    d, d2 = run_case(case, tmp_path, cache=_CACHE)
    assert not differences(d, d2), differences(d, d2)
    assert d.status in ("ok", 0, (0, 0)), d  # the release itself works on D


def test_the_comparison_masks_only_the_noisy_numbers() -> None:
    """Values and ± are masked; a note, a flag, a key, a mechanism or the shape is not."""
    doc = {
        "keys": {"g": ["a", "b"]},
        "value": [1.5, 2.5],
        "accuracy": [3.0, 3.0],
        "notes": ["rows with a null u: dropped"],
        "flags": [],
        "mechanisms": {"count": {"sensitivity": "1"}},
    }

    def outcome(**change: object) -> Outcome:
        return Outcome(0, mask_text("count 12.5 ± 3"), mask_doc({**doc, **change}, "/x"))

    assert not differences(outcome(), outcome(value=[7.0, -1.0], accuracy=[9.0, 9.0]))
    for change in (
        {"notes": ["rows with a null u: dropped", "one more"]},
        {"flags": [{"code": "almost_pure_noise"}]},
        {"keys": {"g": ["a", "b", "c"]}},
        {"mechanisms": {"count": {"sensitivity": "2"}}},
        {"value": [1.5, 2.5, 3.5]},
    ):
        assert differences(outcome(), outcome(**change)), change
    assert mask_text("1,234.5 rows in /x/data.csv", "/x/data.csv") == "# rows in DATA"
    assert differences(Outcome(0, "a"), Outcome(1, "a"))
