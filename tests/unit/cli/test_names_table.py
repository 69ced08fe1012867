"""One table of user-facing names (docs/sql.md, "One workload"): every error of the CLI names a
flag through :mod:`snapdp.data.model.names`; no CLI module keeps a table of its own."""

from __future__ import annotations

import ast
from pathlib import Path

from click.testing import CliRunner

from snapdp.cli import _common, main
from snapdp.data.model.names import NAMES, flags

CLI = Path(__file__).resolve().parents[3] / "src" / "snapdp" / "cli"


def test_the_boundary_reads_the_one_table() -> None:
    assert flags() == _common.FLAGS
    for parameter in ("sensitivity", "alpha", "neighbour", "timeout", "memory_limit", "value"):
        assert NAMES[parameter].flag is not None


def test_no_cli_module_keeps_a_flag_table() -> None:
    """No dict literal in src/snapdp/cli maps names to two or more ``--flags``."""
    found = []
    for path in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Dict):
                flagged = [
                    v for v in node.values
                    if isinstance(v, ast.Constant) and str(v.value).startswith("--")
                ]  # fmt: skip
                if len(flagged) >= 2:
                    found.append(f"{path.name}:{node.lineno}")
    assert not found, found


def test_single_value_errors_name_the_flags() -> None:
    runner = CliRunner()
    out = runner.invoke(main, ["release", "--value", "5", "--epsilon", "1", "--lower", "0",
                               "--upper", "10", "--sensitivity", "-1"])  # fmt: skip
    assert out.exit_code == 2
    assert "--sensitivity" in out.output and "`sensitivity`" not in out.output
    out = runner.invoke(main, ["release", "--value", "5", "--epsilon", "1", "--lower", "10",
                               "--upper", "0", "--json"])  # fmt: skip
    assert out.exit_code == 2
    assert "--lower" in out.output or "--upper" in out.output
    assert "`lower`" not in out.output and "`upper`" not in out.output


def test_table_errors_name_the_statistic_flags(tmp_path: Path) -> None:
    data = tmp_path / "d.csv"
    data.write_text("v\n1\n2\n")
    out = CliRunner().invoke(main, ["release", str(data), "--epsilon", "1", "--var-samp", "v"])
    assert out.exit_code == 2
    assert "--var-samp" in out.output  # the flag list of the one table names it
