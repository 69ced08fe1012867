"""One query written as CLI flags, as a TOML plan and as SQL compiles to the same workload and,
with one seed, releases the same values (docs/sql.md, "One workload"); the names table is the
one the CLI and the TOML loader use."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from snapdp.cli._data import FLAGS
from snapdp.data import PrivateTable
from snapdp.data.frontends.flags import workload_from_flags
from snapdp.data.frontends.sql import parse_sql
from snapdp.data.frontends.toml import _COLUMN_KEYS, _DATA_KEYS, _QUERY_KEYS, load_workload
from snapdp.data.model import names

pytest.importorskip("sqlglot")

PLAN = """[data]
source = "people.csv"

[columns]
age = "integer"
income = { type = "decimal", lower = 0, upper = 1000 }
sex = { type = "integer", keys = [1, 2] }

[[query]]
statistic = "count"
by = "sex"
where = "age BETWEEN 18 AND 64 OR income IS NULL"
epsilon = 0.5

[[query]]
statistic = "mean"
column = "income"
by = "sex"
where = "age BETWEEN 18 AND 64 OR income IS NULL"
epsilon = 0.5
"""


def _people(path: Path) -> Path:
    rng = np.random.default_rng(5)
    lines = ["sex,income,age"] + [
        f"{int(rng.integers(1, 4))},{rng.uniform(-5, 1200):.2f},{int(rng.integers(0, 90))}"
        for _ in range(300)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_flags_toml_and_sql_give_one_workload_and_the_same_values(tmp_path: Path) -> None:
    data = _people(tmp_path / "people.csv")
    (tmp_path / "plan.toml").write_text(PLAN)
    toml = load_workload(tmp_path / "plan.toml")
    flags = workload_from_flags(
        source=str(data),
        epsilon=Fraction(1),
        declaration={"keys": ["sex=1,2"], "columns": ["age:integer"]},
        want_count=True,
        means=["income:0:1000"],
        by=["sex"],
        where="age BETWEEN 18 AND 64 OR income IS NULL",
    )
    sql = parse_sql(
        "SELECT sex, COUNT(*), AVG(income) FROM people "
        "WHERE age BETWEEN 18 AND 64 OR income IS NULL GROUP BY sex",
        toml.declaration,
        epsilon=1,
    )
    assert flags.queries == toml.queries == sql.workload.queries
    assert flags.schema == toml.schema == sql.workload.schema
    assert flags.queries[0].query.where is not None
    released = []
    for workload in (flags, toml, sql.workload):
        table = PrivateTable(str(data), workload.schema, total_epsilon=1,
                             rng=np.random.default_rng(9))  # fmt: skip
        eps = [pq.epsilon for pq in workload.queries]
        results = table.release([pq.query for pq in workload.queries], eps)
        released.append([r.as_dict() for r in results])
    assert released[0] == released[1] == released[2]
    assert released[0][0]["value"] != released[0][1]["value"]  # two different statistics


def test_one_names_table() -> None:
    for parameter, flag in FLAGS.items():
        assert names.NAMES[parameter].flag == flag
    assert _DATA_KEYS["max_rows_per_unit"] == ("max_contributions", "k")
    assert _COLUMN_KEYS["keys"] == ("values", "domain")
    assert "sql" in _QUERY_KEYS and "where" in _QUERY_KEYS
    assert names.sql_word_for("max_groups_per_unit") == "max_groups_contributed"


def test_release_where_flag_equals_sql(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from snapdp.cli import main

    data = _people(tmp_path / "people.csv")
    (tmp_path / "decl.toml").write_text(PLAN.split("[[query]]")[0])
    flags = CliRunner().invoke(
        main,
        [
            "release",
            str(data),
            "--count",
            "--mean",
            "income:0:1000",
            "--keys",
            "sex=1,2",
            "--column",
            "age:integer",
            "--by",
            "sex",
            "--where",
            "age >= 18 AND income < 500",
            "--epsilon",
            "1",
            "--dry-run",
            "--json",
        ],
    )
    sql = CliRunner().invoke(
        main,
        [
            "sql",
            "SELECT sex, COUNT(*), AVG(income) FROM people WHERE age >= 18 AND income < 500 "
            "GROUP BY sex",
            "--declaration",
            str(tmp_path / "decl.toml"),
            "--epsilon",
            "1",
            "--dry-run",
            "--json",
        ],
    )
    assert flags.exit_code == sql.exit_code == 0, (flags.output, sql.output)
    assert json.loads(flags.output) == json.loads(sql.output)
    assert "where age >= 18 AND income < 500" in flags.output
    bad = CliRunner().invoke(
        main,
        ["release", str(data), "--count", "--where", "salary > 3", "--epsilon", "1", "--json"],
    )
    assert bad.exit_code == 2
    assert json.loads(bad.output)["error"].startswith("`--where`, line 1, column 1:")
