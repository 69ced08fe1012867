"""HTTP-level tests of `snapdp ui` (docs/ui.md, "Security"): token, Host, Origin, content type,
body size, security headers, the run's digest and nonce, a preview that opens no data, and no
data value in any answer before a run."""

from __future__ import annotations

import json
import os
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from tests.unit.ui._helpers import SENTINEL_NUMBER, SENTINEL_TEXT, document, query, write_people

from snapdp.data import Plan
from snapdp.data.budget.ledger import Ledger
from snapdp.errors import ParameterError
from snapdp.ui._http import MAX_BODY, TOKEN_HEADER


def _entries(ledger: Path, source: Path) -> int:
    return len(Ledger(ledger, None, dataset=str(source.resolve())).entries())


@pytest.fixture
def people(tmp_path: Path) -> Path:
    return write_people(tmp_path / "people.csv")


@pytest.fixture
def client(start_server: Any, people: Path, tmp_path: Path) -> Any:
    return start_server(
        source=str(people),
        ledger=tmp_path / "ledger.sqlite",
        output=tmp_path,
        total_epsilon=Fraction(2),  # the owner's budget: the page only spends (docs/ui.md)
    )


# -- where requests may come from ------------------------------------------------------------
def test_binds_to_loopback_only(client: Any) -> None:
    assert client.server.httpd.server_address[0] == "127.0.0.1"
    assert client.server.url.startswith(f"http://127.0.0.1:{client.server.port}/#token=")
    assert client.server.token in client.server.url.split("#", 1)[1]


def test_token_is_required_and_compared(client: Any) -> None:
    assert client.api("state", {}).status == 200
    assert client.api("state", {}, {TOKEN_HEADER: ""}).status == 403
    assert client.api("state", {}, {TOKEN_HEADER: client.server.token[:-1] + "x"}).status == 403
    no_token = {"Content-Type": "application/json"}
    assert client.request("POST", "/api/state", b"{}", no_token).status == 403


def test_two_servers_have_different_tokens(start_server: Any) -> None:
    a, b = start_server(), start_server()
    assert a.server.token != b.server.token and len(a.server.token) >= 43


@pytest.mark.parametrize(
    "host",
    [
        "evil.example:{port}",
        "evil.example",
        "127.0.0.1",
        "localhost",
        "localhost:1",
        "",
        "[::1]:{port}",
    ],
)
def test_foreign_host_is_refused(client: Any, host: str) -> None:
    """DNS rebinding: a page on another name that resolves to 127.0.0.1 sends its own Host."""
    host = host.format(port=client.server.port)
    assert client.request("GET", "/", host=host).status == 403
    headers = {"Content-Type": "application/json", TOKEN_HEADER: client.server.token}
    assert client.request("POST", "/api/state", b"{}", headers, host=host).status == 403


def test_own_hosts_are_served(client: Any) -> None:
    port = client.server.port
    assert client.request("GET", "/", host=f"127.0.0.1:{port}").status == 200
    assert client.request("GET", "/", host=f"localhost:{port}").status == 200


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://127.0.0.1:1"])
def test_foreign_origin_is_refused(client: Any, origin: str) -> None:
    assert client.api("state", {}, {"Origin": origin}).status == 403
    assert client.request("GET", "/", headers={"Origin": origin}).status == 403


def test_own_origin_is_served(client: Any) -> None:
    port = client.server.port
    for origin in (f"http://127.0.0.1:{port}", f"http://localhost:{port}"):
        assert client.api("state", {}, {"Origin": origin}).status == 200


def test_cross_site_fetch_is_refused(client: Any) -> None:
    assert client.api("state", {}, {"Sec-Fetch-Site": "cross-site"}).status == 403
    assert client.api("state", {}, {"Sec-Fetch-Site": "same-origin"}).status == 200


@pytest.mark.parametrize(
    "ctype", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data", ""]
)
def test_json_bodies_only(client: Any, ctype: str) -> None:
    """A form or a text/plain POST (which a foreign page may send without a preflight) is
    refused."""
    r = client.api("state", {}, {"Content-Type": ctype})
    assert r.status == 415


