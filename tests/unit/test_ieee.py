"""snapdp.ieee against an exact Fraction oracle over the whole double range (seed 001 §4)."""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from snapdp import ParameterError
from snapdp.ieee import power_of_two_at_least, round_to_multiple

MAX_DOUBLE = Fraction(2) ** 1024 - Fraction(2) ** 971
finite_doubles = st.floats(allow_nan=False, allow_infinity=False)
exponents = st.integers(min_value=-1074, max_value=1023)


def oracle_power_of_two(x: float) -> Fraction:
    """Smallest 2**n >= x: start from a guess by bit lengths, then step with exact comparisons."""
    q = Fraction(x)
    n = q.numerator.bit_length() - q.denominator.bit_length() - 2
    while Fraction(2) ** n < q:
        n += 1
    assert Fraction(2) ** (n - 1) < q
    return Fraction(2) ** n


def oracle_round(x: float, m: int) -> Fraction:
    """Nearest multiple of 2**m, ties toward +∞: floor(x/2**m + 1/2)·2**m, exactly."""
    step = Fraction(2) ** m
    return math.floor(Fraction(x) / step + Fraction(1, 2)) * step


def same_double(a: float, b: float) -> bool:
    return struct.pack("<d", a) == struct.pack("<d", b)


def powers_and_neighbours() -> list[float]:
    out = []
    for n in range(-1074, 1024):
        p = math.ldexp(1.0, n)
        out += [p, math.nextafter(p, 0.0), math.nextafter(p, math.inf)]
    return [x for x in out if 0 < x < math.inf]


@settings(max_examples=3000, deadline=None)
@given(st.floats(min_value=5e-324, allow_nan=False, allow_infinity=False))
@example(5e-324)
@example(2.2250738585072014e-308)
@example(2.225073858507201e-308)
def test_power_of_two_matches_oracle(x: float) -> None:
    expected = oracle_power_of_two(x)
    if expected > MAX_DOUBLE:
        with pytest.raises(ParameterError, match="2\\*\\*1024"):
            power_of_two_at_least(x)
    else:
        result = power_of_two_at_least(x)
        assert Fraction(result) == expected


def test_power_of_two_table() -> None:
    for x in powers_and_neighbours():
        expected = oracle_power_of_two(x)
        if expected > MAX_DOUBLE:
            continue
        assert Fraction(power_of_two_at_least(x)) == expected, x


@pytest.mark.parametrize("bad", [0.0, -0.0, -1.0, -5e-324, math.inf, -math.inf, math.nan])
def test_power_of_two_rejects(bad: float) -> None:
    with pytest.raises(ParameterError, match="`x`"):
        power_of_two_at_least(bad)


def test_power_of_two_rejects_overflow_and_types() -> None:
    with pytest.raises(ParameterError, match="2\\*\\*1024"):
        power_of_two_at_least(1.5 * 2.0**1023)
    with pytest.raises(ParameterError, match="must be a float"):
        power_of_two_at_least(3)  # type: ignore[arg-type]


def check_round(x: float, m: int) -> None:
    expected = oracle_round(x, m)
    if abs(expected) > MAX_DOUBLE:
        with pytest.raises(ParameterError, match="not a finite double"):
            round_to_multiple(x, m)
        return
    result = round_to_multiple(x, m)
    assert Fraction(result) == expected, (x, m, result)
    if expected == 0 and x != 0:
        assert same_double(result, 0.0)  # a rounded non-zero gives +0.0


@settings(max_examples=5000, deadline=None)
@given(finite_doubles, exponents)
@example(-2.5, 0)
@example(2.5, 0)
@example(-0.5, 0)
@example(0.5, 0)
@example(-5e-324, -1073)
@example(1.7976931348623157e308, 1023)
@example(-1.7976931348623157e308, 1023)
def test_round_to_multiple_matches_oracle(x: float, m: int) -> None:
    check_round(x, m)


@settings(max_examples=2000, deadline=None)
@given(st.integers(min_value=-(2**53), max_value=2**53), exponents)
def test_exact_ties_go_toward_plus_infinity(k: int, m: int) -> None:
    """x = (k + 1/2)·2**m exactly, when representable: the result is (k + 1)·2**m."""
    tie = (Fraction(k) + Fraction(1, 2)) * Fraction(2) ** m
    try:
        x = float(tie)
    except OverflowError:
        return
    if Fraction(x) != tie:
        return  # not representable: not a tie
    check_round(x, m)
    if abs(tie) < MAX_DOUBLE / 2:
        assert Fraction(round_to_multiple(x, m)) == (k + 1) * Fraction(2) ** m


def test_round_table_of_powers_neighbours_and_ties() -> None:
    values = powers_and_neighbours()
    values += [-v for v in values] + [0.0, -0.0]
    for m in (-1074, -1073, -1022, -60, -1, 0, 1, 52, 53, 1000, 1023):
        for x in values[:: 7 if m not in (0, -1074) else 1]:
            check_round(x, m)
        for j in range(-6, 7):  # ties and near-ties around small multiples
            tie = math.ldexp(j + 0.5, m) if -1074 < m < 1020 else None
            if tie is not None and math.isfinite(tie):
                for x in (tie, math.nextafter(tie, -math.inf), math.nextafter(tie, math.inf)):
                    check_round(x, m)


def test_round_keeps_signed_zero_and_multiples() -> None:
    assert same_double(round_to_multiple(-0.0, 3), -0.0)
    assert same_double(round_to_multiple(0.0, -5), 0.0)
    assert round_to_multiple(-3.0, 0) == -3.0
    assert round_to_multiple(-2.5, 0) == -2.0
    assert round_to_multiple(-3.5, 0) == -3.0
    assert round_to_multiple(2.5, 0) == 3.0


@pytest.mark.parametrize(
    ("x", "m", "message"),
    [
        (math.nan, 0, "finite"),
        (math.inf, 0, "finite"),
        (-math.inf, 0, "finite"),
        (1.0, 1024, "-1074, 1023"),
        (1.0, -1075, "-1074, 1023"),
        (1.0, 1.5, "`m` must be an int"),
        (1.0, True, "`m` must be an int"),
        ("1", 0, "`x` must be a float"),
    ],
)
def test_round_rejects(x: object, m: object, message: str) -> None:
    with pytest.raises(ParameterError, match=message):
        round_to_multiple(x, m)  # type: ignore[arg-type]
