"""The pure functions of snapdp.snapping against exact oracles (DESIGN §2.1, §2.4–2.6)."""

from __future__ import annotations

import math
from fractions import Fraction

import gmpy2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from snapdp.parameters import compute_parameters
from snapdp.snapping import grid_index, noise, normalize, output_from_index, snapped_output

PARAMS = [
    compute_parameters(1.0, 1.0, -50.0, 50.0),
    compute_parameters(4.0, 1.0, -(2.0**60), 2.0**60),  # Λ = 1/2, huge B̃: p = 124
    compute_parameters(0.01, 3.0, -7.0, 1000.0),
    compute_parameters(2.0**20, 1.0, -1e6, 1e6),
]


def frac(x: object) -> Fraction:
    if isinstance(x, gmpy2.mpq):
        return Fraction(int(x.numerator), int(x.denominator))
    return Fraction(*x.as_integer_ratio())  # type: ignore[attr-defined]


def oracle_index(params: object, x_tilde: Fraction, y: Fraction) -> int:
    grid = frac(params.grid)  # type: ignore[attr-defined]
    return math.floor((x_tilde + y) / grid + Fraction(1, 2))


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(PARAMS),
    st.fractions(min_value=-1000, max_value=1000, max_denominator=10**6),
    st.floats(min_value=-1e4, max_value=1e4, allow_nan=False),
)
def test_grid_index_is_exact_floor(params: object, x: Fraction, y: float) -> None:
    x_q = gmpy2.mpq(x.numerator, x.denominator)
    y_mp = gmpy2.mpfr(y, 200)
    assert grid_index(params, x_q, y_mp) == oracle_index(params, x, Fraction(y))  # type: ignore[arg-type]


@pytest.mark.parametrize("params", PARAMS)
@pytest.mark.parametrize("j", [-7, -3, -1, 0, 1, 2, 5])
def test_ties_go_toward_plus_infinity_negative_too(params: object, j: int) -> None:
    grid = frac(params.grid)  # type: ignore[attr-defined]
    tie = (Fraction(j) + Fraction(1, 2)) * grid
    x = gmpy2.mpq(tie.numerator, tie.denominator)
    zero = gmpy2.mpfr(0)
    assert grid_index(params, x, zero) == j + 1  # type: ignore[arg-type]
    tiny = gmpy2.mpfr(2.0**-300)
    assert grid_index(params, x, -tiny) == j  # type: ignore[arg-type]
    assert grid_index(params, x, tiny) == j + 1  # type: ignore[arg-type]


def test_no_rounding_of_the_sum_before_snapping() -> None:
    """x̃ + Y just below a tie: rounding the sum to a double first would land on the tie."""
    params = PARAMS[1]  # Λ = 1/2
    tie = Fraction(2**50) + Fraction(1, 4)  # (2**51 + 1/2)·Λ, a double
    x = gmpy2.mpq(tie.numerator, tie.denominator)
    y = -gmpy2.mpfr(2.0**-100)
    k = grid_index(params, x, y)
    assert k == oracle_index(params, tie, -(Fraction(2) ** -100))
    assert k == 2**51  # below the tie: rounds down
    as_double = float(tie) + float(y)  # what a double-rounding implementation would snap
    assert as_double == float(tie)
    assert math.floor(Fraction(as_double) * 2 + Fraction(1, 2)) == k + 1


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(PARAMS),
    st.booleans(),
    st.floats(min_value=5e-324, max_value=1.0, exclude_max=True),
)
def test_noise_is_log_then_product_each_rounded_once(
    params: object, negative: bool, u: float
) -> None:
    p = params.precision  # type: ignore[attr-defined]
    with gmpy2.context(precision=3 * p + 64):
        log_hi = gmpy2.log(gmpy2.mpfr(u))
    ln_p = gmpy2.mpfr(log_hi, p)  # correct rounding of the log (3p+64 bits: no hard case here)
    with gmpy2.context(precision=p):
        y = gmpy2.mpfr(params.scale) * ln_p  # type: ignore[attr-defined]
    sign = -1 if negative else 1
    expected = -gmpy2.mpq(y) if negative else gmpy2.mpq(y)  # exact: no rounding in the negation
    assert gmpy2.mpq(noise(params, sign, u)) == expected  # type: ignore[arg-type]


def test_normalize_is_exact_and_clamps() -> None:
    params = PARAMS[2]  # Δ = 3, c = 496.5, B̃ = 1007/6
    assert frac(normalize(params, 10)) == (Fraction(10) - Fraction(993, 2)) / 3
    assert frac(normalize(params, 2**80)) == frac(params.bound)
    assert frac(normalize(params, math.inf)) == frac(params.bound)
    assert frac(normalize(params, -math.inf)) == -frac(params.bound)
    assert frac(normalize(params, Fraction(1, 3))) == (Fraction(1, 3) - Fraction(993, 2)) / 3
    big = 2**60 + 1  # an int is used exactly, not through a double
    params_wide = PARAMS[1]
    assert frac(normalize(params_wide, big)) == frac(params_wide.bound)
    assert frac(normalize(params_wide, 2**59 + 1)) == Fraction(2**59 + 1)


def test_output_from_index_rounds_once_and_clamps() -> None:
    params = compute_parameters(1.0, Fraction(1, 3), Fraction(1, 10), Fraction(7, 10))
    grid = frac(params.grid)
    center = Fraction(4, 10)
    for k in range(-3, 4):
        snapped = k * grid
        expected = center + Fraction(1, 3) * snapped
        bound = frac(params.bound)
        if snapped >= bound:
            expected = Fraction(7, 10)
        elif snapped <= -bound:
            expected = Fraction(1, 10)
        assert output_from_index(params, k) == float(expected)  # Fraction→float rounds once
    assert output_from_index(params, 10**9) == 0.7
    assert output_from_index(params, -(10**9)) == 0.1


def test_snapped_output_composes_the_steps() -> None:
    params = PARAMS[0]
    for u in (0.5, 0.1, 1e-300, 5e-324, 0.9999999999999999):
        for sign in (-1, 1):
            x = normalize(params, 3.25)
            k = grid_index(params, x, noise(params, sign, u))
            assert snapped_output(params, x, sign, u) == output_from_index(params, k)