def test_body_size_limit(client: Any) -> None:
    """A body over the limit is refused from its Content-Length, before it is read."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", client.server.port, timeout=60)
    conn.putrequest("POST", "/api/load", skip_host=True)
    conn.putheader("Host", f"127.0.0.1:{client.server.port}")
    conn.putheader("Content-Type", "application/json")
    conn.putheader(TOKEN_HEADER, client.server.token)
    conn.putheader("Content-Length", str(MAX_BODY + 1))
    conn.endheaders(b'{"toml": "')
    assert conn.getresponse().status == 413
    conn.close()


def test_not_json_and_unknown_paths(client: Any) -> None:
    headers = {"Content-Type": "application/json", TOKEN_HEADER: client.server.token}
    assert client.request("POST", "/api/state", b"{not json", headers).status == 400
    assert client.request("POST", "/api/nope", b"{}", headers).status == 404
    assert client.request("GET", "/etc/passwd").status == 404
    assert client.request("GET", "/../pyproject.toml").status == 404
    assert client.request("PUT", "/api/state", b"{}", headers).status == 405
    assert client.request("OPTIONS", "/api/state", None, {"Origin": "x"}).status in (403, 405)


# -- what every response carries ---------------------------------------------------------------
@pytest.mark.parametrize(
    "call",
    [
        ("GET", "/", None),
        ("GET", "/app.js", None),
        ("GET", "/style.css", None),
        ("GET", "/missing", None),
        ("POST", "/api/state", {}),
        ("POST", "/api/preview", {"document": "bad"}),
    ],
)
def test_security_headers(client: Any, call: tuple[str, str, Any]) -> None:
    method, path, payload = call
    if method == "GET":
        r = client.request(method, path)
    else:
        r = client.api(path.rsplit("/", 1)[1], payload)
    csp = r.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["referrer-policy"] == "no-referrer"
    assert r.headers["cache-control"] == "no-store"
    assert not any(k.startswith("access-control-") for k in r.headers)


@pytest.mark.parametrize("method", ["HEAD", "TRACE", "BREW", "DELETE"])
def test_other_verbs_get_the_same_headers(client: Any, method: str) -> None:
    r = client.request(method, "/")
    assert r.status in (405, 501)
    assert "frame-ancestors 'none'" in r.headers["content-security-policy"]
    assert r.headers["x-content-type-options"] == "nosniff"


def test_static_page_has_no_inline_script_or_remote_resource(client: Any) -> None:
    page = client.request("GET", "/").body.decode()
    assert "<script>" not in page and "style=" not in page and "onclick" not in page
    for asset in ("/", "/app.js", "/style.css"):
        text = client.request("GET", asset).body.decode()
        assert "http://" not in text and "https://" not in text, asset


# -- planning ---------------------------------------------------------------------------------
def test_preview_plans_like_the_library(client: Any, tmp_path: Path, people: Path) -> None:
    r = client.api("preview", {"document": document(total_epsilon="2")})
    assert r.status == 200, r.body
    got = r.json()
    toml = client.api("export", {"document": document(total_epsilon="2")}).json()["toml"]
    (tmp_path / "same.toml").write_text(toml)
    want = Plan.load(tmp_path / "same.toml").preview().as_dict()
    assert [q["epsilon"] for q in got["preview"]["queries"]] == ["0.5", "1.5"]
    assert got["preview"]["queries"] == [
        {**q, "flags": g["flags"]}
        for q, g in zip(want["queries"], got["preview"]["queries"], strict=True)
    ]
    assert got["preview"]["total_epsilon_used"] == "2"
    assert got["ledger"] == {
        "path": str(tmp_path / "ledger.sqlite"),
        "new": True,
        "total": "2",
        "spent": "0",
        "remaining": "2",
        "after": "0",
        "short": False,
    }
    assert len(got["digest"]) == 64


def test_bad_bounds_name_the_field_with_the_cli_message(client: Any, tmp_path: Path) -> None:
    doc = document()
    doc["columns"][0]["lower"], doc["columns"][0]["upper"] = "100", "0"
    r = client.api("preview", {"document": doc})
    assert r.status == 422
    error = r.json()["error"]
    assert error["field"] in ("columns[0].lower", "columns[0].upper")
    # the same plan as a file: `snapdp plan` gives the same message after "file, line, key:"
    (tmp_path / "bad.toml").write_text(
        '[data]\nsource = "x.csv"\ntotal_epsilon = 1\n[columns]\n'
        'age = { type = "integer", lower = 100, upper = 0 }\n'
        '[[query]]\nstatistic = "count"\nepsilon = 0.5\n'
    )
    with pytest.raises(ValueError) as cli:
        Plan.load(tmp_path / "bad.toml")
    assert str(cli.value).endswith(": " + error["message"])


@pytest.mark.parametrize(
    ("edit", "field", "words"),
    [
        (lambda d: d["data"].update(total_epsilon="abc"), "data.total_epsilon", "abc"),
        (lambda d: d["data"].update(max_rows_per_unit="2"), "data.max_rows_per_unit", "unit"),
        (lambda d: d["queries"][0].update(value="-1"), "query[1].value", "epsilon"),
        (lambda d: d["queries"][1].update(by="nope"), "query[2].by", "nope"),
        (lambda d: d["columns"][1].update(keys="0, x"), "columns[1].keys", "'x'"),
        (lambda d: d["columns"][0].update(type=""), "columns[0].name", "type"),
        (lambda d: d["queries"].append(query("mean", column="sex")), "columns[1].lower", "bound"),
    ],
)
def test_errors_go_next_to_their_field(client: Any, edit: Any, field: str, words: str) -> None:
    doc = document()
    edit(doc)
    r = client.api("preview", {"document": doc})
    assert r.status == 422, r.body
    error = r.json()["error"]
    assert error["field"] == field, error
    assert words in error["message"]
    assert "line" not in error["message"].split(":")[0]  # no temporary file and line


def test_malformed_document_is_a_clear_400ish(client: Any) -> None:
    for bad in ("x", {"data": {"total_epsilon": 2}}, {"columns": "x"}, {"other": {}}):
        r = client.api("preview", {"document": bad})
        assert r.status == 422 and "error" in r.json()


def test_export_keeps_decimals_as_typed_and_load_gives_the_plan_back(client: Any) -> None:
    doc = document(total_epsilon="2.50")
    doc["queries"][0]["value"] = "0.10"
    toml = client.api("export", {"document": doc}).json()["toml"]
    assert "total_epsilon = 2.50\n" in toml and "epsilon = 0.10\n" in toml
    back = client.api("load", {"toml": toml}).json()["document"]
    assert client.api("export", {"document": back}).json()["toml"].replace("2.50", "2.5").replace(
        "0.10", "0.1"
    ) == toml.replace("2.50", "2.5").replace("0.10", "0.1")


def test_load_reports_the_files_error(client: Any) -> None:
    r = client.api("load", {"toml": "[data]\ntotal_epsilon = = 2\n"})
    assert r.status == 422 and "not valid TOML" in r.json()["error"]["message"]
    r = client.api("load", {"toml": '[data]\nbogus = 1\n[[query]]\nstatistic = "count"\n'})
    assert r.status == 422 and "unknown key 'bogus'" in r.json()["error"]["message"]


def test_the_page_cannot_choose_a_source(client: Any, people: Path, tmp_path: Path) -> None:
    """A loaded plan's own source is ignored; the document has no field for one."""
    other = write_people(tmp_path / "other.csv")
    toml = client.api("export", {"document": document()}).json()["toml"]
    assert f"source = {json.dumps(str(people.resolve()))}" in toml
    loaded = toml.replace(str(people.resolve()), str(other))
    doc = client.api("load", {"toml": loaded}).json()["document"]
    assert str(other) not in json.dumps(doc)
    again = client.api("export", {"document": doc}).json()["toml"]
    assert str(people.resolve()) in again and str(other) not in again
    doc["data"]["source"] = str(other)
    assert client.api("preview", {"document": doc}).status == 422


