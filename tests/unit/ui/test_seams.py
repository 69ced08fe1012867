"""The page's seams (issue 30; docs/ui.md): the header call returns column names only, read by the
release's reader; the page spends only from a budget the data owner set; a stalled or vanished
client holds no thread and prints no traceback."""

from __future__ import annotations

import gzip
import json
import socket
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from tests.unit.ui._helpers import document, query, write_people

from snapdp.data.budget.ledger import Ledger
from snapdp.ui import _header as ui_header
from snapdp.ui import _http as ui_http
from snapdp.ui._http import TOKEN_HEADER

MAX_HEADER_NAMES: int = ui_header.MAX_HEADER_NAMES
MAX_NAME_CHARS: int = ui_header.MAX_NAME_CHARS

#: Cells no header answer may hold, in any decoding.
CELLS = ("QXCELLALPHA", "QXCELLBRAVO", "QXCELLCHARLIE", "4242424242")
HEADER = ["pid", "income", "city"]


def _rows() -> list[list[str]]:
    return [[str(i), CELLS[3], CELLS[i % 3]] for i in range(60)]


def _csv_text() -> str:
    return "\n".join(",".join(r) for r in [HEADER, *_rows()]) + "\n"


def _no_cell(body: bytes, *codecs: str) -> None:
    """No cell in the answer: neither as written nor as the file's bytes read in ``codecs``."""
    text = json.loads(body)
    flat = json.dumps(text, ensure_ascii=False)
    for cell in CELLS:
        assert cell not in flat
        for codec in codecs:
            assert cell.encode().decode(codec, "replace") not in flat


@pytest.mark.parametrize(
    ("encoding", "delimiter"),
    [("cp037", b",".decode("cp037")), ("utf-16-le", ","), ("utf_16_le", ","), ("UTF-16", ",")],
)
def test_header_refuses_an_encoding_a_release_refuses(
    start_server: Any, tmp_path: Path, encoding: str, delimiter: str
) -> None:
    """cp037 read every cell as a column name, utf-16-le the whole file as one name: the header
    call reads by the release's rules (utf-8 or latin-1), so it refuses, naming `encoding`."""
    data = tmp_path / "people.csv"
    data.write_text(_csv_text(), encoding="utf-8")
    csv = {"encoding": encoding, "delimiter": delimiter}  # the owner's (docs/ui.md)
    c = start_server(source=str(data), output=tmp_path, csv=csv)
    r = c.api("header", {"document": document()})
    assert r.status == 422, r.body
    error = r.json()["error"]
    assert error["parameter"] == "encoding" and "`encoding`" in error["message"]
    assert "\n" not in error["message"]
    _no_cell(r.body, "cp037", "utf-16-le", "latin-1")


@pytest.mark.parametrize("name", ["people.csv", "people.dat", "people"])
def test_header_of_parquet_not_named_parquet_is_its_schema(
    start_server: Any, tmp_path: Path, name: str
) -> None:
    """A Parquet file is found by its PAR1 magic, not its name: the header call gives the
    schema's names, never the file's bytes (latin-1 once returned them)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = _rows()
    table = pa.table({h: [r[i] for r in rows] for i, h in enumerate(HEADER)})
    data = tmp_path / name
    pq.write_table(table, data)
    c = start_server(source=str(data), output=tmp_path, csv={"encoding": "latin-1"})
    r = c.api("header", {"document": document()})
    assert r.status == 200, r.body
    assert r.json() == {"columns": HEADER}
    _no_cell(r.body, "latin-1")


@pytest.mark.parametrize("target", ["file", "folder"])
def test_header_of_hive_parquet_names_its_folder_columns(
    start_server: Any, tmp_path: Path, target: str
) -> None:
    """A Parquet file under a key=value folder, or the folder above, gives the folders' columns
    too, as a release reads them (the file's schema alone omitted ``county``; a folder was
    refused as a file that cannot be opened)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = _rows()
    folder = tmp_path / "people" / "county=A1"
    folder.mkdir(parents=True)
    pq.write_table(
        pa.table({h: [r[i] for r in rows] for i, h in enumerate(HEADER)}), folder / "p.parquet"
    )
    source = folder / "p.parquet" if target == "file" else tmp_path / "people"
    c = start_server(source=str(source), output=tmp_path / "out")
    r = c.api("header", {"document": document()})
    assert r.status == 200, r.body
    assert r.json() == {"columns": [*HEADER, "county"]}
    _no_cell(r.body, "latin-1")


