"""A released quantile lies within the declared bounds as exact values, and its ± covers the
rounding to a double (docs/data.md, "Released quantiles are inside the bounds")."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from tests.unit.data._engines import oracle_engine

from snapdp.data import Column, PrivateTable, Query, Schema
from snapdp.data.statistics.math import quantile_values
from snapdp.data.statistics.math.quantile_values import released_interval, released_value, value_pm
from snapdp.errors import ParameterError
from snapdp.ieee import double_at_least, double_at_most, double_within

TOP = 1 << 63
EXTREMES = [
    ("integer", TOP - 2, TOP - 1),
    ("integer", -TOP, -TOP + 1),
    ("integer", TOP - 4000, TOP - 1),
    ("decimal", Fraction("1e300"), Fraction("1.0000000000000001e300")),
    ("decimal", Fraction("1e20"), Fraction("1.00000000000000000001e20")),
    ("decimal", Fraction(5), Fraction("5.000000000000001")),
    ("decimal", Fraction("-1.7e308"), Fraction("-1.6999999999999999e308")),
]
PROBS = (Fraction(1, 10), Fraction(1, 2), Fraction(9, 10))


def _release(kind: str, lo: Fraction | int, hi: Fraction | int, method: str, seed: int) -> Any:
    schema = Schema((Column("x", kind, lo, hi),))  # type: ignore[arg-type]
    # rows at both bounds and beyond them: the clamp puts them at the ends
    rows = [{"x": str(v)} for v in (lo, hi, hi, hi) for _ in range(10)]
    rows += [{"x": "0"}] * 5
    table = PrivateTable(
        schema=schema, engine=oracle_engine(rows), total_epsilon=1, rng=np.random.default_rng(seed)
    )
    (result,) = table.release([Query("quantiles", "x", quantiles=PROBS, method=method)], 1)
    return result


@pytest.mark.parametrize("method", ["tree", "exponential"])
@pytest.mark.parametrize(("kind", "lo", "hi"), EXTREMES)
def test_released_quantiles_lie_in_the_bounds_with_an_honest_pm(
    kind: str, lo: Fraction | int, hi: Fraction | int, method: str, monkeypatch: Any
) -> None:
    rounded: list[tuple[Fraction, float | int]] = []  # (exact quantile, as released)

    def recording(x: Fraction, lower: Fraction, upper: Fraction) -> float | int:
        out = released_value(x, lower, upper)
        rounded.append((x, out))
        return out

    monkeypatch.setattr(quantile_values, "released_value", recording)
    for seed in range(3):
        rounded.clear()
        result = _release(kind, lo, hi, method, seed)
        assert len(rounded) == len(result.rows)
        for row, (exact, released) in zip(result.rows, rounded, strict=True):
            assert row.value == released
            value = Fraction(row.value)  # exact: a double or an int
            assert lo <= value <= hi
            assert Fraction(row.accuracy) >= abs(value - exact)  # covers the rounding
            if row.interval is not None:
                a, b = (Fraction(e) for e in row.interval)
                assert a <= value <= b
            if method == "exponential" and row.interval is None:  # brackets crossed: the range
                assert Fraction(row.accuracy) >= Fraction(hi) - Fraction(lo)


def test_top_of_int64_releases_exact_integers_within_the_bounds() -> None:
    """Was: 2^63 (outside [2^63 − 2, 2^63 − 1]) with ± 5e-324."""
    for method in ("tree", "exponential"):
        for row in _release("integer", TOP - 2, TOP - 1, method, 7).rows:
            assert isinstance(row.value, int) and TOP - 2 <= row.value <= TOP - 1
            assert row.interval is not None
            a, b = row.interval
            assert isinstance(a, int) and isinstance(b, int) and TOP - 2 <= a <= b <= TOP - 1
            if method == "tree":  # the interval holds the p-quantile, an integer; ± exact
                assert a <= (TOP - 2 if row.quantile == Fraction(1, 10) else TOP - 1) <= b
                assert row.accuracy == max(row.value - a, b - row.value)
            else:  # the ± covers the brackets' interval, exactly
                assert row.accuracy == max(row.value - a, b - row.value)
                # both brackets may land on the top integer (the 9/10-quantile of 15 rows at
                # 2^63 − 2 and 30 at 2^63 − 1): that one integer, ± 0


def test_the_pm_covers_the_exact_interval_not_its_double_rounding() -> None:
    lo, hi = Fraction("1e300"), Fraction("1e300") + Fraction("1e284")
    value = released_value(hi, lo, hi)
    assert isinstance(value, float) and lo <= Fraction(value) <= hi
    pm = value_pm(value, lo, hi)
    assert Fraction(pm) >= max(Fraction(value) - lo, hi - Fraction(value))
    a, b = released_interval(lo, hi, lo, hi)
    assert Fraction(a) <= lo and Fraction(b) >= hi  # outward


def test_the_double_helpers_round_in_the_stated_direction() -> None:
    third = Fraction(1, 3)
    assert Fraction(double_at_most(third)) < third < Fraction(double_at_least(third))
    assert double_at_least(Fraction(TOP - 1)) == 2.0**63
    assert double_at_most(Fraction(TOP - 1)) == 2.0**63 - 1024
    assert math.copysign(1, double_at_most(Fraction(0))) == 1  # 0.0, not -0.0
    assert (
        double_within(Fraction(TOP - 1), Fraction(TOP - 1025), Fraction(TOP - 1)) == 2.0**63 - 1024
    )
    assert double_within(Fraction(TOP - 2), Fraction(TOP - 2), Fraction(TOP - 1)) is None
    assert double_at_least(Fraction(10) ** 400) == math.inf


@pytest.mark.parametrize(
    ("kind", "lo", "hi", "shown"),
    [
        ("decimal", "1e400", "1.0000000000000001e400", "doubles' range"),
        ("integer", str(TOP), str(TOP + 1), "within int64"),
        ("decimal", "1e20", "1.00000000000000000001e20", None),
        ("decimal", str(TOP - 2), str(TOP - 1), "hold no double"),
    ],
)
def test_bounds_no_quantile_fits_in_are_refused_before_reading(
    kind: str, lo: str, hi: str, shown: str | None
) -> None:
    schema = Schema((Column("x", kind, lo, hi),))  # type: ignore[arg-type]
    table = PrivateTable(schema=schema, engine=oracle_engine([]), total_epsilon=1)
    for method in ("tree", "exponential"):
        query = Query("quantiles", "x", quantiles=(Fraction(1, 2),), method=method)
        if shown is None:
            table.accuracy([query], 1)
            continue
        with pytest.raises(ParameterError, match=shown) as info:
            table.accuracy([query], 1)
        assert "Fraction(" not in str(info.value) and len(str(info.value)) < 300
        assert table.spent == 0


def test_the_tree_releases_an_integer_columns_quantiles_as_integers() -> None:
    """Issue 33: with one integer per leaf the tree released 31.11 for the leaf of 31 (the
    interpolated place); an integer column's quantile is an integer, the leaf's own."""
    rng = np.random.default_rng(11)
    values = rng.integers(20, 70, size=1000)
    rows = [{"x": str(v)} for v in values]
    schema = Schema((Column("x", "integer", Fraction(0), Fraction(100)),))
    probs = (Fraction(1, 4), Fraction(1, 2), Fraction(3, 4))
    query = Query("quantiles", "x", quantiles=probs, method="tree")
    table = PrivateTable(
        schema=schema, engine=oracle_engine(rows), total_epsilon=100, rng=np.random.default_rng(2)
    )
    for _ in range(5):
        for row in table.release([query], 1)[0].rows:
            assert float(row.value).is_integer(), row
            assert row.interval is not None
            a, b = row.interval
            assert Fraction(row.accuracy) >= max(Fraction(row.value) - a, b - Fraction(row.value))


def test_integer_in_leaf_stays_in_the_leaf() -> None:
    from snapdp.data.statistics.math.quantile_tree import integer_in_leaf, tree_spec

    ones = tree_spec(0, 100, 1)  # 100 leaves of one integer, the last closed at 100
    assert [integer_in_leaf(Fraction(v), ones) for v in ("31.11", "0", "99.99", "100")] == [
        31,
        0,
        99,
        100,
    ]
    narrow = tree_spec(0, 100, Fraction(1, 2))  # leaves of 25/54: some hold no integer
    assert integer_in_leaf(Fraction("31.6"), narrow) == Fraction("31.6")  # [31.48, 31.94): none
    assert integer_in_leaf(Fraction("31.95"), narrow) == 32  # [31.94, 32.41): ⌊v⌋ moved up
    assert integer_in_leaf(Fraction("32.2"), narrow) == 32
    wide = tree_spec(0, 1000, 8)  # leaves of 8 integers
    assert integer_in_leaf(Fraction("31.6"), wide) == 31
