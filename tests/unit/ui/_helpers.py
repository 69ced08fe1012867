"""Helpers of the `snapdp ui` tests: test data, page documents, and an HTTP client that sends
exactly the headers a test asks for."""

from __future__ import annotations

import http.client
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from snapdp.ui._http import TOKEN_HEADER
from snapdp.ui.server import UiServer

#: A value that appears in the test data and must never reach the page before a run.
SENTINEL_TEXT = "ZQXSENTINEL"
SENTINEL_NUMBER = "987654321"


def write_people(path: Path, rows: int = 40) -> Path:
    """A small CSV: pid, age, sex, income, city; one row carries the sentinels."""
    lines = ["pid,age,sex,income,city"]
    for i in range(rows):
        income = SENTINEL_NUMBER if i == 7 else str(1000 + 37 * i)
        city = SENTINEL_TEXT if i == 7 else "Springfield"
        lines.append(f"{i},{20 + i % 50},{i % 2},{income},{city}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def document(**data: str) -> dict[str, Any]:
    """A page document over the people CSV: age and income bounded, sex keyed; one count query
    with ε = 0.5 and one weighted count by sex."""
    base = {
        "privacy_unit": "",
        "max_rows_per_unit": "",
        "max_groups_per_unit": "",
        "max_rows_per_group": "",
        "total_epsilon": "1",
        "confidence": "",
        "group_size": "",
    }
    base.update(data)
    return {
        "data": base,
        "columns": [
            {
                "name": "age",
                "type": "integer",
                "lower": "0",
                "upper": "100",
                "keys": "",
                "bins": "",
            },
            {
                "name": "sex",
                "type": "integer",
                "lower": "",
                "upper": "",
                "keys": "0, 1",
                "bins": "",
            },
            {
                "name": "income",
                "type": "decimal",
                "lower": "0",
                "upper": "10000",
                "keys": "",
                "bins": "",
            },
        ],
        "queries": [
            query("count", how="epsilon", value="0.5"),
            query("count", by="sex", how="weight", value="1"),
        ],
    }


def column(name: str, type_: str, **fields: str) -> dict[str, str]:
    """A column row of the page."""
    row = {"name": name, "type": type_, "lower": "", "upper": "", "keys": "", "bins": ""}
    row.update(fields)
    return row


def query(statistic: str, **fields: str) -> dict[str, str]:
    """A query row of the page."""
    row = {
        "statistic": statistic,
        "column": "",
        "by": "",
        "bins": "",
        "quantiles": "",
        "how": "epsilon",
        "value": "1",
    }
    row.update(fields)
    return row


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Client:
    """Talks to one server; ``log`` keeps every response body (for the sentinel test)."""

    server: UiServer
    log: list[bytes] = field(default_factory=list)

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        *,
        host: str | None = None,
    ) -> Response:
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=60)
        try:
            conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            conn.putheader("Host", host if host is not None else f"127.0.0.1:{self.server.port}")
            for k, v in (headers or {}).items():
                conn.putheader(k, v)
            if body is not None:
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body)
            r = conn.getresponse()
            data = r.read()
            self.log.append(data)
            return Response(r.status, {k.lower(): v for k, v in r.getheaders()}, data)
        finally:
            conn.close()

    def api(self, name: str, payload: object, headers: dict[str, str] | None = None) -> Response:
        sent = {"Content-Type": "application/json", TOKEN_HEADER: self.server.token}
        sent.update(headers or {})
        return self.request("POST", f"/api/{name}", json.dumps(payload).encode(), sent)
