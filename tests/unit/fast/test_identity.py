"""release_many and release equal the exact path bit for bit (DESIGN §7, docs/fast-path.md).

Each parameter set runs the vectorised path, the scalar fast path and the exact path (the oracle,
:func:`draw_uniform` + :func:`snapped_output`) on three generators with one seed, and compares the
outputs as bit patterns and the position the three streams are left at.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from snapdp import ParameterError, SnappingMechanism
from snapdp.fast import release_into
from snapdp.fast_plan import CHUNK, plan_for
from snapdp.randomness import SeededSource, draw_uniform
from snapdp.snapping import normalize, snapped_output

from ._cases import IDENTITY_SETS, identity_values
from ._reference import exact_releases, exact_releases_chunked, same_bits

N = 150_000  # per set for the three-way comparison; benchmarks/identity_large.py runs 10**6


@pytest.mark.parametrize(("eps", "sens", "lower", "upper", "kind"), IDENTITY_SETS)
def test_three_paths_agree(eps: float, sens: float, lower: float, upper: float, kind: str) -> None:
    """N > CHUNK: release_many runs two chunks on substreams, on 1 and on 2 threads."""
    values = identity_values(kind, np.random.default_rng(11), N)
    seed = 12345
    scalar = SnappingMechanism(eps, sens, lower, upper, rng=np.random.default_rng(seed))
    params = scalar.parameters
    assert scalar._plan is not None
    expected = exact_releases_chunked(params, values, SeededSource(np.random.default_rng(seed)))
    for threads in (1, 2):
        vector = SnappingMechanism(eps, sens, lower, upper, rng=np.random.default_rng(seed))
        assert same_bits(vector.release_many(values, threads=threads), expected)
        # the substreams leave the mechanism's own stream where it was
        assert (
            vector._source.words(4).tolist()
            == np.random.default_rng(seed).bit_generator.random_raw(4).tolist()
        )
    oracle_source = SeededSource(np.random.default_rng(seed))
    head = values[:20_000]  # the scalar path reads the mechanism's stream in order
    expected_scalar = exact_releases(params, head, oracle_source)
    got_scalar = np.array([scalar.release(x) for x in head.tolist()])
    assert same_bits(got_scalar, expected_scalar)
    assert scalar._source.words(4).tolist() == oracle_source.words(4).tolist()


def test_small_arrays_read_the_mechanisms_stream_like_release() -> None:
    """Up to CHUNK values: one chunk on the mechanism's own stream, as release() in turn."""
    values = identity_values("uniform_0_100_with_outside", np.random.default_rng(1), 5_000)
    mech = SnappingMechanism(1.0, 1, 0, 100, rng=np.random.default_rng(2))
    oracle = SeededSource(np.random.default_rng(2))
    expected = exact_releases(mech.parameters, values, oracle)
    assert same_bits(mech.release_many(values), expected)
    assert mech._source.words(4).tolist() == oracle.words(4).tolist()


@pytest.mark.parametrize("threads", [1, 2, 3, 8])
def test_seeded_output_is_the_same_for_any_number_of_threads(threads: int) -> None:
    values = np.random.default_rng(3).uniform(-10, 110, 3 * CHUNK + 17)
    ref = SnappingMechanism(1.0, 1, 0, 100, rng=np.random.default_rng(4)).release_many(
        values, threads=1
    )
    mech = SnappingMechanism(1.0, 1, 0, 100, rng=np.random.default_rng(4))
    assert same_bits(mech.release_many(values, threads=threads), ref)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_threads_must_be_a_positive_integer(bad: object) -> None:
    mech = SnappingMechanism(1.0, 1, 0, 100)
    with pytest.raises(ParameterError, match="`threads` must be None"):
        mech.release_many([1.0], threads=bad)  # type: ignore[arg-type]


