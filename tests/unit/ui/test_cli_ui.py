"""`snapdp ui` on the command line: the URL is the first line of stdout, Ctrl-C stops it cleanly,
a bad plan file is one clear line (docs/ui.md)."""

from __future__ import annotations

import http.client
import os
import re
import signal
import stat
import subprocess
import sys
import urllib.parse
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from tests.unit.ui._helpers import write_people

from snapdp.cli import main

SRC = str(Path(__file__).resolve().parents[3] / "src")


def test_url_first_then_ctrl_c_stops_cleanly(tmp_path: Path) -> None:
    people = write_people(tmp_path / "people.csv")
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "snapdp.cli", "ui", "--no-browser", "--source", str(people)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline().strip()
        m = re.fullmatch(r"http://127\.0\.0\.1:(\d+)/#token=([A-Za-z0-9_-]{43})", first)
        assert m, first
        conn = http.client.HTTPConnection("127.0.0.1", int(m.group(1)), timeout=60)
        conn.request("GET", "/")
        r = conn.getresponse()
        assert r.status == 200 and b"snapdp" in r.read()
        conn.close()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "stopped" in err and "Traceback" not in err
    assert out == ""  # nothing after the URL


def test_bad_plan_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "p.toml").write_text("[data]\nsource = 'x.csv'\nbogus = 1\n")
    result = CliRunner().invoke(main, ["ui", "--no-browser", str(tmp_path / "p.toml")])
    assert result.exit_code == 2
    assert "unknown key 'bogus'" in result.output and "Traceback" not in result.output


def test_help_names_the_flags() -> None:
    result = CliRunner().invoke(main, ["ui", "--help"])
    assert result.exit_code == 0
    for flag in ("--source", "--ledger", "--output", "--port", "--no-browser", "--total-epsilon"):
        assert flag in result.output


def test_the_browser_gets_no_token_on_its_command_line(tmp_path: Path, monkeypatch: Any) -> None:
    """The browser is opened on a private file (mode 0600 in a 0700 folder) that redirects to
    the URL with the token: what reaches the browser's command line holds no token (any local
    user reads a command line with `ps`)."""
    import webbrowser

    from snapdp.ui import server as ui_server

    people = write_people(tmp_path / "people.csv")
    opened: list[dict[str, Any]] = []

    def fake_open(url: str, *args: Any, **kwargs: Any) -> bool:
        seen: dict[str, Any] = {"url": url}
        if url.startswith("file://"):
            path = Path(urllib.parse.unquote(urllib.parse.urlparse(url).path))
            seen["mode"] = stat.S_IMODE(path.stat().st_mode)
            seen["folder_mode"] = stat.S_IMODE(path.parent.stat().st_mode)
            seen["text"] = path.read_text(encoding="utf-8")
        opened.append(seen)
        return True

    monkeypatch.setattr(webbrowser, "open", fake_open)
    monkeypatch.setattr(ui_server.UiServer, "serve_forever", lambda self: None)
    result = CliRunner().invoke(main, ["ui", "--source", str(people), "--output", str(tmp_path)])
    assert result.exit_code == 0, result.output
    url = result.output.splitlines()[0]
    token = url.split("#token=", 1)[1]
    assert len(opened) == 1
    seen = opened[0]
    assert token not in seen["url"] and "token" not in seen["url"]
    assert seen["url"].startswith("file://")
    assert seen["mode"] == 0o600 and seen["folder_mode"] == 0o700
    assert f'url={url}"' in seen["text"] and f'href="{url}"' in seen["text"]
