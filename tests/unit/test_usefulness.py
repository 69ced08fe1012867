"""snapdp.usefulness: the flags raised exactly at their thresholds, and the plain summary."""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import pytest
from msgspec.structs import replace

from snapdp import ParameterError, SnappingMechanism
from snapdp.accuracy import accuracy_bound
from snapdp.parameters import compute_parameters
from snapdp.usefulness import (
    DELTA_THRESHOLD,
    NOISE_THRESHOLD,
    SAVING_THRESHOLD,
    Measures,
    flags,
    flags_for,
    measures,
    plain_summary,
    summary,
)
from snapdp.usefulness import _up as round_up_text

QUIET = Measures(
    alpha=0.05,
    epsilon=1.0,
    lower=0.0,
    upper=100.0,
    accuracy=3.0,
    range=100.0,
    noise_ratio=0.06,
    grid=1.0,
    laplace_accuracy=3.0,
    grid_cost=0.0,
    delta=0.0,
    output_ulp=1.4e-14,
)


def _codes(m: Measures) -> list[str]:
    return [f.code for f in flags_for(m)]


@pytest.mark.parametrize(
    ("field", "threshold", "code"),
    [
        ("noise_ratio", NOISE_THRESHOLD, "almost_pure_noise"),
        ("epsilon_saving", SAVING_THRESHOLD, "larger_epsilon_helps"),
        ("bounds_saving", SAVING_THRESHOLD, "narrower_bounds_help"),
        ("delta", DELTA_THRESHOLD, "tail_delta"),
    ],
)
def test_each_flag_is_raised_exactly_at_its_threshold(field, threshold, code):
    below = math.nextafter(threshold, 0.0)
    assert _codes(replace(QUIET, **{field: below})) == []
    for value in (threshold, math.nextafter(threshold, math.inf), 2 * threshold):
        raised = flags_for(replace(QUIET, **{field: value}))
        assert [f.code for f in raised] == [code]
        assert raised[0].threshold == threshold and raised[0].value == value
        assert raised[0].message.endswith(".") and "\n" not in raised[0].message


def test_measures_from_the_public_parameters():
    plain = SnappingMechanism(1, 1, 0, 100, rescale=False)  # DESIGN's mechanism on (ε, Δ)
    assert measures(plain) == measures(plain.parameters)
    mech = SnappingMechanism(1, 1, 0, 100)  # rescaled: grid 17/16 instead of 2
    m = measures(mech)
    a = accuracy_bound(mech.parameters, 0.05)
    assert m.accuracy == a
    assert m.epsilon == 1.0  # the requested ε, not the rescaled run's ε_r
    assert m.noise_ratio == float(Fraction(2 * a) / 100)
    assert m.grid == 1.0625 and measures(plain).grid == 2.0
    assert m.laplace_accuracy == math.log(20)
    assert m.grid_cost == pytest.approx(a / math.log(20) - 1, rel=1e-15)
    assert m.grid_cost < 0.07 < 0.30 < measures(plain).grid_cost  # the penalty is gone
    assert m.delta == 0.0
    larger = SnappingMechanism(Fraction(17, 16), 1, 0, 100)
    assert m.larger_epsilon == 1.0625
    assert m.larger_epsilon_accuracy == larger.accuracy(0.05)
    assert m.epsilon_saving == pytest.approx(1 - larger.accuracy(0.05) / a, abs=1e-15)
    assert 0 < m.epsilon_saving < SAVING_THRESHOLD  # 1/16 more ε saves only a few per cent
    assert m.unrounded_accuracy == a and m.bounds_saving == 0.0  # grid points are doubles


@pytest.mark.parametrize(
    ("epsilon", "lower", "upper", "codes"),
    [
        (1, 0, 100, []),  # rescaled: the ± is 6% wider than Laplace's (30% unrescaled)
        (1.001, 0, 100, []),  # Λ = λ′ rounded up to 1: 13% wider
        (0.001, 0, 100, ["almost_pure_noise"]),
        (1, 0, 1, ["almost_pure_noise"]),
        (700, 0, 100, ["tail_delta"]),
        (1, 0, 1e300, ["narrower_bounds_help"]),  # the doubles near 1e300 are 1.5e284 apart
    ],
)
def test_flags_on_real_parameters(epsilon, lower, upper, codes):
    assert [f.code for f in flags(SnappingMechanism(epsilon, 1, lower, upper))] == codes


def test_no_warning_on_the_readme_settings_even_unrescaled():
    """Issue 26: ε = 1 on [0, 100] warned on every statistic; nothing the user can change
    (1/16 more ε, narrower bounds) shrinks its ± by 25%, rescaled or not."""
    assert flags(SnappingMechanism(1, 1, 0, 100, rescale=False)) == []
    assert flags(SnappingMechanism("0.5", 1, 0, 100)) == []