def test_preview_opens_no_data(start_server: Any, tmp_path: Path) -> None:
    """The source is a FIFO: opening it would block the request (until the client's timeout).
    An audit hook also records, and refuses, any open of it from Python."""
    fifo = tmp_path / "people.csv"
    os.mkfifo(fifo)
    opened: list[str] = []
    watching = [True]

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if watching[0] and event == "open" and args and str(args[0]).endswith("people.csv"):
            opened.append(str(args[0]))
            raise RuntimeError("the source was opened")

    sys.addaudithook(hook)
    try:
        c = start_server(source=str(fifo), ledger=tmp_path / "l.sqlite", output=tmp_path)
        doc = document(total_epsilon="100", group_size="1000")
        doc["queries"].append(query("sum", column="income", how="accuracy", value="50000"))
        doc["queries"].append(query("mean", column="age", by="sex", how="accuracy", value="3"))
        assert c.api("state", {}).status == 200
        r = c.api("preview", {"document": doc})
        assert r.status == 200, r.body
        assert c.api("export", {"document": doc}).status == 200
        assert (
            c.api("load", {"toml": c.api("export", {"document": doc}).json()["toml"]}).status == 200
        )
    finally:
        watching[0] = False
    assert opened == []
    assert not (tmp_path / "l.sqlite").exists()