def test_release_many_keeps_shape_and_small_chunks_agree() -> None:
    mech = SnappingMechanism(1.0, 1, 0, 100, rng=np.random.default_rng(3))
    values = np.random.default_rng(4).uniform(0, 100, (30, 70))
    expected = exact_releases(mech.parameters, values, SeededSource(np.random.default_rng(3)))
    got = mech.release_many(values)
    assert got.shape == (30, 70)
    assert same_bits(got.reshape(-1), expected)
    assert mech._plan is not None
    out = np.empty(values.size)
    src = SeededSource(np.random.default_rng(3))
    release_into(mech.parameters, mech._plan, values.reshape(-1), src, out, chunk=97)
    assert same_bits(out, expected)


def test_hard_samples_fall_back_often_in_the_hard_sets() -> None:
    """The identity tests exercise the fallback: count it where Λ is tiny against |x̃|."""
    for eps, lower, upper, expect_min in [(2.0**20, 0, 4e6, 0.0005), (2.0**24, 0, 4e6, 0.005)]:
        mech = SnappingMechanism(eps, 1, lower, upper)
        assert mech._plan is not None
        out = np.empty(20_000)
        values = np.full(20_000, 1e6)
        src = SeededSource(np.random.default_rng(8))
        fallbacks = release_into(mech.parameters, mech._plan, values, src, out)
        assert fallbacks >= expect_min * values.size
        assert fallbacks < values.size  # and the float path still decides most samples
        expected = exact_releases(mech.parameters, values, SeededSource(np.random.default_rng(8)))
        assert same_bits(out, expected)


def test_boundary_values_fall_back_and_agree() -> None:
    """x̃ exactly on (k + 1/2)·Λ with U* near 1 (|Y| tiny): every sample is hard."""
    mech = SnappingMechanism(1.0, 1, 0, 100, rescale=False)  # Λ = 2, c = 50
    assert mech._plan is not None
    n = 2_000
    values = 50.0 + 2.0 * np.arange(-10, 10).repeat(n // 20) + 1.0
    top = (1 << 63) | ((1 << 52) - 1)  # sign −1, m all ones: U* = 1 − 2**-53
    words = np.empty(2 * n, dtype=np.uint64)
    words[0::2] = np.where(np.arange(n) % 2 == 0, top, (1 << 52) - 1).astype(np.uint64)
    words[1::2] = np.uint64(1 << 63)  # e = 1
    from ._reference import ListSource

    out = np.empty(n)
    fallbacks = release_into(mech.parameters, mech._plan, values, ListSource(words.tolist()), out)
    assert fallbacks == n
    expected = exact_releases(mech.parameters, values, ListSource(words.tolist()))
    assert same_bits(out, expected)


def test_parameters_outside_the_plan_use_the_exact_path() -> None:
    """Fraction bounds whose center is not a double: no plan, the exact path, same results."""
    assert plan_for(SnappingMechanism(1.0, 1, Fraction(1, 3), 10).parameters) is None
    mech = SnappingMechanism(1.0, 1, Fraction(1, 3), 10, rng=np.random.default_rng(5))
    assert mech._plan is None
    values = np.random.default_rng(6).uniform(0, 10, 500)
    expected = exact_releases(mech.parameters, values, SeededSource(np.random.default_rng(5)))
    assert same_bits(mech.release_many(values), expected)
    single = SnappingMechanism(1.0, 1, Fraction(1, 3), 10, rng=np.random.default_rng(5))
    assert same_bits(np.array([single.release(float(x)) for x in values]), expected)


def test_fraction_values_in_release_take_the_exact_path() -> None:
    mech = SnappingMechanism(1e-3, 1, 0, 10, rng=np.random.default_rng(9))
    oracle = SeededSource(np.random.default_rng(9))
    for _ in range(50):
        draw = draw_uniform(oracle)
        x_tilde = normalize(mech.parameters, Fraction(1, 3))
        expected = snapped_output(mech.parameters, x_tilde, draw.sign, draw.u)
        assert same_bits(np.array([mech.release(Fraction(1, 3))]), np.array([expected]))
