"""`snapdp release --memory-limit` reaches the DuckDB engine (docs/data.md)."""

from __future__ import annotations

from pathlib import Path


def test_memory_limit_is_honoured_and_a_bad_one_names_the_flag(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from snapdp.cli import main

    f = tmp_path / "m.csv"
    f.write_text("g\n" + "0\n1\n" * 50)
    ok = CliRunner().invoke(
        main, ["release", str(f), "--epsilon", "1", "--count", "--keys", "g=0,1",
               "--memory-limit", "200MB", "--json"],
    )  # fmt: skip
    assert ok.exit_code == 0, ok.output
    bad = CliRunner().invoke(
        main, ["release", str(f), "--epsilon", "1", "--count", "--keys", "g=0,1",
               "--memory-limit", "lots"],
    )  # fmt: skip
    assert bad.exit_code == 2 and "`--memory-limit` must be a size" in bad.output
