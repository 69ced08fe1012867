"""Differential tests of the page's API (issue 30; docs/ui.md, "What the page sends"): over a
table D and a neighbour D' (one row added, an awkward one from ``tests/awkward_rows.py``, or one
row removed), ``/api/header``, ``/api/preview`` and ``/api/run`` (its noise seeded) must answer
the same, but for the run's noisy values (masked as in ``tests/differential.py``).

Sources rotate over a CSV with a header, one without and a Parquet file; each side has its own
server, ledger (the owner's budget given at start) and output folder, whose paths are masked;
D and D' are written in turn to one path, as the digest of a plan names its source.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.awkward_rows import AWKWARD, Awkward
from tests.differential import (
    SOURCES,
    Source,
    _first_difference,
    make_table,
    mask_doc,
    names_for,
)
from tests.unit.ui._helpers import column, query

from snapdp.data import api as plan_module

pytestmark = pytest.mark.slow

SEED = 20_261_126
ROTATION = ("csv", "csv no header", "parquet")
#: Kinds also run on a second source (they once leaked through a header or a reader).
MORE = {"invalid utf-8 key": "csv", "extra field": "csv", "NUL": "csv no header"}


def _document(source: Source) -> dict[str, Any]:
    """The page's document over D: keys, bounds, a privacy unit with its bounds; a count by
    text key, a sum by integer key and a mean, in fixed shares of ε."""
    n = names_for(source)
    data = {
        "privacy_unit": n["u"],
        "max_rows_per_unit": "",
        "max_groups_per_unit": "1",
        "max_rows_per_group": "2",
        "total_epsilon": "2",
        "confidence": "",
        "group_size": "",
        "header": "true" if source.header else "false",
        "delimiter": "",
        "encoding": "",
        "column_names": "" if source.header else ", ".join(n.values()),
    }
    return {
        "data": data,
        "columns": [
            column(n["g"], "text", keys="a, b, c"),
            column(n["k"], "integer", keys="0, 1, 2"),
            column(n["v"], "decimal", lower="0", upper="100"),
            column(n["w"], "integer", lower="0", upper="1000"),
        ],
        "queries": [
            query("count", by=n["g"], how="epsilon", value="0.5"),
            query("sum", column=n["w"], by=n["k"], how="epsilon", value="0.5"),
            query("mean", column=n["v"], how="epsilon", value="0.5"),
        ],
    }


def _owner_csv(source: Source) -> dict[str, object]:
    """How the owner says the source is read (``snapdp ui --no-header --csv-columns …``)."""
    if source.header:
        return {}
    return {"header": False, "column_names": tuple(names_for(source).values())}


def _neighbours(kind: str, seed: int) -> tuple[list[dict[str, object]], tuple[int, Awkward] | None]:
    """D's rows and the change making D': an awkward row inserted, or (``remove``) none, then
    D' is D less one row."""
    rng = random.Random(seed)
    rows = make_table(seed, 60)
    if kind == "remove":
        return rows, None
    return rows, (rng.randrange(len(rows) + 1), AWKWARD[kind](rng))


def _answers(
    start_server: Any, folder: Path, source: Source, data: object, seed: int
) -> dict[str, Any]:
    """The masked answers of header, preview and run for one side."""
    assert isinstance(data, Path)
    client = start_server(
        source=str(data),
        ledger=folder / "ledger.sqlite",
        output=folder / "out",
        total_epsilon=Fraction(5),
        csv=_owner_csv(source),
    )
    doc = _document(source)
    header = client.api("header", {"document": doc})
    preview = client.api("preview", {"document": doc})
    out: dict[str, Any] = {
        "header": [header.status, header.json()],
        "preview": [preview.status, preview.json()],
    }
    digest = preview.json().get("digest", "")
    run = client.api("run", {"document": doc, "digest": digest, "nonce": f"n{seed:031d}"})
    answer = run.json()
    if isinstance(answer.get("files"), dict):  # each run's random key: the names only
        answer["files"] = sorted(answer["files"])
    out["run"] = [run.status, answer]
    return _masked(out, str(folder))


def _masked(doc: object, folder: str) -> object:
    masked = mask_doc(doc, folder)
    # the run's folder is named by the clock, the digest covers the server's temporary folder
    # (planning reads no data); the rest of the answer must match
    return _mask_stamps(masked)


def _mask_stamps(doc: object) -> object:
    if isinstance(doc, dict):  # the digest covers the server's own temporary folder
        return {k: "DIGEST" if k == "digest" else _mask_stamps(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_mask_stamps(x) for x in doc]
    if isinstance(doc, str):
        return re.sub(r"run-\d{8}T\d{6}Z(-\d+)?", "run-STAMP", doc)
    return doc


@pytest.fixture
def seeded(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The run's noise seeded (the page's run draws fresh randomness otherwise)."""
    real = plan_module.Plan.run

    def run(self: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("rng", np.random.default_rng(SEED))
        return real(self, **kwargs)

    monkeypatch.setattr(plan_module.Plan, "run", run)
    yield


def _cases() -> list[tuple[str, str]]:
    kinds = [*sorted(AWKWARD), "remove"]
    out = [(kind, ROTATION[i % len(ROTATION)]) for i, kind in enumerate(kinds)]
    out += [(kind, src) for kind, src in MORE.items() if (kind, src) not in out]
    out += [("remove", src) for src in ROTATION if ("remove", src) not in out]
    return out


@pytest.mark.parametrize(("kind", "source_name"), _cases(), ids=lambda x: str(x))
def test_header_preview_and_run_do_not_depend_on_one_row(
    start_server: Any, tmp_path: Path, seeded: None, kind: str, source_name: str
) -> None:
    source = SOURCES[source_name]
    seed = SEED + sum(map(ord, kind))
    rows, extra = _neighbours(kind, seed)
    if extra is None:  # D' = D less one row, at a seeded position
        drop = random.Random(seed).randrange(len(rows))
        sides = {"d": (rows, None), "d2": ([*rows[:drop], *rows[drop + 1 :]], None)}
    else:
        sides = {"d": (rows, None), "d2": (rows, extra)}
    answers = {}
    shared = tmp_path / "source"  # one path for D and D' (the digest names the source)
    shared.mkdir()
    for name, (side_rows, side_extra) in sides.items():
        folder = tmp_path / name
        folder.mkdir()
        data = source.write(side_rows, side_extra, shared)
        answers[name] = _answers(start_server, folder, source, data, seed)
    d, d2 = answers["d"], answers["d2"]
    assert d["header"][0] == 200 and d["preview"][0] == 200 and d["run"][0] == 200, d
    for call in ("header", "preview", "run"):
        assert d[call] == d2[call], _first_difference(d[call], d2[call], call)


def test_the_comparison_sees_a_difference(tmp_path: Path) -> None:
    """The masking keeps what must match: a changed column name or note is not masked."""
    a = {"header": [200, {"columns": ["g", "k"]}], "run": [200, {"results": [{"value": 1}]}]}
    b = {"header": [200, {"columns": ["g", "x"]}], "run": [200, {"results": [{"value": 2}]}]}
    assert _masked(a, str(tmp_path))["run"] == _masked(b, str(tmp_path))["run"]
    assert _masked(a, str(tmp_path))["header"] != _masked(b, str(tmp_path))["header"]