def test_no_data_value_before_the_run(client: Any, people: Path) -> None:
    doc = document(total_epsilon="3")
    doc["columns"].append(
        {"name": "city", "type": "text", "lower": "", "upper": "", "keys": "A, B", "bins": ""}
    )
    doc["queries"].append(query("sum", column="income", how="accuracy", value="500"))
    doc["queries"].append(query("count", by="city", how="weight", value="2"))
    calls = [
        ("state", {}),
        ("header", {}),
        ("preview", {"document": doc}),
        ("export", {"document": doc}),
        ("preview", {"document": {**doc, "queries": [query("sum", column="income")]}}),
    ]
    for name, payload in calls:
        assert client.api(name, payload).status in (200, 422)
    assert client.api("header", {}).json() == {"columns": ["pid", "age", "sex", "income", "city"]}
    assert SENTINEL_TEXT in people.read_text() and SENTINEL_NUMBER in people.read_text()
    for body in client.log:
        assert SENTINEL_TEXT.encode() not in body and SENTINEL_NUMBER.encode() not in body


# -- running ------------------------------------------------------------------------------------
def _previewed(client: Any, doc: dict[str, Any]) -> str:
    r = client.api("preview", {"document": doc})
    assert r.status == 200, r.body
    return str(r.json()["digest"])


def test_run_releases_once_and_links_the_report(client: Any, tmp_path: Path, people: Path) -> None:
    doc = document(total_epsilon="2")
    digest = _previewed(client, doc)
    r = client.api("run", {"document": doc, "digest": digest, "nonce": "n" * 32})
    assert r.status == 200, r.body
    done = r.json()
    assert done["epsilon_spent"] == "2"
    assert [q["query"] for q in done["results"]] == ["count", "count by sex"]
    assert _entries(tmp_path / "ledger.sqlite", people) == 1
    assert done["ledger"]["spent"] == "2" and done["ledger"]["remaining"] == "0"
    report = client.request("GET", done["files"]["report.html"])
    assert report.status == 200 and report.headers["content-type"].startswith("text/html")
    assert "frame-ancestors 'none'" in report.headers["content-security-policy"]
    assert "script-src" not in report.headers["content-security-policy"]
    key = done["files"]["report.html"].split("/")[2]
    assert client.request("GET", f"/report/{key}/..%2F..%2Fpyproject.toml").status == 404
    assert client.request("GET", f"/report/{key}x/report.html").status == 404
    # the repeated nonce (a double click) never spends twice
    again = client.api("run", {"document": doc, "digest": digest, "nonce": "n" * 32})
    assert again.status == 409 and "nothing more was spent" in again.json()["error"]["message"]
    assert _entries(tmp_path / "ledger.sqlite", people) == 1


def test_run_refuses_a_changed_plan(client: Any, tmp_path: Path) -> None:
    doc = document(total_epsilon="2")
    digest = _previewed(client, doc)
    changed = document(total_epsilon="3")
    r = client.api("run", {"document": changed, "digest": digest, "nonce": "a" * 32})
    assert r.status == 409 and "changed" in r.json()["error"]["message"]
    assert not (tmp_path / "ledger.sqlite").exists()
    r = client.api("run", {"document": doc, "digest": "0" * 64, "nonce": "b" * 32})
    assert r.status == 409
    assert not (tmp_path / "ledger.sqlite").exists()


