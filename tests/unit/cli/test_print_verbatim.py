"""`snapdp run` prints the user's own text as written: a source path, a label or a key that
looks like rich markup (`[final]`, `[red]`) or an emoji code (`:smile:`) is not styled away
(issue 32: the printer's console parses neither, which is also cheaper). Was: `pums[final].csv`
printed as `pums.csv` and `:smile:` as an emoji."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from snapdp.cli import main

NAME = "pums[final]:smile:.csv"
ROWS = "grp\n" + "".join(f"{g}\n" for g in ["[red]a", ":thumbs_up:"] * 30)
PLAN = """[data]
source = "{name}"

[columns]
grp = {{ type = "text", keys = ["[red]a", ":thumbs_up:"] }}

[[query]]
statistic = "count"
by = ["grp"]
epsilon = 0.5
"""


def test_run_prints_paths_and_keys_verbatim(tmp_path: Path) -> None:
    (tmp_path / NAME).write_text(ROWS, encoding="utf-8")
    (tmp_path / "plan.toml").write_text(PLAN.format(name=NAME), encoding="utf-8")
    args = ["run", str(tmp_path / "plan.toml"), "--ledger", str(tmp_path / "b.sqlite")]
    result = CliRunner().invoke(
        main, [*args, "--total-epsilon", "1", "--output", str(tmp_path / "o")]
    )
    assert result.exit_code == 0, result.output
    shown = result.output.replace("\n", "")  # a long path wraps at the console's width
    assert f"{tmp_path / NAME}" in shown
    assert "[red]a" in shown and ":thumbs_up:" in shown
    assert (
        "\N{THUMBS UP SIGN}" not in result.output
        and "\N{SMILING FACE WITH OPEN MOUTH}" not in result.output
    )


#: Keys with what a terminal would act on: colour, a window title, a bell, a line break, NUL,
#: a direction mark. Each is held by 120 rows, so the selection shows it (a group of 120 rows
#: at ε = 1 and δ = 1e-6 is missed with probability far below 1e-6).
CONTROL_KEYS = ["\x1b[31mred\x1b[0m", "\x1b]0;title\x07", "a\x00b", "\u200eleft"]


def test_keys_from_the_data_print_their_control_characters_escaped(tmp_path: Path) -> None:
    """A key chosen from the data cannot drive the terminal: its control and format characters
    are printed as escapes; ``--json`` holds the key as it is."""
    rows = "grp\n" + "".join(f'"{k}"\n' for k in CONTROL_KEYS * 120)
    (tmp_path / "t.csv").write_text(rows, encoding="utf-8")
    (tmp_path / "t.toml").write_text(
        f'[data]\nsource = "{tmp_path / "t.csv"}"\n[columns]\ngrp = {{ type = "text" }}\n',
        encoding="utf-8",
    )
    base = ["sql", "SELECT grp, COUNT(*) FROM t GROUP BY grp", "--declaration",
            str(tmp_path / "t.toml"), "--epsilon", "1", "--delta", "1e-6"]  # fmt: skip
    shown = CliRunner().invoke(main, base)
    assert shown.exit_code == 0, shown.output
    for escaped in ["\\x1b[31mred\\x1b[0m", "\\x1b]0;title\\x07", "a\\x00b", "\\u200eleft"]:
        assert escaped in shown.output
    assert not any(c in shown.output for c in "\x1b\x07\x00\u200e")
    as_json = CliRunner().invoke(main, [*base, "--json"])
    assert as_json.exit_code == 0, as_json.output
    assert sorted(json.loads(as_json.output)["results"][0]["keys"]["grp"]) == sorted(CONTROL_KEYS)