@pytest.mark.parametrize("name", ["people.csv.gz", "people.csv"])
def test_header_of_a_gzip_file_is_its_first_line(
    start_server: Any, tmp_path: Path, name: str
) -> None:
    """Compression is found by content: the names of a gzipped CSV (named .gz or not), never its
    compressed prefix."""
    data = tmp_path / name
    data.write_bytes(gzip.compress(_csv_text().encode(), mtime=0))
    for encoding in ("latin-1", "utf-8"):
        c = start_server(source=str(data), output=tmp_path, csv={"encoding": encoding})
        r = c.api("header", {"document": document()})
        assert r.status == 200, r.body
        assert r.json() == {"columns": HEADER}
        _no_cell(r.body, "latin-1")


def test_header_of_another_compression_is_refused(start_server: Any, tmp_path: Path) -> None:
    """A compression the reader does not undo (here bzip2) is refused, naming `source`."""
    import bz2

    data = tmp_path / "people.csv"
    data.write_bytes(bz2.compress(_csv_text().encode()))
    c = start_server(source=str(data), output=tmp_path, csv={"encoding": "latin-1"})
    r = c.api("header", {"document": document()})
    assert r.status == 422 and r.json()["error"]["parameter"] == "source"
    _no_cell(r.body, "latin-1")


def test_header_of_a_binary_first_line_is_refused(start_server: Any, tmp_path: Path) -> None:
    """Bytes that are no names (control characters, read as latin-1) are refused."""
    data = tmp_path / "people.csv"
    data.write_bytes(b"\x01\x02" + CELLS[0].encode() + b"\x7f\x90," + CELLS[1].encode() + b"\n")
    c = start_server(source=str(data), output=tmp_path, csv={"encoding": "latin-1"})
    r = c.api("header", {"document": document()})
    assert r.status == 422, r.body
    _no_cell(r.body, "latin-1")


def test_header_is_capped_in_count_and_length(start_server: Any, tmp_path: Path) -> None:
    """At most MAX_HEADER_NAMES names of at most MAX_NAME_CHARS characters, else a refusal
    naming `header` and the rule, with no name in it."""
    many = tmp_path / "many.csv"
    many.write_text(",".join(f"c{i}" for i in range(MAX_HEADER_NAMES + 1)) + "\n1\n")
    long = tmp_path / "long.csv"
    long.write_text("a," + "Q" * (MAX_NAME_CHARS + 1) + "\n1,2\n")
    fine = tmp_path / "fine.csv"
    fine.write_text(",".join(f"c{i}" for i in range(MAX_HEADER_NAMES)) + "\n")
    for path in (many, long):
        c = start_server(source=str(path), output=tmp_path)
        r = c.api("header", {"document": document()})
        assert r.status == 422 and r.json()["error"]["parameter"] == "header", r.body
        assert str(MAX_HEADER_NAMES) in r.json()["error"]["message"]
        assert b"c1000" not in r.body and b"QQQ" not in r.body
    c = start_server(source=str(fine), output=tmp_path)
    assert len(c.api("header", {"document": document()}).json()["columns"]) == MAX_HEADER_NAMES


# -- who sets the budget ---------------------------------------------------------------------------
def _previewed(client: Any, doc: dict[str, Any]) -> Any:
    r = client.api("preview", {"document": doc})
    assert r.status == 200, r.body
    return r.json()


def _fixed_doc() -> dict[str, Any]:
    """A page document spending ε = 1 in fixed shares, its own total a huge 1,000,000."""
    doc = document(total_epsilon="1000000")
    doc["queries"][1] = query("count", by="sex", how="epsilon", value="0.5")
    return doc


def test_the_page_cannot_create_a_budget(start_server: Any, tmp_path: Path) -> None:
    """Without an owner's budget (none at start, none in the ledger) a run from the page is
    refused naming `--total-epsilon`: nothing spent, no ledger file (a first run once created a
    budget of ε = 1,000,000 from the page's total)."""
    people = write_people(tmp_path / "people.csv")
    ledger = tmp_path / "ledger.sqlite"
    c = start_server(source=str(people), ledger=ledger, output=tmp_path / "out")
    doc = _fixed_doc()
    seen = _previewed(c, doc)
    assert "--total-epsilon" in seen["ledger"]["error"]
    r = c.api("run", {"document": doc, "digest": seen["digest"], "nonce": "z" * 32})
    assert r.status == 409, r.body
    message = r.json()["error"]["message"]
    assert "--total-epsilon" in message and "nothing was spent" in message
    assert "\n" not in message
    assert not ledger.exists()
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_the_page_spends_from_the_owners_ledger_entry(start_server: Any, tmp_path: Path) -> None:
    """A budget the ledger already holds for the dataset: the page spends from it, and its
    total stays the owner's (the page's `total_epsilon` does not change it)."""
    people = write_people(tmp_path / "people.csv")
    ledger = tmp_path / "ledger.sqlite"
    dataset = str(people.resolve())
    Ledger(ledger, Fraction(5), dataset=dataset).spend(
        Fraction(1, 2), 0.0, "count", "owner", {"statistic": "count"}
    )
    c = start_server(source=str(people), ledger=ledger, output=tmp_path / "out")
    doc = _fixed_doc()
    seen = _previewed(c, doc)
    assert seen["ledger"]["total"] == "5" and seen["ledger"]["new"] is False
    r = c.api("run", {"document": doc, "digest": seen["digest"], "nonce": "y" * 32})
    assert r.status == 200, r.body
    book = Ledger(ledger, None, dataset=dataset)
    assert book.total_epsilon == 5 and len(book.entries()) == 2