def test_narrower_bounds_message_says_by_how_much():
    mech = SnappingMechanism(1, 1, 0, 1e300)
    m = measures(mech)
    assert m.unrounded_accuracy == accuracy_bound(mech.parameters, 0.05, rounding=False) < 4
    assert m.bounds_saving > 0.99
    (flag,) = flags(mech)
    # not rescaled (bounds beyond 2**128·Δ): the power-of-two grid, ±3.91 at these bounds
    assert flag.message.startswith("Narrower bounds would make the ± 99% smaller (±3.91 instead")
    assert "1.49e+284 apart" in flag.message


def _bits(x: float) -> int:
    return int(struct.unpack("<q", struct.pack("<d", x))[0])


def _from_bits(b: int) -> float:
    return float(struct.unpack("<d", struct.pack("<q", b))[0])


@pytest.mark.parametrize(
    ("code", "field", "threshold", "lo_eps", "hi_eps"),
    [
        ("almost_pure_noise", "noise_ratio", NOISE_THRESHOLD, 0.01, 1.0),
        ("tail_delta", "delta", DELTA_THRESHOLD, 100.0, 1000.0),
    ],
)
def test_flags_flip_where_the_measure_crosses_the_threshold(code, field, threshold, lo_eps, hi_eps):
    """Bisect over the doubles ε to two neighbours where the flag changes; the measure must
    straddle the threshold there (not raised just below, raised at/above)."""

    def raised(eps: float) -> bool:
        return code in [f.code for f in flags(compute_parameters(eps, 1, 0, 100))]

    lo, hi = _bits(lo_eps), _bits(hi_eps)
    # noise: raised at small ε; δ: raised at large ε
    small_raised = raised(_from_bits(lo))
    assert small_raised != raised(_from_bits(hi))
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if raised(_from_bits(mid)) == small_raised:
            lo = mid
        else:
            hi = mid
    at_lo = getattr(measures(compute_parameters(_from_bits(lo), 1, 0, 100)), field)
    at_hi = getattr(measures(compute_parameters(_from_bits(hi), 1, 0, 100)), field)
    inside, outside = (at_lo, at_hi) if small_raised else (at_hi, at_lo)
    assert inside >= threshold > outside


def test_flags_reject_other_objects():
    with pytest.raises(ParameterError, match="mechanism_or_parameters"):
        flags("not a mechanism")
    with pytest.raises(ParameterError, match="alpha"):
        flags(SnappingMechanism(1, 1, 0, 100), alpha=1.5)


def test_plain_summary_of_the_issue_example():
    mech = SnappingMechanism(1, 1, 0, 100)
    text = plain_summary(
        1, 0, 100, mech.accuracy(0.05), 3.0, -100 * math.log(0.05) / 100, mech.grid_spacing
    )
    assert text == (
        "With ε = 1 and values in [0, 100], 95% of releases are within ±3.19 of the truth; "
        "discrete Laplace would be within ±3 and the textbook mechanism within ±3 but it leaks; "
        "the difference is the cost of the grid of width 1.0625."
    )


def test_plain_summary_variants():
    assert plain_summary("0.1", 0, 10, 4.5) == (
        "With ε = 0.1 and values in [0, 10], 95% of releases are within ±4.5 of the truth."
    )
    noisy = plain_summary(0.001, 0, 100, 100.0, 100.0, 100.0, 1024.0)
    assert "snapping is as accurate here" in noisy
    assert noisy.endswith("a larger ε or narrower bounds would make it informative.")
    with pytest.raises(ParameterError, match="accuracy95"):
        plain_summary(1, 0, 100, "3.9")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("x", "text"),
    [
        (3.9075, "3.91"),
        (2.9957, "3"),
        (3.0, "3"),
        (100.0, "100"),
        (0.0012341, "0.00124"),
        (3230000000.0, "3230000000"),
        (1.0001, "1.01"),
        (999.1, "1000"),
        (9.996, "10"),
        (1.4870169084777834e284, "1.49e+284"),
        (4.469180314186558e-307, "4.47e-307"),
    ],
)
def test_stated_numbers_are_rounded_up(x, text):
    assert round_up_text(x) == text
    assert float(text) >= x


def test_summary_from_a_mechanism():
    assert summary(SnappingMechanism(1, 1, 0, 100)) == (
        "With ε = 1 and values in [0, 100], 95% of releases are within ±3.19 of the truth; "
        "the textbook mechanism would be within ±3 but it leaks; the difference is the cost of "
        "the grid of width 1.0625."
    )
    assert summary(SnappingMechanism(0.1, 1, 0, 10).parameters).endswith(
        "the release is almost pure noise; a larger ε or narrower bounds would make it informative."
    )
