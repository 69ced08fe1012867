"""The fast reads of the scalar path (``word``, ``pair``) keep the stream order of ``words``."""

from __future__ import annotations

import copy

import numpy as np

from snapdp import SnappingMechanism
from snapdp.randomness import OSRandomSource, SeededSource


def _twin(src: OSRandomSource) -> OSRandomSource:
    twin = copy.copy(src)
    twin._buffer = src._buffer
    return twin


def test_os_source_pair_word_and_words_read_one_stream() -> None:
    a = OSRandomSource(buffer_bytes=1 << 12)
    a.word()  # fill the buffer
    b = _twin(a)
    c = _twin(a)
    n = 100  # stays inside the 4 KiB buffer: 8 + 16·100 bytes
    pairs = [a.pair() for _ in range(n)]
    singles = [(b.word(), b.word()) for _ in range(n)]
    bulk = c.words(2 * n).tolist()
    assert pairs == singles
    assert [w for p in pairs for w in p] == bulk


def test_pair_after_unread_serves_the_pushback_first() -> None:
    a = OSRandomSource()
    first = a.words(4)
    a.unread(first)
    assert a.pair() == (int(first[0]), int(first[1]))
    assert a.word() == int(first[2])


def test_seeded_word_equals_bulk() -> None:
    a = SeededSource(np.random.default_rng(4))
    b = SeededSource(np.random.default_rng(4))
    assert [a.word() for _ in range(50)] == b.words(50).tolist()


def test_os_source_release_many_large_is_on_grid() -> None:
    mech = SnappingMechanism(
        1.0, 1, 0, 100, rescale=False
    )  # OS CSPRNG: bulk reads beyond the buffer
    out = mech.release_many(np.full(200_000, 42.0))
    assert np.all((out >= 0) & (out <= 100))
    assert np.all((out - 50) % 2 == 0)
    # output 42 ⇔ x̃ + Y ∈ [−9, −7) with x̃ = −8 ⇔ |Y| < 1 (up to a null set): P = 1 − e^{−ε′},
    # ε′ = 1 − O(2**-48); 200 000 samples give a standard deviation 0.0011, the window is ±9σ
    assert abs(np.mean(out == 42.0) - (1 - np.exp(-1.0))) < 0.01
