"""An ε typed as ``1/3`` or ``0.1`` is taken exactly, through the API and a plan file (issue 33,
item 5)."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from tests.unit.data._engines import oracle_engine
from tests.unit.data.test_release_api import SCHEMA, _rows

from snapdp._validation import check_epsilon
from snapdp.data import Plan, PrivateTable, Query
from snapdp.errors import ParameterError


@pytest.mark.parametrize(("typed", "exact"), [("1/3", Fraction(1, 3)), ("0.1", Fraction(1, 10))])
def test_a_typed_epsilon_is_spent_exactly(typed: str, exact: Fraction) -> None:
    table = PrivateTable(
        schema=SCHEMA, engine=oracle_engine(_rows()), total_epsilon=1,
        rng=np.random.default_rng(0),
    )  # fmt: skip
    (result,) = table.release([Query("count")], typed)
    assert result.epsilon == exact


@pytest.mark.parametrize("typed", ["-1/3", "1/0", "one third", "0"])
def test_a_bad_epsilon_is_refused_in_one_line_without_a_repr(typed: str) -> None:
    with pytest.raises(ParameterError) as info:
        check_epsilon("epsilon", typed)
    text = str(info.value)
    assert "epsilon" in text and "\n" not in text and "Fraction(" not in text


def test_a_plan_file_takes_epsilon_one_third_as_text(tmp_path: Path) -> None:
    text = (
        '[data]\nsource = "d.csv"\nprivacy_unit = "pid"\ntotal_epsilon = "2/3"\n\n[columns]\n'
        'age = { type = "integer", lower = 0, upper = 100 }\n\n'
        '[[query]]\nstatistic = "count"\nepsilon = "1/3"\ngrid_counts = true\n'
    )
    path = tmp_path / "plan.toml"
    path.write_text(text, encoding="utf-8")
    plan = Plan.load(path)
    (pq,) = plan.queries
    assert pq.epsilon == Fraction(1, 3) and pq.query.grid_counts is True
