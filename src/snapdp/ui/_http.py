"""The HTTP side of ``snapdp ui``'s server: checks of every request, the static page, the JSON
API's routing and the headers of every response (docs/ui.md, "Security"; the API's calls are
:class:`snapdp.ui.server.UiServer`'s methods)."""

from __future__ import annotations

import hmac
import json
import sys
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any, Protocol

from snapdp.errors import LedgerError, ParameterError, PrivacyBudgetError
from snapdp.ui._document import FieldError

__all__ = ["MAX_BODY", "TOKEN_HEADER", "Api", "QuietServer", "handler_for"]


class Api(Protocol):
    """What the handler needs of the server (:class:`snapdp.ui.server.UiServer`): its token, the
    hosts and origins it answers, the files of its runs; the API's calls by name."""

    token: str
    allowed_hosts: tuple[str, ...]
    allowed_origins: tuple[str, ...]

    def report_file(self, key: str, name: str) -> tuple[bytes, str] | None:
        """A file a run wrote, by the run's key and the file's name."""


#: The largest request body accepted, in bytes.
MAX_BODY = 1 << 20
#: The header that carries the token.
TOKEN_HEADER = "X-Snapdp-Token"
_STATIC = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/run.js": ("run.js", "text/javascript; charset=utf-8"),
    "/style.css": ("style.css", "text/css; charset=utf-8"),
    "/help": ("help.html", "text/html; charset=utf-8"),
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
# -- routing ---------------------------------------------------------------------------------------
_API: dict[str, str] = {
    "/api/state": "state",
    "/api/header": "header",
    "/api/preview": "preview",
    "/api/export": "export",
    "/api/load": "load",
    "/api/run": "run",
    "/api/progress": "progress",
}


class QuietServer(ThreadingHTTPServer):
    """A threading HTTP server that ends a connection its client closed (a closed tab: broken
    pipe, reset) without a traceback on stderr; any other error is reported as usual."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


def handler_for(ui: Api) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        server_ui = ui

    return Handler


class _Handler(BaseHTTPRequestHandler):
    server_ui: Api
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
        except FieldError as exc:
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
