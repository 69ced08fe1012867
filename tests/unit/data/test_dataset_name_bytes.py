"""The default dataset name of a file whose path holds bytes that are not UTF-8: the path with
those bytes as escapes, valid Unicode text that a ledger can keep (before, a release of such a
file was refused as if `--dataset` had been given wrong; docs/data.md, "A budget per dataset")."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from snapdp.cli import main
from snapdp.data.budget.datasets import dataset_name_for, resolve_dataset


def test_a_path_that_is_not_utf8_is_named_with_escapes(tmp_path: Path) -> None:
    name = os.fsdecode(b"b\xff.csv")  # a lone surrogate, as Python keeps the byte
    got = dataset_name_for(str(tmp_path / name), "label")
    assert got == str(tmp_path.resolve() / "b") + "\\xff.csv"
    got.encode("utf-8")  # valid Unicode
    assert resolve_dataset(None, None, str(tmp_path / name), ledger_file=True).endswith("\\xff.csv")
    plain = str(tmp_path / "plain.csv")
    assert dataset_name_for(plain, "label") == str(Path(plain).resolve())  # unchanged


@pytest.mark.skipif(os.name != "posix", reason="file names as bytes are POSIX")
def test_a_release_of_such_a_file_spends_under_one_name(tmp_path: Path) -> None:
    source = tmp_path / os.fsdecode(b"b\xff.csv")
    source.write_text("age\n1\n2\n3\n", encoding="utf-8")
    ledger = str(tmp_path / "l.db")
    args = ["release", str(source), "--count", "--epsilon", "1", "--ledger", ledger]
    first = CliRunner().invoke(main, [*args, "--total-epsilon", "5"])
    assert first.exit_code == 0, first.output
    said = "".join(first.output.split())  # the terminal's width wraps lines, even a path
    assert "remainingε=4" in said and "b\\udcff.csv" in said
    again = CliRunner().invoke(main, args)  # the same name: the same budget
    assert again.exit_code == 0, again.output
    assert "remainingε=3" in "".join(again.output.split())
