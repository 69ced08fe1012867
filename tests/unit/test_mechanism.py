"""SnappingMechanism and LaplaceMechanism: contract, bad inputs, accuracy functions."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from snapdp import LaplaceMechanism, ParameterError, SnappingMechanism, epsilon_for_accuracy

SEED = 20261121


def seeded(*args: float, seed: int = SEED) -> SnappingMechanism:
    return SnappingMechanism(*args, rng=np.random.default_rng(seed))


# -- bad input ---------------------------------------------------------------------------------
BAD_PARAMETERS = [
    ((math.nan, 1, 0, 1), "`epsilon` must be finite"),
    ((math.inf, 1, 0, 1), "`epsilon` must be finite"),
    ((0.0, 1, 0, 1), "`epsilon` must be > 0"),
    ((-1.0, 1, 0, 1), "`epsilon` must be > 0"),
    (("abc", 1, 0, 1), "`epsilon` must be a positive number"),
    (("-0.1", 1, 0, 1), "`epsilon` must be a positive number"),
    (("0", 1, 0, 1), "`epsilon` must be > 0"),
    ((None, 1, 0, 1), "`epsilon` must be a real number"),
    ((True, 1, 0, 1), "`epsilon` must be a real number, not a bool"),
    ((1, math.nan, 0, 1), "`sensitivity` must be finite"),
    ((1, -2, 0, 1), "`sensitivity` must be > 0"),
    ((1, 0, 0, 1), "`sensitivity` must be > 0"),
    ((1, 1, 1, 1), "`lower` must be < `upper`"),
    ((1, 1, 2, 1), "`lower` must be < `upper`"),
    ((1, 1, -math.inf, 1), "`lower` must be finite"),
    ((1, 1, 0, math.inf), "`upper` must be finite"),
    ((1, 1, 0, math.nan), "`upper` must be finite"),
    ((1, 1, "0", 1), "`lower` must be a real number"),
    ((1e-16, 1, 0, 1), "too small"),  # ε′ <= 0
    ((1, 1, 0, complex(1, 0)), "`upper` must be a real number"),
]


@pytest.mark.parametrize(("args", "message"), BAD_PARAMETERS)
def test_bad_parameters_are_named(args: tuple[object, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SnappingMechanism(*args)  # type: ignore[arg-type]


def test_decimal_epsilon_is_exact_and_other_decimals_are_refused() -> None:
    from decimal import Decimal

    assert SnappingMechanism(Decimal("0.1"), 1, 0, 1).epsilon == Fraction(1, 10)
    assert SnappingMechanism(Decimal("0.1"), 1, 0, 1).rescaling.epsilon == Fraction(1, 10)
    with pytest.raises(ParameterError, match="convert it explicitly"):
        SnappingMechanism(1, Decimal("0.1"), 0, 1)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "message"),
    [(math.nan, "must not be NaN"), ("3", "real number"), (None, "real number"), (True, "bool")],
)
def test_bad_values_are_named(value: object, message: str) -> None:
    with pytest.raises(ValueError, match=f"`value`.*{message}"):
        seeded(1, 1, 0, 10).release(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ([1.0, math.nan], "NaN \\(first at index 1\\)"),
        (["a", "b"], "dtype"),
        ([True, False], "dtype bool"),
        (3.0, "not a scalar"),
        ([1 + 2j], "dtype complex"),
        ([[1, 2], [3]], "array of real numbers"),
    ],
)
def test_bad_value_arrays_are_named(values: object, message: str) -> None:
    with pytest.raises(ValueError, match=f"`values`.*{message}"):
        seeded(1, 1, 0, 10).release_many(values)


def test_refused_release_consumes_no_randomness() -> None:
    a, b = seeded(1, 1, 0, 10), seeded(1, 1, 0, 10)
    with pytest.raises(ValueError):
        a.release(math.nan)
    with pytest.raises(ValueError):
        a.release_many([1.0, math.nan])
    assert a.release(3) == b.release(3)


# -- releases ----------------------------------------------------------------------------------
def test_infinite_and_out_of_bounds_values_clamp() -> None:
    m = seeded(1, 1, 0, 10)
    ref = seeded(1, 1, 0, 10)
    assert m.release(math.inf) == ref.release(10)
    assert m.release(-math.inf) == ref.release(0)
    assert m.release(1e300) == ref.release(10.0)
    assert m.release(-7) == ref.release(0)


def test_release_many_equals_repeated_release_bit_for_bit() -> None:
    values = np.array([0.0, 3.3, -1.0, 10.0, 1e9, -math.inf, 5.0, 4.999999999999999])
    a = seeded(0.7, 2.0, -3.0, 9.0).release_many(values)
    m = seeded(0.7, 2.0, -3.0, 9.0)
    b = np.array([m.release(float(v)) for v in values])
    assert a.dtype == np.float64
    assert a.tobytes() == b.tobytes()


def test_release_many_keeps_shape_and_uses_ints_exactly() -> None:
    m = seeded(1, 1, -(2**62), 2**62)
    out = m.release_many(np.array([[2**60 + 1, 0], [5, -(2**61)]], dtype=np.int64))
    assert out.shape == (2, 2)
    ref = seeded(1, 1, -(2**62), 2**62)
    assert out[0, 0] == ref.release(2**60 + 1)


def test_same_seed_same_outputs_and_os_source_differs() -> None:
    xs = np.linspace(0, 100, 50)
    assert np.array_equal(
        seeded(1, 1, 0, 100).release_many(xs), seeded(1, 1, 0, 100).release_many(xs)
    )
    fresh = SnappingMechanism(0.01, 1, 0, 1e6)
    outs = {fresh.release(5e5) for _ in range(20)}
    assert len(outs) > 1


def test_outputs_are_grid_points_or_bounds() -> None:
    lo, hi, sens = Fraction(-3), Fraction(11, 2), Fraction(3, 4)
    m = seeded(0.9, float(sens), float(lo), float(hi))
    center, step = (lo + hi) / 2, Fraction(m.Lambda) * Fraction(m.mechanism_sensitivity)
    plain = SnappingMechanism(0.9, float(sens), float(lo), float(hi), rescale=False)
    assert step == Fraction(m.grid_spacing) < Fraction(plain.grid_spacing)  # rescaled: finer
    for out in m.release_many(np.linspace(-5, 8, 400)):
        assert lo <= Fraction(out) <= hi
        if Fraction(out) in (lo, hi):
            continue
        k = round((Fraction(out) - center) / step)
        assert float(center + k * step) == out  # the grid point, rounded once


# -- accuracy ----------------------------------------------------------------------------------
def test_accuracy_formula_and_round_trip() -> None:
    m = SnappingMechanism(1.0, 1.0, 0.0, 100.0, rescale=False)
    for alpha in (0.5, 0.1, 0.05, 0.01, 1e-6):
        a = m.accuracy(alpha)
        design = m.Lambda / 2 + m.scale * math.log(1 / alpha)  # DESIGN §4, never below ours
        floor = m.Lambda / 2 + m.scale * math.log(1 / (2 * alpha))  # the worst case is >= half
        assert floor <= a <= design * (1 + 1e-12)
        assert m.failure_probability(a) <= alpha
        assert m.failure_probability(a * (1 - 1e-9)) > alpha * (1 - 1e-6)
    assert m.accuracy(0.1) == 3.0  # s = 2 is a jump point: exactly Λ/2 + 2 (docs/mechanism.md)
    assert m.accuracy(1e-300) == 100.0  # capped at upper − lower
    assert m.failure_probability(100.0) == 0.0
    assert m.failure_probability(math.inf) == 0.0
    assert m.failure_probability(0.5) == 1.0  # below Λ/2: no guarantee


def test_accuracy_scales_with_sensitivity() -> None:
    a1 = SnappingMechanism(0.5, 1.0, -1e4, 1e4).accuracy(0.05)
    a3 = SnappingMechanism(0.5, 3.0, -1e4, 1e4).accuracy(0.05)
    assert math.isclose(a3, 3 * a1, rel_tol=1e-12)


def test_not_the_seeds_getaccuracy2() -> None:
    """Seed 002's a = (1/2 − ln(1−α))/ε′ is tiny at α = 0.05; ours is the real 95% bound."""
    m = SnappingMechanism(1.0, 1.0, -100.0, 100.0)
    seed_value = (0.5 - math.log(1 - 0.05)) / m.epsilon_prime
    assert m.accuracy(0.05) > 5 * seed_value


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1, math.nan, "0.05"])
def test_accuracy_rejects_bad_alpha(alpha: object) -> None:
    with pytest.raises(ValueError, match="`alpha`"):
        SnappingMechanism(1, 1, 0, 1).accuracy(alpha)  # type: ignore[arg-type]


