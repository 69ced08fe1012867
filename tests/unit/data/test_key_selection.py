"""The threshold that shows undeclared GROUP BY keys (docs/data.md, "Keys nobody declared").

An independent oracle computes P(output >= T) for the mechanism as implemented: per sign, a plain
bisection over the bit patterns of U* with the predicate ``snapped_output(...) >= T`` (monotone in
U* for a fixed sign), and the ulp-weighted mass of the patterns on the shown side, in exact mpq.
It shares only the mechanism's definition (:func:`snapdp.snapping.snapped_output`) and the mass
model of U* with the code under test, not its sweep over classes.
"""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import numpy as np
import pytest
from gmpy2 import mpq
from scipy.stats import binom

from snapdp import SnappingMechanism
from snapdp._exact import exact_rational
from snapdp.data.statistics.selection import KeySelection, key_selection, shown_probability
from snapdp.data.statistics.types import Noise, Part
from snapdp.distribution import exact_distribution_for
from snapdp.errors import ParameterError
from snapdp.parameters import SnappingParameters
from snapdp.snapping import normalize, snapped_output

_FIRST, _LAST = 1, 0x3FEFFFFFFFFFFFFF  # bit patterns of 2**-1074 and of the largest double < 1
_NORMALISER = 1 - mpq(1, 2) ** 1074
ALPHA = 1e-6  # the statistical tests' false-alarm rate


def _value(pattern: int) -> float:
    return float(struct.unpack("<d", struct.pack("<Q", pattern))[0])


def _noise(epsilon: Fraction, upper: int, *, sensitivity: int = 1, cells: int = 1) -> Noise:
    part = Part("count", "rows", Fraction(1), sensitivity, sensitivity * cells, 0, upper)
    return Noise(part, epsilon, sensitivity, cells, False)


def _first_true(pred: object, lo: int, hi: int) -> int:
    """The first pattern in [lo, hi] where the monotone predicate holds (hi + 1 if none)."""
    assert callable(pred)
    if not pred(hi):
        return hi + 1
    while lo < hi:
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def oracle_tail(params: SnappingParameters, rows: int, threshold: float) -> mpq:
    """P(output >= threshold | true count = rows), exactly, by bisection on U*'s bit patterns."""
    x = normalize(params, rows)

    def shown(sign: int, pattern: int) -> bool:
        return snapped_output(params, x, sign, _value(pattern)) >= threshold

    # S = +1: shown is non-decreasing in U*; the patterns b..LAST carry 1 − value(b).
    b = _first_true(lambda q: shown(1, q), _FIRST, _LAST)  # LAST + 1 is the pattern of 1.0
    plus = 1 - exact_rational(_value(b))
    # S = −1: shown is non-increasing in U*; the patterns FIRST..b′−1 carry value(b′) − 2**-1074.
    b2 = _first_true(lambda q: not shown(-1, q), _FIRST, _LAST)
    minus = exact_rational(_value(b2)) - exact_rational(_value(_FIRST))
    return (plus + minus) / 2 / _NORMALISER


def _composed(p: mpq, groups: int) -> mpq:
    return 1 - (1 - p) ** groups


# -- exact oracle and brute force -------------------------------------------------------------

SMALL = [  # (ε, count upper bound, δ, L0, L∞)
    (Fraction(1), 100, Fraction(1, 1000), 1, 1),
    (Fraction(1), 100, Fraction(1, 1000), 3, 2),
    (Fraction(1, 2), 200, Fraction(1, 10**6), 2, 1),
    (Fraction(2), 60, Fraction(1, 20), 1, 3),
    (Fraction(4), 100, Fraction(1, 1000), 1, 1),  # a grid of 0.27 rows: finer than integers
    (Fraction(4), 100, Fraction(1, 20), 1, 1),
    (Fraction(8), 100, Fraction(1, 1000), 1, 1),
]


@pytest.mark.parametrize(("epsilon", "upper", "delta", "groups", "linf"), SMALL)
def test_threshold_matches_exact_oracle(
    epsilon: Fraction, upper: int, delta: Fraction, groups: int, linf: int
) -> None:
    """T = m − 1/2 meets the δ on the oracle's exact tail; every smaller integer m′ fails."""
    noise = _noise(epsilon, upper)
    sel = key_selection(noise, delta=delta, max_groups=groups, rows_per_key=linf)
    params = noise.parameters()
    d = mpq(delta.numerator, delta.denominator)
    assert (sel.threshold + 0.5).is_integer()
    # the release shows the count rounded half up: "count >= ⌈T⌉" is "grid value >= ⌈T⌉ − 1/2"
    # (before the fix T was a grid value; at ε = 8 this event had 13 times the δ)
    rounded = oracle_tail(params, linf, math.ceil(sel.threshold) - 0.5)
    assert _composed(rounded, groups) <= d
    p = oracle_tail(params, linf, sel.threshold)
    assert _composed(p, groups) <= d
    assert Fraction(int(p.numerator), int(p.denominator)) <= sel.key_probability
    tau = _composed(p, groups)
    assert Fraction(int(tau.numerator), int(tau.denominator)) <= sel.delta <= delta
    # brute force: every lower integer threshold, down to the one-unit key's own count, fails
    below = sel.threshold - 1
    violated = 0
    while below >= linf - 0.5:
        assert _composed(oracle_tail(params, linf, below), groups) > d, below
        violated += 1
        below -= 1
    assert violated >= 1


