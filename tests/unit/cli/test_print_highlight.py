"""The printed results (`snapdp run`, `snapdp sql`) are highlighted only where the highlighting
shows (issue 32): rich's ReprHighlighter colours numbers, paths and quotes, which a console
without a colour system (a pipe, a file, a test's runner) never writes, so there it is not run
(its regular expressions cost a fresh run ~5 ms of CPU). The bytes printed are the bytes of the
console as it was (highlighting every text), with and without a colour terminal."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from rich.highlighter import ReprHighlighter

from snapdp.cli._print import print_results
from snapdp.data import Plan

ROWS = "sex,educ,income,age\n" + "".join(
    f"{i % 2},{1 + i % 3},{1000 * (i % 17)},{20 + i % 50}\n" for i in range(60)
)
PLAN = """[data]
source = "{source}"
total_epsilon = 100

[columns]
age = {{ type = "integer", lower = 0, upper = 100 }}
income = {{ type = "decimal", lower = 0, upper = 50000 }}
sex = {{ type = "integer", keys = [0, 1] }}
educ = {{ type = "integer", keys = [1, 2, 3] }}

[[query]]
statistic = "count"
by = ["sex", "educ"]
epsilon = 1

[[query]]
statistic = "mean"
column = "income"
by = ["sex"]
epsilon = 1

[[query]]
statistic = "quantiles"
column = "age"
quantiles = [0.5]
epsilon = 1
"""


@pytest.fixture(scope="module")
def released(tmp_path_factory: pytest.TempPathFactory) -> tuple[Plan, Any]:
    folder: Path = tmp_path_factory.mktemp("print")
    (folder / "data.csv").write_text(ROWS, encoding="utf-8")
    (folder / "plan.toml").write_text(PLAN.format(source="data.csv"), encoding="utf-8")
    plan = Plan.load(folder / "plan.toml")
    return plan, plan.run()


def _printed(released: tuple[Plan, Any], plain: bool) -> str:
    plan, done = released
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        print_results(
            "data.csv", list(done.results), done.spent, None, done.spent, plan.schema, plain=plain
        )
    return out.getvalue()


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls = [0]
    highlight = ReprHighlighter.highlight

    def counted(self: ReprHighlighter, text: Any) -> None:
        calls[0] += 1
        highlight(self, text)

    monkeypatch.setattr(ReprHighlighter, "highlight", counted)
    return calls


def _as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    """The console as it was: every text highlighted, whatever the console."""
    print_ = Console.print

    def always(self: Console, *objects: Any, **kwargs: Any) -> None:
        kwargs["highlight"] = True
        print_(self, *objects, **kwargs)

    monkeypatch.setattr(Console, "print", always)


@pytest.mark.parametrize("plain", [True, False], ids=["plain", "details"])
def test_no_colour_no_highlighting_same_bytes(
    released: tuple[Plan, Any], plain: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    calls = _counting(monkeypatch)
    now = _printed(released, plain)
    assert calls[0] == 0
    with monkeypatch.context() as m:
        _as_before(m)
        before = _printed(released, plain)
    assert calls[0] > 0  # the console as it was ran the highlighter …
    assert now == before  # … for no byte of difference
    assert "Private release from data.csv" in now and "\x1b[" not in now


def test_a_colour_terminal_is_highlighted_as_before(
    released: tuple[Plan, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.delenv("NO_COLOR", raising=False)
    calls = _counting(monkeypatch)
    now = _printed(released, True)
    assert calls[0] > 0 and "\x1b[" in now
    with monkeypatch.context() as m:
        _as_before(m)
        assert _printed(released, True) == now
