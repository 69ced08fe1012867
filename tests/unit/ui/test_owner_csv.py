"""How the source is read is the owner's (docs/ui.md, "How the source is read"): `header`,
`delimiter` and `encoding` come from `snapdp ui`'s flags or its plan file, never from the page's
document, which they replace in every call. Was: a page document claiming `header = true` for a
headerless CSV got its first record back from `/api/header` as column names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from tests.unit.ui._helpers import SENTINEL_TEXT, document

from snapdp.cli import main
from snapdp.errors import ParameterError
from snapdp.ui.server import UiConfig, UiServer

PLAN = """[data]
source = "people.csv"
header = false
column_names = ["pid", "age", "sex", "income", "city"]
total_epsilon = 1

[columns]
age = { type = "integer", lower = 0, upper = 100 }

[[query]]
statistic = "count"
epsilon = 0.5
"""
NAMES = ["pid", "age", "sex", "income", "city"]
#: What a page may claim about the file; none of it is honoured.
CLAIMS = (
    {},
    {"header": "true"},
    {"header": "true", "delimiter": ";", "encoding": "latin-1"},
    {"header": "false", "column_names": "x, y, z, v, w"},
)


def _headerless(folder: Path, first: str) -> Path:
    """A headerless CSV whose first record is ``first``, the rest alike."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "people.csv"
    rows = [first] + [f"{i},{20 + i},{i % 2},{1000 + i},Springfield" for i in range(1, 30)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    (folder / "plan.toml").write_text(PLAN, encoding="utf-8")
    return path


def _headers(client: Any) -> list[tuple[int, bytes]]:
    out = []
    for claim in CLAIMS:
        doc = document()
        doc["data"].update(claim)
        r = client.api("header", {"document": doc})
        out.append((r.status, r.body))
    return out


@pytest.mark.parametrize("owner", ["plan", "flags"])
def test_a_page_claiming_a_header_gets_no_record_of_a_headerless_file(
    start_server: Any, tmp_path: Path, owner: str
) -> None:
    """D and D′ differ in their first record (the one a header would be): whatever the page's
    document claims, `/api/header` answers the owner's declared names, the same for both."""
    answers = []
    for side, first in (
        ("d", f"0,41,1,{SENTINEL_TEXT},Shelbyville"),
        ("d2", "0,42,0,7,Ogdenville"),
    ):
        source = _headerless(tmp_path / side, first)
        if owner == "plan":  # the plan file given to `snapdp ui` says header = false
            client = start_server(plan=source.with_name("plan.toml"), output=tmp_path / side)
        else:  # `snapdp ui --no-header --csv-columns pid,age,sex,income,city`
            csv = {"header": False, "column_names": tuple(NAMES)}
            client = start_server(source=str(source), output=tmp_path / side, csv=csv)
        got = _headers(client)
        for status, body in got:
            assert status == 200 and body == b'{"columns": ["pid", "age", "sex", "income", "city"]}'
            for value in (SENTINEL_TEXT, "Shelbyville", "Ogdenville", "41"):
                assert value.encode() not in body
        answers.append(got)
    assert answers[0] == answers[1]


def test_the_owners_options_replace_the_pages_in_every_call(
    start_server: Any, tmp_path: Path
) -> None:
    """Preview, export, load and state carry the owner's CSV options: the page's claims change
    neither the digest nor the exported plan file; the page shows the owner's read-only."""
    source = _headerless(tmp_path, "0,41,1,5,Shelbyville")
    client = start_server(plan=source.with_name("plan.toml"), output=tmp_path / "out")
    state = client.api("state", {}).json()
    assert state["csv"] == {
        "header": False,
        "delimiter": ",",
        "encoding": "utf-8",
        "column_names": NAMES,
    }
    assert state["document"]["data"]["header"] == "false"
    digests, exports = set(), set()
    for claim in CLAIMS:
        doc = state["document"]
        doc = {**doc, "data": {**doc["data"], **claim}}
        digests.add(client.api("preview", {"document": doc}).json()["digest"])
        exports.add(client.api("export", {"document": doc}).json()["toml"])
    assert len(digests) == 1 and len(exports) == 1
    (toml,) = exports
    assert "header = false" in toml and 'column_names = ["pid", "age",' in toml
    claimed = PLAN.replace("header = false", 'delimiter = ";"').replace("column_names", "#")
    loaded = client.api("load", {"toml": claimed}).json()["document"]["data"]
    assert (loaded["header"], loaded["delimiter"]) == ("false", "")
    assert loaded["column_names"] == ", ".join(NAMES)


def test_the_owners_no_header_needs_its_columns(tmp_path: Path) -> None:
    """`--no-header` without the columns is refused when `snapdp ui` starts, in one line naming
    `--csv-columns`, before anything is served."""
    source = tmp_path / "people.csv"
    source.write_text("1,2\n", encoding="utf-8")
    with pytest.raises(ParameterError, match="column_names"):
        UiServer(UiConfig(source=str(source), csv={"header": False}))
    result = CliRunner().invoke(
        main, ["ui", "--no-browser", "--no-header", "--source", str(source)]
    )
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and "--csv-columns" in result.output