def test_union_and_product_composition() -> None:
    """More keys per unit need a higher threshold; L0 = 1 is the per-key δ itself."""
    noise = _noise(Fraction(1), 100)
    ts = [
        key_selection(noise, delta=Fraction(1, 1000), max_groups=g, rows_per_key=1).threshold
        for g in (1, 2, 8, 64)
    ]
    assert ts == sorted(ts) and ts[0] < ts[-1]


def test_one_unit_key_probability_monotone_in_its_rows() -> None:
    """The coupling claim: P(shown) grows with the true count (so c = L∞ is the worst)."""
    sel = key_selection(
        _noise(Fraction(1), 100), delta=Fraction(1, 1000), max_groups=1, rows_per_key=3
    )
    params = sel.parameters
    assert params is not None
    tails = [oracle_tail(params, c, sel.threshold) for c in range(0, 4)]
    assert tails == sorted(tails) and tails[0] < tails[-1]


def test_recall_monotone_in_rows() -> None:
    sel = key_selection(
        _noise(Fraction(1), 1000), delta=Fraction(1, 10**6), max_groups=1, rows_per_key=1
    )
    recalls = [sel.recall(r) for r in range(0, 41)]
    assert recalls == sorted(recalls)
    assert recalls[0] < 1e-6 and recalls[-1] > 0.999
    assert sel.recall(1) <= float(sel.delta)
    # the library's bisection agrees with the exact distribution's sweep
    params = sel.parameters
    assert params is not None
    dist = exact_distribution_for(params, normalize(params, 12))
    swept = sum((m for lab, m in dist.masses.items() if dist.outputs[lab] >= sel.threshold), mpq(0))
    assert shown_probability(params, 12, sel.threshold) == swept


# -- statistical: a one-unit key through the mechanism that runs --------------------------------


@pytest.mark.parametrize(("groups", "linf"), [(1, 1), (3, 2)])
def test_one_unit_keys_shown_at_most_delta(groups: int, linf: int) -> None:
    """At δ = 0.05, a unit holding `groups` new keys of `linf` rows each shows any of them in at
    most a δ share of runs (one-sided binomial test at α = 1e-6), drawn with release_many."""
    delta, runs = Fraction(1, 20), 100_000
    noise = _noise(Fraction(1), 1000)
    sel = key_selection(noise, delta=delta, max_groups=groups, rows_per_key=linf)
    mech = SnappingMechanism(
        noise.epsilon, noise.sensitivity, noise.part.lower, noise.part.upper,
        rng=np.random.default_rng(20261127),
    )  # fmt: skip
    assert mech.parameters == noise.parameters()
    released = mech.release_many(np.full(runs * groups, linf, dtype=np.int64))
    on_grid = released >= sel.threshold
    rounded = np.floor(released + 0.5)  # the integer count a release shows (exact here)
    assert np.array_equal(on_grid, np.array([sel.shown(float(r)) for r in rounded]))
    shown = on_grid.reshape(runs, groups).any(axis=1)
    limit = int(binom.isf(ALPHA, runs, float(delta)))
    assert int(shown.sum()) <= limit
    # the exact τ is what the draws estimate: not far below either (two-sided, same α)
    tau = float(_composed(oracle_tail(noise.parameters(), linf, sel.threshold), groups))
    assert int(shown.sum()) >= int(binom.ppf(ALPHA, runs, tau))


# -- refusals and the public line ---------------------------------------------------------------


def test_too_small_delta_refused_on_one_line() -> None:
    with pytest.raises(ParameterError) as info:
        key_selection(
            _noise(Fraction(1), 10), delta=Fraction(1, 10**9), max_groups=1, rows_per_key=1
        )
    msg = str(info.value)
    assert info.value.parameter == "delta"
    assert "\n" not in msg and "Fraction" not in msg and "docs/data.md" in msg


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"delta": Fraction(0), "max_groups": 1, "rows_per_key": 1}, "delta"),
        ({"delta": Fraction(1), "max_groups": 1, "rows_per_key": 1}, "delta"),
        ({"delta": 1e-6, "max_groups": 1, "rows_per_key": 1}, "delta"),
        ({"delta": Fraction(1, 100), "max_groups": 0, "rows_per_key": 1}, "max_groups"),
        ({"delta": Fraction(1, 100), "max_groups": 1, "rows_per_key": 0}, "rows_per_key"),
    ],
)
def test_bad_arguments_refused(kwargs: dict[str, object], parameter: str) -> None:
    with pytest.raises(ParameterError) as info:
        key_selection(_noise(Fraction(1), 100), **kwargs)  # type: ignore[arg-type]
    assert info.value.parameter == parameter
    assert "Fraction" not in str(info.value)


def test_describe_is_one_public_line() -> None:
    sel = key_selection(
        _noise(Fraction(1), 1000), delta=Fraction(1, 10**6), max_groups=2, rows_per_key=1
    )
    line = sel.describe()
    assert "\n" not in line and "Fraction" not in line
    assert (
        f"at least {int(sel.threshold + 0.5):,} (its grid value at least {sel.threshold:,})" in line
    )
    assert sel.shown(sel.threshold) and not sel.shown(np.nextafter(sel.threshold, 0.0))
    assert isinstance(sel, KeySelection) and sel.delta <= Fraction(1, 10**6)


def test_many_groups_use_the_union_bound() -> None:
    """Past 4096 keys per unit, τ is bounded by L0·p (no huge rational power)."""
    noise = _noise(Fraction(1), 1000)
    sel = key_selection(noise, delta=Fraction(1, 100), max_groups=5000, rows_per_key=1)
    params = noise.parameters()
    p = oracle_tail(params, 1, sel.threshold)
    assert 5000 * p <= mpq(1, 100)
    assert 5000 * oracle_tail(params, 1, sel.threshold - 1) > mpq(1, 100)
