"""The PrivateTable API: budget split, accuracy before spending, spend before return, the demo."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from snapdp.data import Count, Ledger, Mean, PrivateTable, Sum
from snapdp.data import ledger as ledger_module
from snapdp.data.demo import DEMO_ROWS, demo_table
from snapdp.errors import ParameterError


def _table(**kw: object) -> PrivateTable:
    df = pd.DataFrame({"g": ["a", "b", "a", "zz"], "x": [1.0, 2.0, 3.0, 4.0]})
    return PrivateTable(df, max_rows=10, total_epsilon=10.0, rng=np.random.default_rng(1), **kw)  # type: ignore[arg-type]


def test_split_preview_and_results_agree() -> None:
    t = _table()
    stats = [Count(), Sum("x", 0, 5), Mean("x", 0, 5)]
    previews = t.accuracy(stats, 3.0, split=[1, 1, 2], alpha=0.1)
    assert t.spent == 0  # previewing spends nothing
    results = t.release(stats, 3.0, split=[1, 1, 2], alpha=0.1, by="g", keys=["a", "b", "c"])
    assert [Fraction(r.epsilon) for r in results] == [
        Fraction(3, 4),
        Fraction(3, 4),
        Fraction(3, 2),
    ]
    assert t.spent == 3.0
    for p, r in zip(previews[:2], results[:2], strict=True):
        assert r.accuracy == (p.accuracy,) * 3
    assert previews[2].accuracy is None and previews[2].sum_accuracy is not None
    assert results[0].keys == ("a", "b", "c")  # declared order; "zz" undeclared, "c" absent


def test_absent_key_gets_a_noisy_zero_not_a_missing_row() -> None:
    t = _table()
    counts = np.array([t.count(0.01, by="g", keys=["c"]).values[0] for _ in range(40)])
    assert len(set(counts)) > 1  # noise was added to the 0
    assert np.all(counts >= 0) and np.all(counts <= 10)


def test_nothing_is_returned_when_the_spend_cannot_be_committed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    t = _table()

    def fail() -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(ledger_module, "_before_commit", fail)
    with pytest.raises(RuntimeError, match="disk full"):
        t.count(1.0)
    assert t.spent == 0 and t.ledger.entries() == []


def test_seeded_releases_are_reproducible() -> None:
    a = _table().release([Count(), Sum("x", 0, 5)], 1.0)
    b = _table().release([Count(), Sum("x", 0, 5)], 1.0)
    assert [r.values for r in a] == [r.values for r in b]


def test_grouped_with_several_rows_per_unit_divides_epsilon() -> None:
    df = pd.DataFrame({"pid": [1, 1, 2], "g": ["a", "b", "a"]})
    t = PrivateTable(df, max_rows=10, total_epsilon=1.0, privacy_unit="pid", max_rows_per_unit=2)
    r = t.count(1.0, by="g", keys=["a", "b", "c"])
    assert r.mechanisms["count"]["epsilon"] == 0.5  # one unit can touch min(k, 3) = 2 groups
    assert r.mechanisms["count"]["sensitivity"] == 2


def test_bad_api_arguments() -> None:
    with pytest.raises(ParameterError, match="max_rows"):
        _table(max_rows_per_unit=0)
    t = _table()
    with pytest.raises(ParameterError, match="both `by`"):
        t.count(1.0, by="g")
    with pytest.raises(ParameterError, match="one weight per statistic"):
        t.release([Count()], 1.0, split=[1, 2])
    with pytest.raises(ParameterError, match="cannot be grouped"):
        t.mean("x", 0, 5, 1.0, method="substitute", by="g", keys=["a"])
    with pytest.raises(ParameterError, match="exact number"):
        t.mean("x", 0, 5, 1.0, method="substitute")  # 4 rows, max_rows 10: n is not public
    with pytest.raises(ParameterError, match="lower < upper"):
        Sum("x", 3, 3)
    assert t.spent == 0


def test_demo_table_is_deterministic_and_census_like() -> None:
    d = demo_table()
    fresh = demo_table.__wrapped__()
    assert d.equals(fresh)
    assert d.num_rows == DEMO_ROWS
    assert set(d.column_names) == {"pid", "age", "sex", "educ", "race", "income", "region"}


def test_ledger_file_shared_by_two_tables(tmp_path: Path) -> None:
    path = tmp_path / "b.sqlite"
    df = pd.DataFrame({"x": [1, 2]})
    t1 = PrivateTable(df, max_rows=5, total_epsilon=1.0, ledger=path)
    t2 = PrivateTable(df, max_rows=5, ledger=Ledger(path, 1.0, dataset=t1.ledger.dataset))
    t1.count(0.75)
    with pytest.raises(ValueError, match="budget exceeded"):
        t2.count(0.5)
    assert t2.remaining == 0.25