@pytest.mark.parametrize("a", [-1.0, math.nan, "1"])
def test_failure_probability_rejects_bad_accuracy(a: object) -> None:
    with pytest.raises(ValueError, match="`accuracy`"):
        SnappingMechanism(1, 1, 0, 1).failure_probability(a)


def test_epsilon_for_accuracy_is_smallest_meeting_target() -> None:
    eps = epsilon_for_accuracy(5.0, 0.05, 1.0, 0.0, 1000.0)
    assert SnappingMechanism(eps, 1.0, 0.0, 1000.0).accuracy(0.05) <= 5.0
    below = math.nextafter(eps, 0.0)
    assert SnappingMechanism(below, 1.0, 0.0, 1000.0).accuracy(0.05) > 5.0


def test_epsilon_for_accuracy_errors() -> None:
    with pytest.raises(ValueError, match="every ε meets it"):
        epsilon_for_accuracy(200.0, 0.05, 1.0, 0.0, 100.0)
    with pytest.raises(ValueError, match="cannot be reached"):
        epsilon_for_accuracy(1e-20, 0.05, 1.0, 0.0, 100.0)
    with pytest.raises(ValueError, match="`alpha`"):
        epsilon_for_accuracy(1.0, 2.0, 1.0, 0.0, 100.0)
    with pytest.raises(ValueError, match="`lower` must be < `upper`"):
        epsilon_for_accuracy(1.0, 0.05, 1.0, 5.0, 1.0)


