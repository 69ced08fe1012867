"""Exact fixed point, mechanism inputs and the variance split (src/snapdp/data/statistics/,
sensitivity.py; docs/data.md, "Statistics")."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from snapdp.data import Column, Query, Schema
from snapdp.data.statistics import Part, compile_query, noisy_values
from snapdp.data.statistics.sensitivity import INT64_LIMIT, fixed_point
from snapdp.errors import ParameterError
from snapdp.mechanism import SnappingMechanism


def test_decimals_keep_every_mechanism_bound_in_int64() -> None:
    n = 1 << 40
    assert fixed_point(Column("x", "integer", 0, 100), n).decimals == 0
    fp = fixed_point(Column("x", "decimal", 0, 1), n)
    assert fp.decimals == 6 and n * fp.magnitude < INT64_LIMIT <= n * fp.magnitude * 10
    sq = fixed_point(Column("x", "decimal", 0, 1), n, squares=True)
    assert sq.decimals == 3 and n * sq.width**2 < INT64_LIMIT <= n * (sq.width * 10) ** 2
    huge = fixed_point(Column("x", "decimal", 0, 10**12), n, squares=True)
    assert huge.decimals == 0  # nothing fits: the exact per-value path, at d = 0
    assert fixed_point(Column("x", "decimal", Fraction(-3, 2), 4), 1000).lower_q == -1_500_000_000
    with pytest.raises(ParameterError, match="no two distinct"):
        fixed_point(Column("x", "integer", Fraction(1, 3), Fraction(2, 3)), n)


def test_the_int64_path_is_the_per_value_path_bit_for_bit() -> None:
    part = Part("sum", "sum", Fraction(1), 100, 100, 0, 10**6)
    exact = [0, 5, 10**6 + 7, 123_456, -3, 999_999]  # two outside the bounds: clamped first

    def mech() -> SnappingMechanism:
        return SnappingMechanism(Fraction(1, 2), 100, 0, 10**6, rng=np.random.default_rng(3))

    fast = noisy_values(mech(), part, exact)
    m = mech()
    slow = [m.release(min(max(x, 0), 10**6)) for x in exact]
    assert fast.tolist() == slow


def test_bounds_beyond_int64_take_the_exact_path() -> None:
    big = 1 << 80
    part = Part("squares", "squares", Fraction(1), 10**6, 10**6, 0, big)
    m = SnappingMechanism(1, 10**6, 0, big, rng=np.random.default_rng(0))
    out = noisy_values(m, part, [big + 5, 2**70, 0])
    assert out[0] <= big and out.dtype == np.float64 and len(out) == 3


def test_variance_parts_and_their_sensitivities() -> None:
    schema = Schema((Column("v", "integer", -2, 6),))
    c = compile_query(Query("variance", "v"), schema, Fraction(1))
    parts = {p.name: p for p in c.parts}
    assert (parts["squares"].per_cell, parts["csum"].per_cell, parts["count"].per_cell) == (
        64,
        8,
        1,
    )
    assert sum(p.weight for p in c.parts) == 1
    w = [float(p.weight) for p in c.parts]
    assert w[1] / w[0] == pytest.approx(2**0.5, rel=1e-3)
    assert w[2] / w[0] == pytest.approx(3**0.5, rel=1e-3)


def test_substitute_mean_sensitivity_covers_dropped_nulls() -> None:
    """Substituting one row moves Σq by at most what one row can add: with nulls dropped, a row
    adds 0 or a value in [L, U], so Δ = max(U, 0) − min(L, 0) over n, not (U − L)/n; with an
    imputed value, (U − L)/n. Brute force over one substituted row of a 3-row table."""
    from snapdp.data.model.schema import NullRule

    for nulls, span in ((NullRule(), 110), (NullRule("impute", 105), 10)):
        schema = Schema((Column("v", "integer", 100, 110, nulls=nulls),), rows=3)
        (part,) = compile_query(Query("mean", "v", method="substitute"), schema, Fraction(1)).parts
        assert part.per_cell == Fraction(span, 3)
        fill = 0 if nulls.action == "drop" else 105
        contributions = [fill, *range(100, 111)]  # a null, or any value in [L, U]
        worst = max(abs(a - b) for a in contributions for b in contributions)
        assert Fraction(worst, 3) <= part.per_cell  # the stated Δ covers every substitution


@pytest.mark.parametrize("eps", ["1", "0.5", "2"])
def test_a_count_states_the_pm_of_the_rescaled_mechanism_it_draws_from(eps: str) -> None:
    """Issue 26: the stated ± of a table release is that of the mechanism that draws the noise
    (rescaled: within 1.17× of Laplace's at power-of-two ε, where it was 1.30×), and the
    planner's presumed parameters equal the certified ones when the certificate holds."""
    import math

    from snapdp.accuracy import accuracy_bound
    from snapdp.data.statistics import accuracy_of, calibrate, mechanisms

    schema = Schema((Column("v", "integer", 0, 10),))
    compiled = compile_query(Query("count", grid_counts=True), schema, Fraction(eps))
    (noise,) = calibrate(compiled)
    (mech,) = mechanisms([noise], None)
    assert mech.rescaling.applied and mech.rescaling.certified
    assert mech.parameters == noise.parameters()
    (presumed,) = calibrate(compiled, presume_certified=True)
    assert presumed.presumed and presumed.parameters() == mech.parameters
    statement = accuracy_of(compiled, [noise], 0.95, 0.05)
    assert statement.accuracy == accuracy_bound(mech.parameters, 0.05) == mech.accuracy(0.05)
    ideal = float(noise.sensitivity / Fraction(eps)) * math.log(20)
    assert statement.accuracy <= 1.17 * ideal
    # released as an integer (the default), the ± is ⌊a + 1/2⌋ (docs/utility.md)
    whole = compile_query(Query("count"), schema, Fraction(eps))
    integral = accuracy_of(whole, calibrate(whole), 0.95, 0.05)
    assert integral.accuracy == math.floor(statement.accuracy + 0.5)
