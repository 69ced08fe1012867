"""The per-shift certificate and the L1 calibration (docs/data.md, "Calibrated to the whole table").

Oracles: the verifier's own exact loss (snapdp.verify.privacy_loss) for single pairs, and a
brute-force product of exact per-cell distributions for a whole histogram release.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import pytest

from snapdp import SnappingMechanism
from snapdp._exact import mpq
from snapdp.data.statistics.calibration import SLACK_BOUND, calibrate_l1, shift_certificate
from snapdp.errors import ParameterError
from snapdp.verify import exact_distribution, privacy_loss
from snapdp.verify.loss import _exp_bounds

GRID = [
    (eps, delta, lower, upper)
    for eps in ("0.1", "0.5", "1", "2")
    for delta in (1, 2, 5, 10)
    for lower, upper in ((0, 100), (-20, 20))
]


@pytest.mark.parametrize(("eps", "delta", "lower", "upper"), GRID)
def test_certificate_exhaustive_on_grid(eps: str, delta: int, lower: int, upper: int) -> None:
    cert = shift_certificate(eps, delta, lower, upper)
    assert cert.exhaustive  # every integer pair (x, x + d) in [lower, upper], d = 1..Δ
    assert cert.certified, cert.note
    assert [row.shift for row in cert.shifts] == list(range(1, delta + 1))
    span = upper - lower
    assert cert.pairs == sum(span + 1 - d for d in range(1, delta + 1))
    assert cert.delta == 0  # small bounds: pure ε
    assert 0 <= cert.slack <= SLACK_BOUND
    for row in cert.shifts:
        assert row.linear == Fraction(eps) * row.shift / delta
        assert row.loss <= float(row.linear) + float(SLACK_BOUND)
        # the loss is close to linear, not just below it: ε′·d/Δ is within 1e-14 of ε·d/Δ
        assert row.loss >= float(row.linear) - 1e-14


def test_issue_example_is_linear_at_50() -> None:
    """ε = 1, Δ = 5, x = 50: losses 0.2, 0.4, …, 1.0 minus a few 1e-16 (the issue's check)."""
    mech = SnappingMechanism(1, 5, 0, 100)
    cert = shift_certificate(1, 5, 0, 100)
    for d in range(1, 6):
        loss = privacy_loss(mech, 50, 50 + d)
        assert loss.delta == 0
        linear = Fraction(d, 5)
        assert 0 < float(linear) - float(loss.loss) < 1e-14
        # the certificate's maximum over positions is at least this position's loss
        assert cert.shifts[d - 1].loss >= float(loss.loss)


def test_certificate_agrees_with_verifier_pairwise() -> None:
    """The worst pair the certificate reports has the loss the verifier computes for it."""
    cert = shift_certificate("0.5", 2, -20, 20)
    mech = SnappingMechanism(Fraction(1, 2), 2, -20, 20, rescale=False)  # §2 on (ε, Δ) itself
    for row in cert.shifts:
        x = row.position
        loss = privacy_loss(mech, x, x + row.shift)
        assert abs(float(loss.loss) - row.loss) <= 1e-15


def test_large_bounds_are_sampled_and_certified() -> None:
    """Counts with a huge public row bound: not exhaustive, the analytic slack is used."""
    cert = shift_certificate(1, 3, 0, 1 << 40)
    assert not cert.exhaustive
    assert cert.certified, cert.note
    assert cert.slack_bound == max(cert.slack, SLACK_BOUND)
    assert cert.delta > 0  # the library's δ for a 2**40 range (astronomically small)
    assert cert.delta < Fraction(1, 10**300)


def test_large_sensitivity_shift_grid() -> None:
    cert = shift_certificate(1, 10**12, 0, 1 << 60)
    shifts = [row.shift for row in cert.shifts]
    assert shifts == [1, 2, 10**12 // 4, 10**12 // 2, 10**12]
    assert cert.certified, cert.note
    # the smallest shifts show a positive excess (the additive error), below the bound
    assert 0 < cert.slack <= SLACK_BOUND


def test_a_sensitivity_beyond_the_span_checks_the_span() -> None:
    """Δ above upper − lower: a shift past the span is, clamped, a shift of at most the span, so
    the span is checked at its claim ε·span/Δ. (Every dyadic point used to lie past the span,
    no pair was compared, and the certificate said "certified" with nothing checked.)"""
    cert = shift_certificate(1, 1000, Fraction(1, 4), Fraction(3, 4))
    assert [row.shift for row in cert.shifts] == [Fraction(1, 2)]
    assert cert.shifts[0].linear == Fraction(1, 2000)
    assert cert.certified and cert.pairs > 0, cert.note
    # noise for a tenth of Δ is caught at the span (the loss is ~10x its claim there)
    assert not shift_certificate(
        1, 1000, Fraction(1, 4), Fraction(3, 4), mechanism_sensitivity=100
    ).certified
    shifts = [row.shift for row in shift_certificate(1, 1000, 0, 100).shifts]
    assert shifts == [1, 2, 100]


def test_miscalibrated_mechanism_fails() -> None:
    """Noise for Δ/2 while claiming Δ: the loss at d = Δ is about 2ε, far above ε·d/Δ."""
    cert = shift_certificate(1, 4, 0, 100, mechanism_sensitivity=2)
    assert not cert.certified
    assert cert.note is not None and "exceeds" in cert.note
    assert cert.shifts[-1].loss > 1.9
    # the same for a large bound (sampled positions)
    assert not shift_certificate(1, 4, 0, 1 << 40, mechanism_sensitivity=2).certified


def test_slightly_miscalibrated_mechanism_fails() -> None:
    """Even 1% too little noise is caught: the excess is ~1e-2·ε, not ~1e-15."""
    cert = shift_certificate(1, 100, 0, 1000, mechanism_sensitivity=99)
    assert not cert.certified


def test_explicit_shifts() -> None:
    cert = shift_certificate(1, 5, 0, 100, shifts=[5, 1])
    assert [row.shift for row in cert.shifts] == [1, 5]
    assert not cert.exhaustive  # not every integer shift
    partial = shift_certificate(1, 5, 0, 100, shifts=[1, 2, 3])
    assert not partial.exhaustive  # 1..3 is not 1..Δ
    assert shift_certificate(1, 5, 0, 100, shifts=[5, 4, 3, 2, 1]).exhaustive
    with pytest.raises(ParameterError, match="`shifts` must lie in"):
        shift_certificate(1, 5, 0, 100, shifts=[6])


def test_calibrate_l1_certified() -> None:
    cal = calibrate_l1(1, 5, 0, 100, 3)
    assert cal.certified and cal.note is None
    assert cal.sensitivity == 5
    assert cal.epsilon == 1 - 3 * cal.slack
    assert 0 < cal.slack <= SLACK_BOUND
    assert cal.delta == 0
    assert calibrate_l1(1, 5, 0, 100, 3) is cal  # cached


def test_calibrate_l1_falls_back_when_uncertifiable() -> None:
    tiny = Fraction(1, 1 << 47)  # m·slack >= ε: nothing left to calibrate with
    cal = calibrate_l1(tiny, 5, 0, 100, 2**10)
    assert not cal.certified
    assert cal.epsilon == tiny / 2**10
    assert cal.note is not None and "docs/data.md" in cal.note


@pytest.mark.parametrize(
    ("args", "name"),
    [
        ((1, 5, 0, 100, 0), "groups_touched"),
        ((1, 5, 0, 100, True), "groups_touched"),
        ((0, 5, 0, 100, 1), "epsilon"),
        ((1, -5, 0, 100, 1), "l1_sensitivity"),
        ((1, 5, 100, 0, 1), "lower"),
    ],
)
def test_calibrate_l1_errors(args: tuple[object, ...], name: str) -> None:
    with pytest.raises(ParameterError, match=f"`{name}`"):
        calibrate_l1(*args)  # type: ignore[arg-type]


def _joint_loss_at_most(
    dists_first: list[dict[object, mpq]], dists_second: list[dict[object, mpq]], eps: Fraction
) -> tuple[bool, float]:
    """Whether every joint output's exact probability ratio is <= e^ε (both ways), and the max."""
    exp_lo, _ = _exp_bounds(mpq(eps.numerator, eps.denominator))
    ok = True
    worst = mpq(1)
    labels = [
        sorted(set(a) | set(b), key=str) for a, b in zip(dists_first, dists_second, strict=True)
    ]
    for combo in itertools.product(*labels):
        p = mpq(1)
        q = mpq(1)
        for i, label in enumerate(combo):
            p *= dists_first[i].get(label, mpq(0))
            q *= dists_second[i].get(label, mpq(0))
        if p == 0 and q == 0:
            continue
        if p == 0 or q == 0:
            return False, float("inf")
        ratio = max(p / q, q / p)
        worst = max(worst, ratio)
        if ratio > exp_lo:
            ok = False
    return ok, math.log(float(worst))


@pytest.mark.parametrize(
    ("first", "second", "m"),
    [
        ((4, 7, 2), (6, 8, 2), 2),  # one unit, 3 rows: 2 in cell 0, 1 in cell 1
        ((4, 7, 2), (5, 8, 3), 3),  # 1 row in each of three cells
        ((0, 0, 20), (3, 0, 20), 1),  # all 3 rows in one cell, at the clamp
    ],
)
def test_histogram_release_total_loss_brute_force(
    first: tuple[int, ...], second: tuple[int, ...], m: int
) -> None:
    """A 3-cell count histogram, k = Δ₁ = 3: the exact joint loss of the release is <= ε."""
    eps = Fraction(1)
    cal = calibrate_l1(eps, 3, 0, 20, m)
    assert cal.certified
    mech = SnappingMechanism(cal.epsilon, cal.sensitivity, 0, 20)
    a = [exact_distribution(mech, x).masses for x in first]
    b = [exact_distribution(mech, x).masses for x in second]
    ok, loss = _joint_loss_at_most(a, b, eps)  # type: ignore[arg-type]
    assert ok
    assert loss > 0.99  # the whole budget is used, not ε/m