def test_str_states_guarantee_grid_and_accuracy() -> None:
    text = str(SnappingMechanism(1.0, 1.0, 0.0, 100.0))
    assert "(ε = 1, δ <= " in text
    assert "Λ·Δ = 1.0625" in text and "95% accuracy" in text


# -- the textbook baseline ---------------------------------------------------------------------
def test_laplace_is_textbook_and_marked_unsafe() -> None:
    lap = LaplaceMechanism(0.5, 2.0, rng=np.random.default_rng(3))
    assert "UNSAFE" in (LaplaceMechanism.__doc__ or "") and "UNSAFE" in repr(lap)
    words = np.random.default_rng(3).bit_generator.random_raw(3)
    expected = []
    for w in map(int, words):
        s = -1.0 if w >> 63 else 1.0
        u = ((w & (2**53 - 1)) + 1) * 2.0**-53
        expected.append(1.0 + 4.0 * (s * float(np.log(u))))
    assert [lap.release(1.0) for _ in range(3)] == expected


def test_laplace_bad_input() -> None:
    with pytest.raises(ValueError, match="`epsilon`"):
        LaplaceMechanism(0, 1)
    with pytest.raises(ValueError, match="`value`"):
        LaplaceMechanism(1, 1).release(math.nan)


# -- exact ε and exact inputs (docs/mechanism.md, "Exact ε", "Exact inputs") -------------------
@pytest.mark.parametrize("eps", ["0.1", Fraction(1, 10), "1e-1", " 0.10 "])
def test_epsilon_text_is_the_exact_decimal(eps: object) -> None:
    from decimal import Decimal

    exact = SnappingMechanism(eps, 1, 0, 10, rescale=False).parameters
    assert exact.epsilon == Fraction(1, 10)
    assert SnappingMechanism(Decimal("0.1"), 1, 0, 10, rescale=False).parameters == exact
    # a float is its binary value, which is not 1/10, and gives a different ε′
    as_float = SnappingMechanism(0.1, 1, 0, 10, rescale=False).parameters
    assert as_float.epsilon == Fraction(0.1) != exact.epsilon
    assert as_float.epsilon_prime != exact.epsilon_prime
    assert "(ε = 0.1, δ <= " in str(SnappingMechanism(eps, 1, 0, 10).privacy)


def test_a_huge_decimal_exponent_is_refused_quickly() -> None:
    with pytest.raises(ParameterError, match="at most 100 digits with an exponent of at most 1000"):
        SnappingMechanism("1e999999999", 1, 0, 1)


def _seeded(seed: int = 7) -> SnappingMechanism:
    return SnappingMechanism(1, 1, 0, 2**60, rng=np.random.default_rng(seed))


def test_release_many_keeps_big_python_ints_and_fractions_exact() -> None:
    values = [2**53 + 1, 0.5, Fraction(1, 3), 2**80 + 3]
    many = _seeded().release_many(values)
    one = _seeded()
    assert many.tolist() == [one.release(v) for v in values]  # same bits, same order
    # and release() is exact for them (ints through fast.release_one, Fractions on the exact
    # path): the value that reaches the mechanism is 2**53 + 1, not the double 2**53
    from snapdp.snapping import normalize

    params = _seeded().parameters
    assert normalize(params, 2**53 + 1) != normalize(params, float(2**53 + 1))
    assert many.dtype == np.float64 and many.shape == (4,)


def test_a_list_numpy_would_round_becomes_exact_not_float64() -> None:
    from snapdp.mechanism import as_value_array

    arr = as_value_array("values", [2**53 + 1, 0.5])
    assert arr.dtype == object and arr[0] == 2**53 + 1 and type(arr[0]) is int
    assert as_value_array("values", [1, 2]).dtype.kind == "i"  # ints stay an int array
    assert as_value_array("values", [0.5, 2]).dtype == np.float64  # nothing to round
    with pytest.raises(ParameterError, match=r"`values\[1\]` must not be NaN"):
        as_value_array("values", [Fraction(1, 3), math.nan])


def test_longdouble_is_taken_at_its_exact_value() -> None:
    x = np.longdouble(1) / np.longdouble(3)
    if np.finfo(np.longdouble).nmant <= 52:
        pytest.skip("numpy longdouble is a double on this platform")
    from snapdp._validation import check_value

    exact = check_value("value", x)
    assert isinstance(exact, Fraction) and exact != Fraction(float(x))
    assert Fraction(*x.as_integer_ratio()) == exact
    assert check_value("value", np.longdouble(0.5)) == 0.5
    a = _seeded(3).release(x)
    b = _seeded(3).release(exact)
    assert a == b
    with pytest.raises(ParameterError, match="float64 or narrower"):
        _seeded().release_many(np.array([x, x]))
