"""The rare draws (exponent word < 2**11, all-zero words, subnormal U*, the U* = 0 redraw) keep
the vectorised and scalar paths aligned with the exact path's reading of the stream."""

from __future__ import annotations

import numpy as np

from snapdp import SnappingMechanism
from snapdp.fast import release_into, release_one
from snapdp.fast_plan import uniform as _uniform
from snapdp.randomness import SeededSource, draw_uniform, uniform_from_parts

from ._reference import ListSource, exact_releases, same_bits

MANTISSA = (1 << 52) - 1


def _crafted_words() -> list[int]:
    """Sample blocks with every rare case, separated by ordinary random blocks."""
    rng = np.random.default_rng(21)

    def ordinary(k: int) -> list[int]:
        return [int(w) for w in rng.integers(0, 2**64, 2 * k, dtype=np.uint64)]

    w = ordinary(5)
    w += [(1 << 63) | 12345, 0, 1 << 40]  # exponent word 0, then e = 64 + 24
    w += ordinary(3)
    w += [777, 5]  # exponent word in (0, 2**11): e = 62
    w += [1 << 63, 2047]  # e = 54
    w += [99, 2048]  # the smallest ordinary exponent word: e = 53
    w += ordinary(2)
    w += [(1 << 63) | 4242] + [0] * 16  # 16 zero words: e >= 1023, subnormal U* = 4242·2**-1074
    w += ordinary(1)
    w += [1 << 63] + [0] * 16  # subnormal with m = 0: U* would be 0, the sample is drawn again
    w += ordinary(4)
    w += [MANTISSA, 0, 0, 1]  # e = 128 + 64
    w += ordinary(3)
    return w


def test_rare_draws_vectorised_equals_exact() -> None:
    words = _crafted_words()
    for eps, lower, upper in [(1.0, 0, 100), (2.0**20, 0, 4e6), (1e-3, -5, 3)]:
        mech = SnappingMechanism(eps, 1, lower, upper)
        assert mech._plan is not None
        values = np.linspace(lower - 1, upper + 1, 25)
        expected_source = ListSource(words)
        expected = exact_releases(mech.parameters, values, expected_source)
        tail = expected_source.words(5).tolist()
        for chunk in (4, 25, 1 << 16):
            src = ListSource(words)
            out = np.empty(values.size)
            release_into(mech.parameters, mech._plan, values, src, out, chunk=chunk)
            assert same_bits(out, expected)
            assert src.words(5).tolist() == tail
        src = ListSource(words)
        scalar = np.array([release_one(mech.parameters, mech._plan, x, src) for x in values])
        assert same_bits(scalar, expected)
        assert src.words(5).tolist() == tail


def test_crafted_stream_really_contains_the_rare_draws() -> None:
    src = ListSource(_crafted_words())
    draws = [draw_uniform(src) for _ in range(25)]
    us = [d.u for d in draws]
    assert 4242 * 2.0**-1074 in us  # the subnormal sample
    assert any(2.0**-192 <= u < 2.0**-191 for u in us)  # e = 192
    assert any(2.0**-88 <= u < 2.0**-87 for u in us)  # e = 88 after one zero word


def test_uniform_from_bits_equals_uniform_from_parts() -> None:
    rng = np.random.default_rng(2)
    words = rng.integers(0, 2**64, 200_000, dtype=np.uint64)
    w1 = words[1::2]
    w1[::5] >>= rng.integers(0, 53, w1[::5].size).astype(np.uint64)  # small exponent words too
    w1 |= np.uint64(1 << 11)
    got = _uniform(words)
    for i in range(0, got.size, 7):
        m = int(words[2 * i]) & MANTISSA
        e = 65 - int(w1[i]).bit_length()
        assert got[i] == uniform_from_parts(m, e)


def test_scalar_and_vectorised_read_the_same_stream_interleaved() -> None:
    mech = SnappingMechanism(1.0, 1, 0, 100, rng=np.random.default_rng(31))
    values = np.random.default_rng(32).uniform(0, 100, 40)
    expected = exact_releases(mech.parameters, values, SeededSource(np.random.default_rng(31)))
    got = np.concatenate(
        [
            mech.release_many(values[:10]),
            [mech.release(float(x)) for x in values[10:25]],
            mech.release_many(values[25:]),
        ]
    )
    assert same_bits(got, expected)
