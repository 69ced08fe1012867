"""A table's title prints on one line when it is wider than the table (rich wraps a title to the
table's width: `mean(income) by sex, ε =` on one line and `0.333` on the next)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from snapdp.cli import main

PLAN = """[data]
source = "{source}"

[columns]
s = {{ type = "integer", keys = [0, 1] }}
income = {{ type = "decimal", lower = 0, upper = 500000 }}

[[query]]
statistic = "mean"
column = "income"
by = ["s"]
epsilon = 0.333
"""


def test_a_title_wider_than_its_table_is_one_line(tmp_path: Path) -> None:
    data = tmp_path / "t.csv"
    data.write_text("s,income\n" + "0,10\n1,20\n" * 30, encoding="utf-8")
    (tmp_path / "plan.toml").write_text(PLAN.format(source=data.as_posix()), encoding="utf-8")
    out = CliRunner().invoke(
        main,
        [
            "run",
            str(tmp_path / "plan.toml"),
            "--ledger",
            str(tmp_path / "b.sqlite"),
            "--total-epsilon",
            "1",
            "--output",
            str(tmp_path / "o"),
        ],
    )
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    title = next(line for line in lines if "mean(income) by s" in line)
    assert title.strip() == "mean(income) by s, ε = 0.333"
    table = lines[lines.index(title) + 1 :]
    top = next(line for line in table if line.startswith("┏"))
    assert len(top) >= len(title.strip())  # the table is at least as wide as its title
