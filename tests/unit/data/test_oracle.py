"""The reference engine itself, on tables small enough to check by hand."""

from __future__ import annotations

from pathlib import Path

from tests.data_oracle import OracleEngine, cast

from snapdp.data.engines.base import AggregatePlan, ValueColumn, row_rank
from snapdp.data.model.schema import Column, ContributionBounds, NullRule


def test_casts_follow_the_contract() -> None:
    assert [cast("integer", t) for t in ["3", " -4 ", "3.0", "1e3", "2.5", "x", "", "inf"]] == [
        3, -4, 3, 1000, None, None, None, None,
    ]  # fmt: skip
    assert cast("decimal", "0.1") == 0.1 and cast("decimal", "1e400") is None
    assert cast("decimal", float("nan")) is None and cast("integer", 2.0) == 2
    assert cast("boolean", "Yes") is True and cast("boolean", 1) is None
    assert cast("text", 12) == "12" and cast("text", " a ") == " a "
    assert cast("date", "2024-02-30") is None and str(cast("date", "2024-02-29")) == "2024-02-29"


def test_typed_keys_bins_nulls_and_values(tmp_path: Path) -> None:
    f = tmp_path / "t.csv"
    f.write_text("k,v,a\n1,10,5\n2,20,17\n2.5,30,18\n,40,101\n1,x,-1\nunknown,50,3\n1,2\n")
    k = Column("k", "integer", keys=(1, 2), nulls=NullRule("impute", 2))
    a = Column("a", "integer", bins=(0, 18, 101))
    v = ValueColumn(Column("v", "decimal", lower=0, upper=25), 0, 0, 25, None, squares=True)
    agg = OracleEngine(f).aggregate(AggregatePlan(groupings=(k, a), values=(v,)))
    # cells (k, a-bin): (1,[0,18)) (1,[18,101)) (2,[0,18)) (2,[18,101))
    # rows: "1,10,5" → (1, bin0); "2,20,17" → (2, bin0); "2.5" is no integer: null, imputed 2,
    # a = 18 → (2, bin1), v clamped to 25; ",40,101" → k imputed 2, a = 101 outside every bin →
    # dropped; "1,x,-1" a = -1 outside → dropped; "unknown" → imputed 2, a = 3 → (2, bin0), v = 25;
    # "1,2" malformed → skipped.
    assert agg.rows == [1, 0, 2, 1]
    assert agg.sums == [[10, 0, 45, 25]] and agg.counts == [[1, 0, 2, 1]]
    assert agg.squares == [[(20 - 25) ** 2, 0, (40 - 25) ** 2 + (50 - 25) ** 2, (50 - 25) ** 2]]


def test_bounding_keeps_the_lowest_ranked_rows() -> None:
    rows = [{"u": "a", "v": str(i)} for i in range(5)] + [{"u": None, "v": "7"}] * 2
    v = ValueColumn(Column("v", "integer", lower=0, upper=10), 0, 0, 10)
    key = "0123456789abcdef" * 2
    plan = AggregatePlan(
        values=(v,),
        unit=Column("u", "text"),
        bounds=ContributionBounds(max_rows_per_unit=2),
        hash_key=key,
    )
    expect = sorted(range(5), key=lambda i: row_rank(plan, "a", 0, [i]))[:2]
    assert OracleEngine(rows).aggregate(plan).sums == [[sum(expect)]]
    own = AggregatePlan(
        values=(v,), unit=Column("u", "text"), null_units="own",
        bounds=ContributionBounds(max_rows_per_unit=2), hash_key=key,
    )  # fmt: skip
    assert OracleEngine(rows).aggregate(own).sums == [[sum(expect) + 14]]
