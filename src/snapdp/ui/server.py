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
  how the source is read (header, delimiter, encoding) is the owner's, never the page's;
* the page spends only from a budget the data owner set (``--total-epsilon`` at start or the
  ledger's entry for the dataset), never creates one;
* a connection waits on its client at most :attr:`_Handler.timeout` seconds, and the browser is
  opened on a private launch file, so the token is on no command line.
"""

from __future__ import annotations

import hmac
import html
import math
import os
import secrets
import sqlite3
import tempfile
import threading
import time
from fractions import Fraction
from http import HTTPStatus
from pathlib import Path
from typing import Any

import numpy as np
from msgspec import Struct, field
from msgspec.structs import replace

from snapdp._rational import format_rational
from snapdp._validation import check_epsilon
from snapdp.data.budget.datasets import resolve_dataset
from snapdp.data.budget.delta import read_total_delta
from snapdp.data.budget.ledger import Ledger
from snapdp.data.frontends.demo import DEMO_DATASET
from snapdp.data.frontends.toml import load_workload
from snapdp.data.model.schema import CsvOptions
from snapdp.errors import LedgerError, ParameterError
from snapdp.ui import _workload_json as wj
from snapdp.ui._demo import demo_document, write_demo
from snapdp.ui._document import blank_document
from snapdp.ui._document_io import document_from_toml, document_from_workload, document_toml
from snapdp.ui._header import column_names
from snapdp.ui._http import QuietServer, handler_for
from snapdp.ui._owner_csv import csv_json, owner_csv, with_owner_csv
from snapdp.ui._two_phase import group_sizes, two_phase_json

__all__ = ["UiConfig", "UiServer"]

#: Why a run from the page is refused on a dataset whose owner set no budget.
_NO_BUDGET = (
    "this dataset has no privacy budget in the ledger, and the page cannot set one: the data "
    "owner sets it by starting snapdp ui with `--total-epsilon`, or by a first release with "
    "`--total-epsilon` into this ledger (docs/ui.md); nothing was spent"
)
#: Why a plan that takes groups from the data cannot run: the owner set no δ budget.
_NO_DELTA_BUDGET = (
    "this dataset has no δ budget, and groups from the data need one: the data owner sets it by "
    "starting snapdp ui with `--total-delta` (docs/ui.md); a run would be refused"
)
_REPORT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".csv": "text/csv; charset=utf-8",
    ".json": "application/json",
    ".parquet": "application/octet-stream",
}


class UiConfig(Struct, frozen=True):
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
    #: The dataset's δ budget, set by the data owner (``--total-delta``) for a ledger that has
    #: none yet: what groups from the data spend (docs/sql.md, "Groups from the data").
    total_delta: Fraction | None = None
    #: Open snapdp's synthetic demo table (no source): a ledger in the server's private folder
    #: and a budget of 1 unless given (docs/ui.md, "Try it without data").
    demo: bool = False
    #: How the source is read (``header``, ``delimiter``, ``encoding``, ``column_names``,
    #: ``max_line_bytes``), as the owner gave it on the command line, over the plan file's:
    #: the page's document never sets them (docs/ui.md, "How the source is read").
    csv: dict[str, Any] = field(default_factory=dict)
    #: Seeded noise for the documentation's screenshots (tools/ui_screenshots.py): NOT private,
    #: never set by ``snapdp ui``.
    seed: int | None = None


class _Run(Struct):
    folder: Path
    files: dict[str, Path] = field(default_factory=dict)


class UiServer:
    """The server (a :class:`ThreadingHTTPServer` on 127.0.0.1). ``url``: what to open, the
    token in its fragment. :meth:`serve_forever` until :meth:`shutdown`."""

    def __init__(self, config: UiConfig) -> None:
        self.token = secrets.token_urlsafe(32)
        self._workdir = tempfile.TemporaryDirectory(prefix="snapdp-ui-")
        self.workdir = Path(self._workdir.name)
        if config.demo:
            if config.source is not None:
                raise ParameterError(
                    "`--demo` opens the demo table: give no --source", parameter="source"
                )
            config = replace(
                config,
                source=str(write_demo(self.workdir)),
                ledger=config.ledger or self.workdir / "demo-ledger.sqlite",
                total_epsilon=config.total_epsilon or Fraction(1),
            )
        self.config = config
        self._nonces: set[str] = set()
        self._nonce_lock = threading.Lock()
        self.run_lock = threading.Lock()
        # one planning at a time, and only the newest waiting request (CPU is shared)
        self._plan_lock = threading.Lock()
        self._ticket_lock = threading.Lock()
        self._ticket = 0
        self._runs: dict[str, _Run] = {}
        #: each run's progress events by its nonce: (done, total, label), public (docs/ui.md)
        self._progress: dict[str, list[dict[str, Any]]] = {}
        self.initial = demo_document() if config.demo and config.plan is None else blank_document()
        if config.total_epsilon is not None:
            check_epsilon("total_epsilon", config.total_epsilon)
        self._source: str | None = None
        if config.source is not None:
            self._source = str(Path(config.source).expanduser().resolve())
        base = CsvOptions()
        #: The dataset's name in the ledger: the owner's plan file's ``[data] dataset`` (as
        #: ``snapdp run``), else the source's path; never the page's document.
        self._owner_dataset: str | None = None
        if config.plan is not None:
            workload = load_workload(config.plan)
            base = workload.declaration.schema.csv
            self._owner_dataset = workload.dataset
            self.initial = document_from_workload(workload)
            src = workload.declaration.source_path()
            if self._source is None and isinstance(src, str):
                self._source = str(Path(src).expanduser().resolve())
        #: How the source is read: the owner's (command line over plan file), never the page's.
        self.csv = owner_csv(base, config.csv)
        self.initial = self._owned(self.initial)
        self.httpd = QuietServer(("127.0.0.1", config.port), handler_for(self))
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

    def _owned(self, doc: Any) -> Any:
        """The page's document with the owner's CSV options in place of its own."""
        return with_owner_csv(doc, self.csv)

    def state(self, _body: dict[str, Any]) -> dict[str, Any]:
        source = self.source()
        return {
            "document": self.initial,
            "csv": csv_json(self.csv),
            "plan": None if self.config.plan is None else self.config.plan.name,
            "source": source,
            "ledger": None if self.config.ledger is None else str(self.config.ledger),
            "output": str(self.config.output),
            "can_run": source is not None and self.config.ledger is not None,
        }

    def header(self, _body: dict[str, Any]) -> dict[str, Any]:
        """The source's column names (CSV header or Parquet schema): names only, never a value,
        read by the release's reader and rules (:func:`snapdp.ui._header.column_names`). The
        only call that opens the source before a run, and only on the user's request. The file is
        read as its owner said (:attr:`csv`: ``snapdp ui``'s flags over its plan file), whatever
        the page's document says: with ``header = false`` the first line is data, nothing is
        read, and the names are the declared ones."""
        source = self.source()
        if source is None:
            raise ParameterError("no source was given on the command line", parameter="source")
        options = self.csv
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
                self._owned(body.get("document")), self.source(), self.workdir, draft=True
            )
        shown = wj.preview_json(plan, planned)
        sizes = group_sizes(body.get("sizes"))
        for entry, extra in zip(
            shown.get("queries", []), two_phase_json(plan.schema, planned, sizes), strict=False
        ):
            if extra is not None:
                entry["two_phase"].update(extra)
        fixed = sum((a.epsilon for a in planned.allocations if a.two_phase is None), Fraction(0))
        shown["fixed_epsilon"] = format_rational(fixed, max_digits=None)
        ledger = self._ledger_view(planned.total, needs_delta=planned.delta is not None)
        return {"preview": shown, "digest": digest, "ledger": ledger}

    def export(self, body: dict[str, Any]) -> dict[str, Any]:
        """The plan as a plan file (``format`` "toml", the default), a runnable Python script
        ("python") or a Jupyter notebook ("notebook") using the public API (docs/notebooks.md).
        Reads no data."""
        fmt = body.get("format", "toml")
        if fmt not in ("toml", "python", "notebook"):
            raise ParameterError("`format` must be toml, python or notebook", parameter="format")
        doc = self._owned(body.get("document"))
        plan, _ = wj.load_plan(doc, self.source(), self.workdir)
        if fmt == "toml":
            text = document_toml(doc, self.source())
            return {"toml": text, "text": text, "filename": "plan.toml"}
        from snapdp.data.frontends.python_export import export_notebook, export_python

        write = export_python if fmt == "python" else export_notebook
        ledger = None if self.config.ledger is None else str(self.config.ledger)
        text = write(plan.to_workload(), ledger=ledger)
        return {"text": text, "filename": "plan.py" if fmt == "python" else "plan.ipynb"}

    def load(self, body: dict[str, Any]) -> dict[str, Any]:
        text = body.get("toml")
        if not isinstance(text, str):
            raise ParameterError("`toml` must be the text of a plan file", parameter="toml")
        return {"document": self._owned(document_from_toml(text, self.source()))}

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
            dataset = self._dataset(source)
            budget = self._owner_budget(ledger, dataset)
            if budget is None:
                return HTTPStatus.CONFLICT, {
                    "error": {"message": _NO_BUDGET, "parameter": "total_epsilon"}
                }
            document = self._owned(body.get("document"))
            plan, planned, digest = wj.plan_and_preview(document, source, self.workdir)
            if not hmac.compare_digest(digest.encode(), expected.encode()):
                return HTTPStatus.CONFLICT, {
                    "error": {
                        "message": "the plan changed since it was previewed (its digest "
                        "differs); nothing was spent. Review the plan and run again."
                    }
                }
            folder = _new_folder(self.config.output)
            events = self._progress.setdefault(nonce, [])

            def record(step: int, total: int, label: str) -> None:
                events.append({"done": step, "total": total, "label": label})

            rng = None if self.config.seed is None else np.random.default_rng(self.config.seed)
            done = plan.run(
                ledger=budget,
                output=folder,
                preview=planned,
                dataset=dataset,
                progress=record,
                rng=rng,
                total_delta=self.config.total_delta,
            )
            key = secrets.token_urlsafe(16)
            self._runs[key] = _Run(folder, {f.name: f for f in done.files})
            return HTTPStatus.OK, {
                "results": wj.results_json(done.results, plan.schema),
                "epsilon_spent": format_rational(done.spent, max_digits=None),
                "delta_spent": math.fsum(r.delta for r in done.results),
                "ledger": self._ledger_view(Fraction(0), needs_delta=planned.delta is not None),
                "folder": str(folder),
                "files": {name: f"/report/{key}/{name}" for name in self._runs[key].files},
            }

    def progress(self, body: dict[str, Any]) -> dict[str, Any]:
        """How far the run sent with ``nonce`` got: its steps so far, each ``done`` of
        ``total`` with the label of the step starting. Counted from the plan alone, never
        from the data (docs/ui.md, "Running")."""
        nonce = body.get("nonce")
        if not isinstance(nonce, str):
            raise ParameterError("`nonce` must be the run's one-time string", parameter="nonce")
        return {"events": list(self._progress.get(nonce, ()))}

    def report_file(self, key: str, name: str) -> tuple[bytes, str] | None:
        """A file a run wrote (read-only), by the run's random key and the file's name."""
        run = self._runs.get(key)
        if run is None or name not in run.files:
            return None
        path = run.files[name]
        return path.read_bytes(), _REPORT_TYPES.get(path.suffix, "application/octet-stream")

    def _dataset(self, source: str) -> str:
        """The dataset the ledger keeps the source's budget under: the owner's plan file's
        ``[data] dataset``, else the source's path (the demo's: "demo"); the page's document
        never names it, so a page cannot move a run to a fresh budget."""
        if self.config.demo:
            return DEMO_DATASET
        return resolve_dataset(self._owner_dataset, source, source, ledger_file=True)

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

    def _ledger_view(self, planned: Fraction, *, needs_delta: bool) -> dict[str, Any] | None:
        """Spent, remaining and what the run would leave, for the dataset of the source; beside
        it the dataset's δ budget (the owner's, ``--total-delta``) and what it spent, when it has
        one or the plan needs δ (``needs_delta``: groups from the data)."""
        path, source = self.config.ledger, self.source()
        if path is None:
            return None
        text = format_rational
        view: dict[str, Any] = {"path": str(path)}
        if source is None:
            return {**view, "error": "no data source was given: the ledger's dataset is unknown"}
        try:
            ledger = self._owner_budget(path, self._dataset(source))
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
        view.update(_delta_view(ledger, self.config.total_delta, needs_delta))
        return {
            **view,
            "new": new,
            "total": text(total, max_digits=None),
            "spent": text(spent, max_digits=None),
            "remaining": text(remaining, max_digits=None),
            "after": None if after < 0 else text(after, max_digits=None),
            "short": after < 0,
        }


def _delta_view(ledger: Ledger, given: Fraction | None, needed: bool) -> dict[str, Any]:
    """The dataset's δ budget for the page: its total (the ledger's, else the owner's
    ``--total-delta``) and the δ its entries recorded; a refusal in words when the plan needs δ
    and the owner set no δ budget. Empty when neither."""
    total = _stored_total_delta(ledger) or given
    if total is None:
        if not needed:
            return {}
        return {"delta_error": _NO_DELTA_BUDGET}
    spent = math.fsum(e.delta for e in ledger.entries())
    return {"total_delta": format_rational(total, max_digits=None), "delta_spent": spent}


def _stored_total_delta(ledger: Ledger) -> Fraction | None:
    """The δ budget the ledger file keeps for the ledger's dataset (None: none or no file)."""
    if ledger.path is None or not ledger.path.exists():
        return None
    con = sqlite3.connect(f"{ledger.path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return read_total_delta(con, ledger.dataset)
    except sqlite3.Error:
        return None
    finally:
        con.close()


def _new_folder(output: Path) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for n in range(1000):
        folder = output / (f"run-{stamp}" + (f"-{n}" if n else ""))
        if not folder.exists():
            return folder
    raise ParameterError(f"`output` {str(output)!r} holds too many runs", parameter="output")