def test_the_owners_total_at_start_sets_the_budget(start_server: Any, tmp_path: Path) -> None:
    """`--total-epsilon` at start is the owner's: a new budget gets it, not the page's total;
    against a ledger entry of another total it is refused (nothing spent)."""
    people = write_people(tmp_path / "people.csv")
    ledger = tmp_path / "ledger.sqlite"
    c = start_server(
        source=str(people), ledger=ledger, output=tmp_path / "out", total_epsilon=Fraction(3)
    )
    doc = _fixed_doc()
    seen = _previewed(c, doc)
    assert seen["ledger"]["total"] == "3" and seen["ledger"]["new"] is True
    r = c.api("run", {"document": doc, "digest": seen["digest"], "nonce": "x" * 32})
    assert r.status == 200, r.body
    assert Ledger(ledger, None, dataset=str(people.resolve())).total_epsilon == 3
    other = start_server(
        source=str(people), ledger=ledger, output=tmp_path / "out", total_epsilon=Fraction(7)
    )
    seen = _previewed(other, doc)
    r = other.api("run", {"document": doc, "digest": seen["digest"], "nonce": "w" * 32})
    assert r.status == 422 and r.json()["error"]["parameter"] == "total_epsilon", r.body
    assert len(Ledger(ledger, None, dataset=str(people.resolve())).entries()) == 1


# -- connections -----------------------------------------------------------------------------------
def test_connections_have_a_read_timeout() -> None:
    """Every connection waits on the client a bounded time (a half-sent request once held a
    server thread forever)."""
    timeout = ui_http._Handler.timeout
    assert timeout is not None and 0 < timeout <= 60


@pytest.mark.parametrize(
    "half",
    [
        b"POST /api/state HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n",  # headers not ended
        b"GET / HTT",  # the request line not ended
        b"POST /api/state HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json"
        b"\r\n" + TOKEN_HEADER.encode() + b': {token}\r\nContent-Length: 100\r\n\r\n{"a":',
    ],
    ids=["headers", "request line", "body"],
)
def test_a_half_sent_request_is_closed(
    start_server: Any, tmp_path: Path, monkeypatch: Any, capfd: Any, half: bytes
) -> None:
    monkeypatch.setattr(ui_http._Handler, "timeout", 0.5)
    c = start_server(output=tmp_path)
    port, token = c.server.port, c.server.token
    sent = half.replace(b"{port}", str(port).encode()).replace(b"{token}", token.encode())
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(sent)
        try:
            got = sock.recv(65536)  # the server closes it (the client's 60 s is only a bound)
            while got:
                got = sock.recv(65536)
        except ConnectionResetError:
            pass
    assert c.request("GET", "/").status == 200  # the server still serves
    assert "Traceback" not in capfd.readouterr().err


def test_a_client_gone_mid_answer_prints_no_traceback(
    start_server: Any, tmp_path: Path, monkeypatch: Any, capfd: Any
) -> None:
    """A client that disconnects while the answer is sent (broken pipe, reset) ends its
    connection quietly; the server goes on serving."""
    c = start_server(output=tmp_path)
    for error in (BrokenPipeError, ConnectionResetError):

        def gone(self: Any, error: type[Exception] = error) -> None:
            raise error

        monkeypatch.setattr(ui_http._Handler, "end_headers", gone)
        with pytest.raises(OSError):  # http.client sees the connection closed
            c.request("GET", "/")
        monkeypatch.undo()
        assert c.request("GET", "/").status == 200
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Exception occurred" not in err


def test_a_tab_closed_after_the_answer_prints_no_traceback(
    start_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: Any
) -> None:
    """Was: a BrokenPipeError traceback on the server's stderr when a tab closed while its
    connection was being finished (outside the handler's own catch); now one quiet line less."""
    c = start_server(output=tmp_path)

    def gone(self: Any) -> None:
        raise BrokenPipeError

    monkeypatch.setattr(ui_http._Handler, "finish", gone)
    assert c.request("GET", "/").status == 200
    monkeypatch.undo()
    assert c.request("GET", "/").status == 200
    err = capfd.readouterr().err
    assert "Traceback" not in err and "BrokenPipeError" not in err
