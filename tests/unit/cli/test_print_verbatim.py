"""`snapdp run` prints the user's own text as written: a source path, a label or a key that
looks like rich markup (`[final]`, `[red]`) or an emoji code (`:smile:`) is not styled away
(issue 32: the printer's console parses neither, which is also cheaper). Was: `pums[final].csv`
printed as `pums.csv` and `:smile:` as an emoji."""

from __future__ import annotations

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
