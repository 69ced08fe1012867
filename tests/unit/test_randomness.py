"""The bit sources and the U* sampler (DESIGN §2.4, §2.7)."""

from __future__ import annotations

import math
import os
from fractions import Fraction

import numpy as np
import numpy.typing as npt
import pytest

from snapdp import ParameterError
from snapdp.randomness import (
    DRBGSource,
    OSRandomSource,
    SeededSource,
    _PushbackMixin,
    bit_source_from,
    draw_uniform,
)


class ScriptedSource(_PushbackMixin):
    """A bit source that returns a fixed script of words (for crafted draws)."""

    def __init__(self, script: list[int]) -> None:
        super().__init__()
        self.script = list(script)
        self.read = 0

    def _fresh(self, n: int) -> npt.NDArray[np.uint64]:
        out = self.script[self.read : self.read + n]
        if len(out) < n:
            raise AssertionError("script exhausted")
        self.read += n
        return np.array(out, dtype=np.uint64)


def test_sign_mantissa_and_exponent_layout() -> None:
    m = 0x000F_0000_0000_0001
    src = ScriptedSource([(1 << 63) | m, 1 << 60])  # 3 leading zeros → e = 4
    d = draw_uniform(src)
    assert d.sign == -1
    assert Fraction(d.u) == Fraction(2**52 + m, 2 ** (52 + 4))
    src = ScriptedSource([m, 1 << 63])  # no leading zeros → e = 1: U* in [1/2, 1)
    d = draw_uniform(src)
    assert d.sign == 1 and 0.5 <= d.u < 1


def test_zero_exponent_words_extend_the_geometric() -> None:
    src = ScriptedSource([5, 0, 0, 1])  # 64 + 64 + 63 zeros, then a one → e = 192
    d = draw_uniform(src)
    assert Fraction(d.u) == Fraction(2**52 + 5, 2 ** (52 + 192))
    assert src.read == 4


def test_subnormal_tail_and_redraw_of_zero() -> None:
    # 16 zero words reach e >= 1023: U* = m·2**-1074; with m = 0 the whole sample is redrawn
    src = ScriptedSource([0] + [0] * 16 + [7] + [0] * 16)
    d = draw_uniform(src)
    assert d.u == 7 * 5e-324
    assert src.read == 34
    src = ScriptedSource([3] + [0] * 15 + [1])  # e = 960 + 64 = 1024 → subnormal
    assert draw_uniform(src).u == 3 * 5e-324
    src = ScriptedSource([3] + [0] * 15 + [1 << 63])  # e = 961: still normal
    assert Fraction(draw_uniform(src).u) == Fraction(2**52 + 3, 2 ** (52 + 961))


def test_u_star_distribution_is_ulp_weighted() -> None:
    """P(U* < 2**-k) = 2**-k; within a binade, the mantissa is uniform (fixed seed)."""
    src = SeededSource(np.random.default_rng(12345))
    us = np.array([draw_uniform(src).u for _ in range(40000)])
    n = us.size
    for k in (1, 2, 3, 5):
        frac = np.mean(us < 2.0**-k)
        assert abs(frac - 2.0**-k) < 5.5 * math.sqrt(2.0**-k / n)  # ~α 1e-7 normal tail
    top = us[us >= 0.5]
    assert abs(np.mean(top < 0.75) - 0.5) < 5.5 * math.sqrt(0.25 / top.size)
    assert np.all((us > 0) & (us < 1))


def test_seeded_stream_independent_of_batching() -> None:
    a = SeededSource(np.random.default_rng(7))
    b = SeededSource(np.random.default_rng(7))
    one_by_one = [a.word() for _ in range(10)]
    assert list(b.words(4)) + list(b.words(6)) == one_by_one


def test_unread_puts_words_back_in_order() -> None:
    src = SeededSource(np.random.default_rng(1))
    first = src.words(5)
    src.unread(first[2:])
    again = src.words(5)
    assert list(again[:3]) == list(first[2:])
    ref = SeededSource(np.random.default_rng(1))
    assert list(ref.words(7))[5:] == list(again[3:])


def test_os_source_gives_fresh_words_and_survives_large_reads() -> None:
    src = OSRandomSource(buffer_bytes=64)
    a, b = src.words(8), src.words(1000)
    assert a.dtype == np.uint64 and b.size == 1000
    assert len(set(map(int, b))) > 990  # 64-bit words do not repeat by chance


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_child_does_not_reuse_the_parents_buffer() -> None:
    src = OSRandomSource()
    src.words(1)  # fill the buffer
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: report its next word
        os.close(r)
        os.write(w, int(src.word()).to_bytes(8, "little"))
        os._exit(0)
    os.close(w)
    child_word = int.from_bytes(os.read(r, 8), "little")
    os.waitpid(pid, 0)
    assert child_word != src.word()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_child_does_not_reuse_pushed_back_words() -> None:
    src = OSRandomSource()
    src.unread(src.words(4))  # as the bulk path does on a rare draw
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.write(w, b"".join(int(x).to_bytes(8, "little") for x in src.words(4)))
        os._exit(0)
    os.close(w)
    child = os.read(r, 32)
    os.waitpid(pid, 0)
    parent = b"".join(int(x).to_bytes(8, "little") for x in src.words(4))
    assert child != parent


def test_bit_source_from_rejects_other_rngs() -> None:
    assert isinstance(bit_source_from(None), DRBGSource)
    assert isinstance(bit_source_from(np.random.default_rng(0)), SeededSource)
    with pytest.raises(ParameterError, match="`rng`"):
        bit_source_from(np.random.RandomState(0))
    with pytest.raises(ParameterError, match="`rng`"):
        bit_source_from(42)
