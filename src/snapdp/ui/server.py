"""The server of ``snapdp ui``: one static page and a small JSON API on 127.0.0.1 (docs/ui.md).

It trusts nothing that reaches it (docs/ui.md, "Security"):

* it listens on 127.0.0.1 only; every request's ``Host`` must be ``127.0.0.1:PORT`` or
  ``localhost:PORT`` (a page on another name that resolves here — DNS rebinding — is refused),
  and an ``Origin`` other than the server's own is refused;
* every API call carries the token (``secrets.token_urlsafe(32)``, given in the URL's fragment,
  so it never reaches a log or a Referer) in the ``X-Snapdp-Token`` header, compared with
  ``hmac.compare_digest``; API calls are POSTs with a JSON body (``Content-Type:
  application/json``, at most :data:`MAX_BODY` bytes); no CORS header is ever sent;
* every response carries a strict Content-Security-Policy (``default-src 'self'``,
  ``frame-ancestors 'none'``), ``X-Content-Type-Options: nosniff``, ``Referrer-Policy:
  no-referrer`` and ``Cache-Control: no-store``;
* the source, the ledger and the output folder are fixed on the command line: the page cannot
  name a path or upload data. Planning never opens the source, and nothing derived from the data
  is sent before a run; a run re-plans the page's workload, refuses (409) when its digest differs
  from the one the page previewed, and spends at most once per one-time nonce;
* the header call returns column names only, read by the release's reader and rules, capped;
* the page spends only from a budget the data owner set (``--total-epsilon`` at start or the
  ledger's entry for the dataset), never creates one;
* a connection waits on its client at most :attr:`_Handler.timeout` seconds, and the browser is
  opened on a private launch file, so the token is on no command line.
"""

from __future__ import annotations

import hmac
import html
import json
import os
import secrets
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any

from snapdp._rational import format_rational
from snapdp._validation import check_epsilon
from snapdp.data.budget.ledger import Ledger, resolve_dataset
from snapdp.data.frontends.toml import load_workload
from snapdp.errors import LedgerError, ParameterError, PrivacyBudgetError
from snapdp.ui import _workload_json as wj
from snapdp.ui._header import MAX_HEADER_NAMES, MAX_NAME_CHARS, column_names

__all__ = ["MAX_BODY", "MAX_HEADER_NAMES", "MAX_NAME_CHARS", "TOKEN_HEADER", "UiConfig", "UiServer"]

#: The largest request body accepted, in bytes.
MAX_BODY = 1 << 20
#: The header that carries the token.
TOKEN_HEADER = "X-Snapdp-Token"
#: Why a run from the page is refused on a dataset whose owner set no budget.
_NO_BUDGET = (
    "this dataset has no privacy budget in the ledger, and the page cannot set one: the data "
    "owner sets it by starting snapdp ui with `--total-epsilon`, or by a first release with "
    "`--total-epsilon` into this ledger (docs/ui.md); nothing was spent"
)
_STATIC = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/style.css": ("style.css", "text/css; charset=utf-8"),
}
_PAGE_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"
)
#: The report is one self-contained file: inline styles and SVG, no script.
_REPORT_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'"
)
_REPORT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".csv": "text/csv; charset=utf-8",
    ".json": "application/json",
    ".parquet": "application/octet-stream",
}


@dataclass(frozen=True)
class UiConfig:
    """What the command line fixes: the plan file to start from, the data source, the ledger and
    the output folder (each run writes into a new sub-folder of it)."""

    plan: Path | None = None
    source: str | None = None
    ledger: Path | None = None
    output: Path = Path("snapdp-results")
    port: int = 0
    #: The dataset's lifetime budget, set by the data owner when ``snapdp ui`` starts (a ledger
    #: entry for the dataset works too): the page only spends from a budget, never sets one.
    total_epsilon: Fraction | None = None


@dataclass
class _Run:
    folder: Path
    files: dict[str, Path] = field(default_factory=dict)


