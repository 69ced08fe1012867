"""Fixes from the DESIGN §8.1/§8.5 review of the release paths (each failed before):
a declaration's total_epsilon created a budget in `snapdp sql`; a Ctrl-C after a plan run's
cap was reserved said "nothing spent"; a missing column's refusal listed the source's header."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from snapdp.cli import main
from snapdp.data import Plan, PrivateTable, Query, read_ledger
from snapdp.data.model.schema import Column, Schema
from snapdp.errors import ParameterError

DECL = """[data]
source = "people.csv"
total_epsilon = 5
[columns]
age = { type = "integer", lower = 0, upper = 100 }
"""


def _people(folder: Path) -> None:
    (folder / "people.csv").write_text(
        "age,secret_column\n" + "".join(f"{20 + i % 50},{i}\n" for i in range(40))
    )


def test_a_declaration_never_creates_a_budget_in_sql(tmp_path: Path) -> None:
    _people(tmp_path)
    (tmp_path / "decl.toml").write_text(DECL)
    ledger = tmp_path / "new.sqlite"
    args = ["sql", "SELECT COUNT(*) FROM people", "--declaration", str(tmp_path / "decl.toml"),
            "--epsilon", "0.5", "--ledger", str(ledger)]  # fmt: skip
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 2, out.output
    assert "--total-epsilon" in out.output
    assert not ledger.exists()
    out = CliRunner().invoke(main, [*args, "--total-epsilon", "3"])  # the owner's act
    assert out.exit_code == 0, out.output
    (summary,) = read_ledger(ledger).datasets
    assert str(summary.total_epsilon) == "3"


def test_a_ctrl_c_after_the_cap_is_reserved_is_not_nothing_spent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _people(tmp_path)
    plan = tmp_path / "plan.toml"
    plan.write_text(DECL + '[[query]]\nstatistic = "count"\nepsilon = 1\n')

    def interrupted(self: Plan, **kw: Any) -> Any:
        kw["progress"](0, 4, "planning")
        kw["progress"](2, 4, "releasing")
        raise KeyboardInterrupt

    monkeypatch.setattr(Plan, "run", interrupted)
    out = CliRunner().invoke(main, ["run", str(plan), "--ledger", str(tmp_path / "l.sqlite"),
                                    "--total-epsilon", "5"])  # fmt: skip
    assert "nothing spent" not in out.output
    assert "after the spend was committed" in out.output


def test_a_missing_column_names_only_the_declared_one(tmp_path: Path) -> None:
    _people(tmp_path)
    schema = Schema(
        [Column("age", "integer", lower=0, upper=100), Column("sex", "integer", keys=[0, 1])]
    )
    table = PrivateTable(
        str(tmp_path / "people.csv"), schema, total_epsilon=1, rng=np.random.default_rng(1)
    )
    with pytest.raises(ParameterError) as exc:
        table.release([Query("count", by=("sex",))], epsilon=1)
    assert "'sex'" in str(exc.value)
    assert "secret_column" not in str(exc.value)