def test_concurrent_runs_with_one_nonce_spend_once(
    client: Any, tmp_path: Path, people: Path
) -> None:
    import threading

    doc = document(total_epsilon="2")
    digest = _previewed(client, doc)
    statuses: list[int] = []

    def send() -> None:
        statuses.append(
            client.api("run", {"document": doc, "digest": digest, "nonce": "c" * 32}).status
        )

    threads = [threading.Thread(target=send) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(statuses) == [200, 409, 409, 409]
    assert _entries(tmp_path / "ledger.sqlite", people) == 1


def test_run_needs_a_ledger_and_a_source(start_server: Any, people: Path, tmp_path: Path) -> None:
    c = start_server(source=str(people), output=tmp_path)
    doc = document(total_epsilon="2")
    r = c.api("run", {"document": doc, "digest": _previewed(c, doc), "nonce": "d" * 32})
    assert r.status == 422 and "--ledger" in r.json()["error"]["message"]
    c = start_server(ledger=tmp_path / "l.sqlite", output=tmp_path)
    r = c.api("run", {"document": doc, "digest": _previewed(c, doc), "nonce": "e" * 32})
    assert r.status == 422 and "source" in r.json()["error"]["message"]
    assert not (tmp_path / "l.sqlite").exists()


def test_a_spent_budget_is_refused(client: Any, tmp_path: Path, people: Path) -> None:
    doc = document(total_epsilon="2")
    digest = _previewed(client, doc)
    assert client.api("run", {"document": doc, "digest": digest, "nonce": "f" * 32}).status == 200
    after = client.api("preview", {"document": doc}).json()
    assert after["ledger"]["short"] is True and after["ledger"]["after"] is None
    r = client.api("run", {"document": doc, "digest": after["digest"], "nonce": "g" * 32})
    assert r.status == 409
    assert _entries(tmp_path / "ledger.sqlite", people) == 1


def test_a_waiting_preview_is_superseded_by_a_newer_one(client: Any) -> None:
    """One planning at a time; a request that waited while a newer one arrived is answered 409
    `superseded` without planning (the page drops it anyway)."""
    import threading
    import time

    answers: dict[str, int] = {}

    def send(name: str, total: str) -> None:
        answers[name] = client.api("preview", {"document": document(total_epsilon=total)}).status

    with client.server._plan_lock:
        a = threading.Thread(target=send, args=("a", "2"))
        a.start()
        while client.server._ticket < 1:
            time.sleep(0.01)
        b = threading.Thread(target=send, args=("b", "3"))
        b.start()
        while client.server._ticket < 2:
            time.sleep(0.01)
    a.join()
    b.join()
    assert answers == {"a": 409, "b": 200}


def test_load_keeps_what_the_page_does_not_show(client: Any) -> None:
    """The dataset name, null rules, query names and methods survive load → export; the CSV
    options are the owner's, never a loaded plan's (tests/unit/ui/test_owner_csv.py)."""
    text = (
        '[data]\nsource = "x.csv"\ndataset = "census"\ndelimiter = "\\t"\nheader = false\n'
        'column_names = ["age", "sex"]\nmax_line_bytes = 4096\ntotal_epsilon = 1\nrows = 40\n'
        '[columns]\nage = { type = "integer", lower = 0, upper = 100, nulls = 30 }\n'
        '[[query]]\nstatistic = "mean"\ncolumn = "age"\nmethod = "substitute"\nname = "avg age"\n'
        "epsilon = 0.5\n"
    )
    doc = client.api("load", {"toml": text}).json()["document"]
    out = client.api("export", {"document": doc}).json()["toml"]
    for key in ("delimiter", "header", "column_names", "max_line_bytes"):
        assert key not in out, (key, out)  # the owner's: the defaults here
    for line in (
        'dataset = "census"',
        "rows = 40",
        "nulls = 30",
        'method = "substitute"',
        'name = "avg age"',
    ):
        assert line in out, (line, out)


def test_a_plan_with_a_row_filter_loads_with_its_where_and_writes_it_back(client: Any) -> None:
    """Was: refused ("the page has no field for `where`"). A query's `where` is a field of the
    page now: it loads, previews and is written back to the plan file."""
    text = (
        '[data]\nsource = "x.csv"\ntotal_epsilon = 1\n'
        '[columns]\nage = { type = "integer", lower = 0, upper = 100 }\n'
        '[[query]]\nstatistic = "count"\nwhere = "age > 30"\nepsilon = 0.5\n'
    )
    r = client.api("load", {"toml": text})
    assert r.status == 200, r.body
    doc = r.json()["document"]
    assert doc["queries"][0]["where"] == "age > 30"
    assert client.api("preview", {"document": doc}).status == 200
    assert 'where = "age > 30"' in client.api("export", {"document": doc}).json()["toml"]
    doc["queries"][0]["where"] = "agee > 30"
    error = client.api("preview", {"document": doc}).json()["error"]
    assert error["field"] == "query[1].where" and "agee" in error["message"]


def test_a_plan_binning_one_of_several_by_columns_loads_and_round_trips(client: Any) -> None:
    """Was: refused ("the page edits the bins of a query grouped by one column")."""
    text = (
        '[data]\nsource = "x.csv"\ntotal_epsilon = 1\n[columns]\n'
        'age = { type = "integer", lower = 0, upper = 100 }\n'
        'sex = { type = "text", keys = ["F", "M"] }\n'
        '[[query]]\nstatistic = "count"\nby = ["sex", "age"]\n'
        "bins = { age = [0, 18, 65, 101] }\nepsilon = 0.5\n"
    )
    r = client.api("load", {"toml": text})
    assert r.status == 200, r.body
    doc = r.json()["document"]
    assert doc["queries"][0]["bins"] == "age: 0, 18, 65, 101"
    assert client.api("preview", {"document": doc}).status == 200
    toml = client.api("export", {"document": doc}).json()["toml"]
    assert client.api("load", {"toml": toml}).json()["document"] == doc


def test_header_with_an_open_quote_sends_no_data_rows(start_server: Any, tmp_path: Path) -> None:
    """A header line with an unclosed quote makes a CSV reader run on into the data lines: the
    header call must not send them to the page (one located refusal, naming no content)."""
    broken = tmp_path / "broken.csv"
    broken.write_text(f'a,"b,c\n1,{SENTINEL_TEXT},3\n4,5,6\n')
    c = start_server(source=str(broken), output=tmp_path)
    r = c.api("header", {"document": document()})
    assert SENTINEL_TEXT.encode() not in r.body
    assert r.status == 422 and r.json()["error"]["parameter"] == "source"


def test_the_demo_table_opens_and_runs_without_a_source(start_server: Any, tmp_path: Path) -> None:
    """`snapdp ui --demo`: snapdp's synthetic table, declared, with queries to start from; it
    plans and runs into a private ledger under the dataset "demo" (issue 34, item 5)."""
    c = start_server(demo=True, output=tmp_path / "out")
    state = c.api("state", {}).json()
    assert state["can_run"] and state["source"].endswith("demo.parquet")
    doc = state["document"]
    assert [col["name"] for col in doc["columns"]] == ["age", "sex", "income", "region"]
    assert "region" in c.api("header", {"document": doc}).json()["columns"]
    doc["queries"] = doc["queries"][:1]
    got = c.api("preview", {"document": doc}).json()
    assert got["ledger"]["total"] == "1"
    nonce = "n" * 32
    r = c.api("run", {"document": doc, "digest": got["digest"], "nonce": nonce})
    assert r.status == 200, r.body
    assert r.json()["results"][0]["by"] == ["sex"]


def test_a_two_phase_run_reports_what_it_spent_not_its_cap(
    start_server: Any, tmp_path: Path
) -> None:
    """Was: "ε spent" showed the plan's cap (20) while the ledger recorded 13.813."""
    from snapdp.data.frontends.demo import DEMO_DATASET

    ledger = tmp_path / "l.sqlite"
    c = start_server(demo=True, ledger=ledger, output=tmp_path / "out")
    doc = c.api("state", {}).json()["document"]
    doc["queries"] = doc["queries"][:2]  # a count and a two-phase mean
    doc["queries"][1]["value"] = "50000"  # a target its groups meet with part of the cap
    got = c.api("preview", {"document": doc}).json()
    r = c.api("run", {"document": doc, "digest": got["digest"], "nonce": "m" * 32})
    assert r.status == 200, r.body
    spent = Ledger(ledger, None, dataset=DEMO_DATASET).spent()
    assert Fraction(r.json()["epsilon_spent"]) == spent < 1


def test_a_run_spends_under_the_owners_dataset_never_the_pages(
    start_server: Any, tmp_path: Path, people: Path
) -> None:
    """Was: the page spent under the source's path whatever the owner's plan file named, while
    `snapdp run` of the same plan spent under its `[data] dataset`: two budgets for one table.
    The page's own `dataset` is ignored (it cannot move a run to a fresh budget)."""
    plan = tmp_path / "plan.toml"
    plan.write_text(
        f'[data]\nsource = "{people.as_posix()}"\ndataset = "survey-2026"\n\n'
        '[columns]\nsex = { type = "integer", keys = [0, 1] }\n\n'
        '[[query]]\nstatistic = "count"\nepsilon = 1\n',
        encoding="utf-8",
    )
    c = start_server(
        plan=plan, ledger=tmp_path / "ledger.sqlite", output=tmp_path, total_epsilon=Fraction(2)
    )
    doc = document(total_epsilon="2")
    doc["data"]["dataset"] = "a-fresh-name"
    digest = _previewed(c, doc)
    r = c.api("run", {"document": doc, "digest": digest, "nonce": "d" * 32})
    assert r.status == 200, r.body
    ledger = tmp_path / "ledger.sqlite"
    assert len(Ledger(ledger, None, dataset="survey-2026").entries()) == 1
    for other in (str(people.resolve()), "a-fresh-name"):  # no budget was made under these
        with pytest.raises(ParameterError, match="has no budget"):
            Ledger(ledger, None, dataset=other)