class UiServer:
    """The server (a :class:`ThreadingHTTPServer` on 127.0.0.1). ``url``: what to open, the
    token in its fragment. :meth:`serve_forever` until :meth:`shutdown`."""

    def __init__(self, config: UiConfig) -> None:
        self.config = config
        self.token = secrets.token_urlsafe(32)
        self._workdir = tempfile.TemporaryDirectory(prefix="snapdp-ui-")
        self.workdir = Path(self._workdir.name)
        self._nonces: set[str] = set()
        self._nonce_lock = threading.Lock()
        self.run_lock = threading.Lock()
        # one planning at a time, and only the newest waiting request (CPU is shared)
        self._plan_lock = threading.Lock()
        self._ticket_lock = threading.Lock()
        self._ticket = 0
        self._runs: dict[str, _Run] = {}
        self.initial = wj.blank_document()
        if config.total_epsilon is not None:
            check_epsilon("total_epsilon", config.total_epsilon)
        self._source: str | None = None
        if config.source is not None:
            self._source = str(Path(config.source).expanduser().resolve())
        if config.plan is not None:
            workload = load_workload(config.plan)
            self.initial = wj.document_from_workload(workload)
            src = workload.declaration.source_path()
            if self._source is None and isinstance(src, str):
                self._source = str(Path(src).expanduser().resolve())
        self.httpd = ThreadingHTTPServer(("127.0.0.1", config.port), _handler_for(self))
        self.httpd.daemon_threads = True
        self.port = int(self.httpd.server_address[1])
        self.allowed_hosts = (f"127.0.0.1:{self.port}", f"localhost:{self.port}")
        self.allowed_origins = tuple(f"http://{h}" for h in self.allowed_hosts)

    @property
    def url(self) -> str:
        """The page's address, the token in the fragment (never sent to the server)."""
        return f"http://127.0.0.1:{self.port}/#token={self.token}"

    def launch_file(self) -> Path:
        """A page that sends the browser on to :attr:`url`, in this server's private temporary
        folder (mode 0700), readable by the user alone (0600), removed when the server stops:
        the browser is opened on this file, so the token never appears on a command line
        (where any local user reads it with ``ps``)."""
        path = self.workdir / "open.html"
        target = html.escape(self.url, quote=True)
        text = (
            '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
            f'<meta http-equiv="refresh" content="0;url={target}">'
            "<title>snapdp ui</title></head>\n"
            f'<body><p><a href="{target}">Open snapdp ui</a></p></body></html>\n'
        )
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            os.fchmod(f.fileno(), 0o600)
            f.write(text)
        return path

    def serve_forever(self) -> None:
        """Serve until :meth:`shutdown` (from another thread) or Ctrl-C in this one."""
        self.httpd.serve_forever(poll_interval=0.2)

    def shutdown(self) -> None:
        """Stop serving (waiting for a release in progress), close the socket, remove the
        temporary folder."""
        self.httpd.shutdown()
        self.close()

    def close(self) -> None:
        """Close the socket and remove the temporary folder, after a release in progress."""
        with self.run_lock:
            self.httpd.server_close()
            self._workdir.cleanup()

    # -- what the API does -------------------------------------------------------------------
    def source(self) -> str | None:
        """The source as fixed on the command line (or by the plan file), as a path."""
        return self._source

    def state(self, _body: dict[str, Any]) -> dict[str, Any]:
        source = self.source()
        return {
            "document": self.initial,
            "plan": None if self.config.plan is None else self.config.plan.name,
            "source": source,
            "ledger": None if self.config.ledger is None else str(self.config.ledger),
            "output": str(self.config.output),
            "can_run": source is not None and self.config.ledger is not None,
        }

    def header(self, body: dict[str, Any]) -> dict[str, Any]:
        """The source's column names (CSV header or Parquet schema): names only, never a value,
        read by the release's reader and rules (:func:`snapdp.ui._header.column_names`). The
        only call that opens the source before a run, and only on the user's request. The
        page's ``header``, ``delimiter`` and ``encoding`` are honoured: with ``header = false``
        the first line is data, nothing is read, and the names are the declared ones."""
        source = self.source()
        if source is None:
            raise ParameterError("no source was given on the command line", parameter="source")
        options = wj.csv_options(body.get("document"))
        if not options.header:  # its first line is data: the names are the declared ones
            return {"columns": list(options.column_names or ())}
        return {"columns": column_names(Path(source), options)}

    def preview(self, body: dict[str, Any]) -> dict[str, Any] | tuple[int, dict[str, Any]]:
        """The planner's answer for the page's document; 409 ``superseded`` when a newer
        preview request arrived while this one waited for the planner."""
        with self._ticket_lock:
            self._ticket += 1
            ticket = self._ticket
        with self._plan_lock:
            if ticket != self._ticket:
                return HTTPStatus.CONFLICT, {
                    "superseded": True,
                    "error": {"message": "superseded by a newer preview"},
                }
            plan, planned, digest = wj.plan_and_preview(
                body.get("document"), self.source(), self.workdir, draft=True
            )
        return {
            "preview": wj.preview_json(plan, planned),
            "digest": digest,
            "ledger": self._ledger_view(planned.total),
        }

    def export(self, body: dict[str, Any]) -> dict[str, Any]:
        wj.load_plan(body.get("document"), self.source(), self.workdir)  # refuse a broken plan
        text = wj.document_toml(body.get("document"), self.source())
        return {"toml": text, "filename": "plan.toml"}

    def load(self, body: dict[str, Any]) -> dict[str, Any]:
        text = body.get("toml")
        if not isinstance(text, str):
            raise ParameterError("`toml` must be the text of a plan file", parameter="toml")
        return {"document": wj.document_from_toml(text, self.source(), self.workdir)}

    def run(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        nonce, expected = body.get("nonce"), body.get("digest")
        if not isinstance(nonce, str) or not 16 <= len(nonce) <= 200:
            raise ParameterError("`nonce` must be a one-time random string", parameter="nonce")
        if not isinstance(expected, str):
            raise ParameterError("`digest` must be the previewed plan's digest", parameter="digest")
        with self._nonce_lock:
            if nonce in self._nonces:
                return HTTPStatus.CONFLICT, {
                    "error": {
                        "message": "this run was already sent once (its one-time nonce is "
                        "used); nothing more was spent. Go back to the plan to run again."
                    }
                }
            self._nonces.add(nonce)
        source, ledger = self.source(), self.config.ledger
        if source is None or ledger is None:
            raise ParameterError(
                "a run needs the data source (--source or the plan's) and --ledger, given when "
                "snapdp ui starts",
                parameter="source" if source is None else "ledger",
            )
        with self.run_lock:
            dataset = _dataset(source)
            budget = self._owner_budget(ledger, dataset)
            if budget is None:
                return HTTPStatus.CONFLICT, {
                    "error": {"message": _NO_BUDGET, "parameter": "total_epsilon"}
                }
            plan, planned, digest = wj.plan_and_preview(body.get("document"), source, self.workdir)
            if not hmac.compare_digest(digest.encode(), expected.encode()):
                return HTTPStatus.CONFLICT, {
                    "error": {
                        "message": "the plan changed since it was previewed (its digest "
                        "differs); nothing was spent. Review the plan and run again."
                    }
                }
            folder = _new_folder(self.config.output)
            done = plan.run(ledger=budget, output=folder, preview=planned, dataset=dataset)
            key = secrets.token_urlsafe(16)
            self._runs[key] = _Run(folder, {f.name: f for f in done.files})
            return HTTPStatus.OK, {
                "results": wj.results_json(done.results),
                "epsilon_spent": format_rational(planned.total, max_digits=None),
                "ledger": self._ledger_view(Fraction(0)),
                "folder": str(folder),
                "files": {name: f"/report/{key}/{name}" for name in self._runs[key].files},
            }

    def report_file(self, key: str, name: str) -> tuple[bytes, str] | None:
        """A file a run wrote (read-only), by the run's random key and the file's name."""
        run = self._runs.get(key)
        if run is None or name not in run.files:
            return None
        path = run.files[name]
        return path.read_bytes(), _REPORT_TYPES.get(path.suffix, "application/octet-stream")

    def _owner_budget(self, path: Path, dataset: str) -> Ledger | None:
        """The dataset's budget in the ledger at ``path`` as the data owner set it: the one
        given when ``snapdp ui`` started (checked against the ledger's), else the ledger's own
        entry; None when the owner set none (the page never creates a budget)."""
        if self.config.total_epsilon is not None:
            return Ledger(path, self.config.total_epsilon, dataset=dataset)
        try:
            return Ledger(path, None, dataset=dataset)
        except ParameterError as exc:
            if exc.parameter != "total_epsilon":
                raise
        return None

    def _ledger_view(self, planned: Fraction) -> dict[str, Any] | None:
        """Spent, remaining and what the run would leave, for the dataset of the source."""
        path, source = self.config.ledger, self.source()
        if path is None:
            return None
        text = format_rational
        view: dict[str, Any] = {"path": str(path)}
        if source is None:
            return {**view, "error": "no data source was given: the ledger's dataset is unknown"}
        try:
            ledger = self._owner_budget(path, _dataset(source))
        except (ParameterError, LedgerError) as exc:
            return {**view, "error": str(exc)}
        if ledger is None:
            return {**view, "error": _NO_BUDGET}
        try:
            total, spent, remaining = ledger.total_epsilon, ledger.spent(), ledger.remaining()
            kept = Ledger.datasets(path) if path.exists() else []
        except (ParameterError, LedgerError) as exc:
            return {**view, "error": str(exc)}
        new = all(d.dataset != ledger.dataset for d in kept)
        after = remaining - planned
        return {
            **view,
            "new": new,
            "total": text(total, max_digits=None),
            "spent": text(spent, max_digits=None),
            "remaining": text(remaining, max_digits=None),
            "after": None if after < 0 else text(after, max_digits=None),
            "short": after < 0,
        }


def _dataset(source: str) -> str:
    return resolve_dataset(None, source, source, ledger_file=True)


def _new_folder(output: Path) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for n in range(1000):
        folder = output / (f"run-{stamp}" + (f"-{n}" if n else ""))
        if not folder.exists():
            return folder
    raise ParameterError(f"`output` {str(output)!r} holds too many runs", parameter="output")


# -- HTTP ---------------------------------------------------------------------------------------
_API: dict[str, str] = {
    "/api/state": "state",
    "/api/header": "header",
    "/api/preview": "preview",
    "/api/export": "export",
    "/api/load": "load",
    "/api/run": "run",
}


def _handler_for(ui: UiServer) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        server_ui = ui

    return Handler


class _Handler(BaseHTTPRequestHandler):
    server_ui: UiServer
    server_version = "snapdp-ui"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    #: Seconds a connection may wait on the client (a request line, headers, a body, or room to
    #: send the answer): then it is closed, so a half-sent request holds no thread for long.
    timeout = 10.0

    def handle(self) -> None:
        """Serve the connection; a client that went away or stalled past :attr:`timeout` ends it
        quietly (no traceback on the server's stderr)."""
        try:
            super().handle()
        except (ConnectionError, TimeoutError):
            self.close_connection = True

    def version_string(self) -> str:
        return "snapdp-ui"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: stdout's first line is the URL, and requests are nobody's business."""

    # -- checks ------------------------------------------------------------------------------
    def _trusted_origin(self) -> bool:
        ui = self.server_ui
        if self.headers.get("Host", "") not in ui.allowed_hosts:
            self._send_json(HTTPStatus.FORBIDDEN, {"error": {"message": "forbidden Host"}})
            return False
        origin = self.headers.get("Origin")
        if origin is not None and origin not in ui.allowed_origins:
            self._send_json(HTTPStatus.FORBIDDEN, {"error": {"message": "forbidden Origin"}})
            return False
        site = self.headers.get("Sec-Fetch-Site")
        if site is not None and site not in ("same-origin", "none"):
            self._send_json(HTTPStatus.FORBIDDEN, {"error": {"message": "cross-site request"}})
            return False
        return True

    # -- verbs -------------------------------------------------------------------------------
    def do_GET(self) -> None:
        if not self._trusted_origin():
            return
        path = self.path.split("?", 1)[0]
        if path == "/favicon.ico":
            self._send(HTTPStatus.NO_CONTENT, b"", "image/x-icon")
            return
        if path in _STATIC:
            name, ctype = _STATIC[path]
            body = resources.files("snapdp.ui").joinpath("static").joinpath(name).read_bytes()
            self._send(HTTPStatus.OK, body, ctype)
            return
        parts = path.split("/")
        if len(parts) == 4 and parts[1] == "report":
            found = self.server_ui.report_file(parts[2], parts[3])
            if found is not None:
                body, ctype = found
                extra = {}
                if ctype.startswith("application/octet-stream"):
                    extra["Content-Disposition"] = f'attachment; filename="{parts[3]}"'
                self._send(HTTPStatus.OK, body, ctype, csp=_REPORT_CSP, extra=extra)
                return
        self._send_json(HTTPStatus.NOT_FOUND, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        if not self._trusted_origin():
            return
        ui = self.server_ui
        token = self.headers.get(TOKEN_HEADER, "")
        if not hmac.compare_digest(token.encode("utf-8", "replace"), ui.token.encode()):
            self._send_json(HTTPStatus.FORBIDDEN, {"error": {"message": "missing or bad token"}})
            return
        ctype = self.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
        if ctype != "application/json":
            self._send_json(
                HTTPStatus.UNSUPPORTED_MEDIA_TYPE, {"error": {"message": "JSON bodies only"}}
            )
            return
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            self._send_json(HTTPStatus.LENGTH_REQUIRED, {"error": {"message": "no length"}})
            return
        if not 0 <= length <= MAX_BODY:
            self._send_json(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE, {"error": {"message": "body too large"}}
            )
            return
        try:
            body = json.loads(self.rfile.read(length).decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            self._send_json(HTTPStatus.BAD_REQUEST, {"error": {"message": "not JSON"}})
            return
        method = _API.get(self.path)
        if method is None:
            self._send_json(HTTPStatus.NOT_FOUND, {"error": {"message": "not found"}})
            return
        if not isinstance(body, dict):
            self._send_json(HTTPStatus.BAD_REQUEST, {"error": {"message": "not an object"}})
            return
        self._answer(getattr(ui, method), body)

    def _answer(self, call: Callable[[dict[str, Any]], Any], body: dict[str, Any]) -> None:
        try:
            answer = call(body)
        except wj.FieldError as exc:
            self._send_json(HTTPStatus.UNPROCESSABLE_ENTITY, {"error": exc.as_dict()})
            return
        except PrivacyBudgetError as exc:
            self._send_json(HTTPStatus.CONFLICT, {"error": {"message": str(exc)}})
            return
        except (ParameterError, LedgerError) as exc:
            error = {"message": str(exc), "parameter": exc.parameter}
            self._send_json(HTTPStatus.UNPROCESSABLE_ENTITY, {"error": error})
            return
        except Exception as exc:  # one line for the page, never a traceback
            message = f"internal error ({type(exc).__name__}); see docs/ui.md"
            self._send_json(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": {"message": message}})
            return
        status, payload = answer if isinstance(answer, tuple) else (HTTPStatus.OK, answer)
        self._send_json(status, payload)

    def do_PUT(self) -> None:
        self._refuse()

    def do_DELETE(self) -> None:
        self._refuse()

    def do_OPTIONS(self) -> None:
        self._refuse()

    def do_PATCH(self) -> None:
        self._refuse()

    def do_HEAD(self) -> None:
        self._refuse()

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The base class's errors (a malformed request, an unknown verb) with this server's
        headers and a JSON body."""
        text = message or HTTPStatus(code).phrase
        self._send_json(code, {"error": {"message": text}})

    def _refuse(self) -> None:
        self._send_json(HTTPStatus.METHOD_NOT_ALLOWED, {"error": {"message": "GET or POST"}})

    # -- responses -----------------------------------------------------------------------------
    def _send_json(self, status: int, payload: object) -> None:
        body = json.dumps(payload, default=str).encode("utf-8")
        self._send(status, body, "application/json")

    def _send(
        self,
        status: int,
        body: bytes,
        ctype: str,
        *,
        csp: str = _PAGE_CSP,
        extra: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        if status >= 400:  # the body may be unread: never reuse this connection
            self.close_connection = True
            self.send_header("Connection", "close")
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", csp)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Cross-Origin-Opener-Policy", "same-origin")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
