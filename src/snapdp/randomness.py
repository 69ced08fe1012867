"""Random bits and the uniform U* of the snapping mechanism (DESIGN §2.4, §2.7; seed 001 §3).

A *bit source* only produces unsigned 64-bit words; the samplers below turn words into the sign S
and the ulp-weighted uniform U*. Both the exact path and any vectorised path read the same source in
the same order, which is what makes them comparable bit for bit.

Word layout of one sample (the *sample block*):

* word 0: bit 63 is the sign (1 means S = −1); bits 0..51 are the mantissa m of U*.
* word 1: the exponent e ~ Geom(1/2) on {1, 2, …}: e = 1 + (number of leading zero bits). Only when
  the whole word is zero (probability 2**-64) is a further word read, adding 64; reading stops once
  e ≥ 1023 is certain (at most 15 further words: the 16th zero word, word 1 included, makes
  e = 1024).

U* = (2**52 + m)·2**-(52+e) for e ≤ 1022, a normal double in [2**-e, 2**(1-e)). For e ≥ 1023 it is
the subnormal m·2**-1074 (the band (0, 2**-1022) has probability 2**-1022 and every subnormal the
same ulp 2**-1074). The one pattern m = 0 there would give U* = 0, outside (0, 1): the whole
sample is drawn again (probability 2**-1074). Every double u in (0, 1) is thus drawn with
probability ulp(u) / (1 − 2**-1074), where ulp(u) is the spacing of doubles just above u; so
P(U* < t) is the smallest double ≥ t, up to that normalisation.

The number of words read, and the work done, depend on neither the input value nor |Y| except
through the two events of probability 2**-64 and 2**-1074 above.
"""

from __future__ import annotations

import math
import os
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from snapdp.errors import ParameterError

__all__ = [
    "BitSource",
    "OSRandomSource",
    "SeededSource",
    "UniformDraw",
    "bit_source_from",
    "draw_uniform",
    "uniform_from_parts",
]

WORDS_PER_SAMPLE = 2
_SUBNORMAL_EXPONENT = 1023  # e >= this: U* is subnormal
_MANTISSA_MASK = (1 << 52) - 1


@runtime_checkable
class BitSource(Protocol):
    """Anything that hands out unsigned 64-bit words in a fixed order."""

    def words(self, n: int) -> npt.NDArray[np.uint64]:
        """The next ``n`` words of the stream, as a uint64 array of length ``n``."""
        ...

    def word(self) -> int:
        """The next word of the stream, as a Python int in [0, 2**64)."""
        ...

    def unread(self, words: npt.NDArray[np.uint64]) -> None:
        """Put ``words`` back at the head of the stream, to be read again next, in order."""
        ...


class _PushbackMixin:
    """A stream with a small pushback buffer, so a bulk reader can hand back what it read ahead."""

    def __init__(self) -> None:
        self._pushback: npt.NDArray[np.uint64] = np.empty(0, dtype=np.uint64)

    def _fresh(self, n: int) -> npt.NDArray[np.uint64]:
        raise NotImplementedError

    def words(self, n: int) -> npt.NDArray[np.uint64]:
        if n < 0:
            raise ParameterError(f"`n` must be >= 0, not {n}")
        if self._pushback.size == 0:
            return self._fresh(n)
        head, self._pushback = self._pushback[:n], self._pushback[n:]
        joined: npt.NDArray[np.uint64] = (
            head.copy() if head.size == n else np.concatenate([head, self._fresh(n - head.size)])
        )
        return joined

    def word(self) -> int:
        return int(self.words(1)[0])

    def unread(self, words: npt.NDArray[np.uint64]) -> None:
        self._pushback = np.concatenate([np.asarray(words, dtype=np.uint64), self._pushback])


class OSRandomSource(_PushbackMixin):
    """Words from the operating system's CSPRNG (``os.urandom``, i.e. getrandom on Linux).

    Bytes are read from the OS in blocks of ``buffer_bytes`` and served from memory; the buffer is
    dropped in a forked child (checked by process id), so parent and child never share bits.
    This is the default source and the only one fit for private releases.
    """

    def __init__(self, buffer_bytes: int = 1 << 14) -> None:
        super().__init__()
        self._block = max(8, buffer_bytes - buffer_bytes % 8)
        self._buffer = b""
        self._offset = 0
        self._pid = os.getpid()

    def _forget_if_forked(self) -> None:
        """In a forked child, drop the buffer and the pushed-back words (the parent's bits)."""
        if os.getpid() != self._pid:
            self._pid, self._buffer, self._offset = os.getpid(), b"", 0
            self._pushback = np.empty(0, dtype=np.uint64)

    def words(self, n: int) -> npt.NDArray[np.uint64]:
        self._forget_if_forked()  # before the pushback buffer is served
        return super().words(n)

    def _fresh(self, n: int) -> npt.NDArray[np.uint64]:
        need = 8 * n
        if need > self._block:
            return np.frombuffer(os.urandom(need), dtype="<u8").astype(np.uint64)
        if self._offset + need > len(self._buffer):
            self._buffer, self._offset = os.urandom(self._block), 0
        chunk = self._buffer[self._offset : self._offset + need]
        self._offset += need
        return np.frombuffer(chunk, dtype="<u8").astype(np.uint64)

    def pair(self) -> tuple[int, int]:
        """The next two words (one sample block) as ints: ``(word(), word())``, in one read."""
        off = self._offset
        if off + 16 <= len(self._buffer) and self._pushback.size == 0 and os.getpid() == self._pid:
            self._offset = off + 16
            both = int.from_bytes(self._buffer[off : off + 16], "little")
            return both & 0xFFFFFFFFFFFFFFFF, both >> 64
        return self.word(), self.word()

    def word(self) -> int:
        """The next word; served straight from the byte buffer when possible (same order)."""
        off = self._offset
        if off + 8 <= len(self._buffer) and self._pushback.size == 0 and os.getpid() == self._pid:
            self._offset = off + 8
            return int.from_bytes(self._buffer[off : off + 8], "little")
        return super().word()

    def __repr__(self) -> str:
        return "OSRandomSource()"


class SeededSource(_PushbackMixin):
    """Words from a numpy ``Generator``'s bit generator (``random_raw``). **Not private.**

    For reproducible tests and verification only: anyone who knows the seed knows the noise.
    The stream depends only on the generator's state, never on how reads are batched.
    """

    def __init__(self, rng: np.random.Generator) -> None:
        super().__init__()
        self._bit_generator = rng.bit_generator

    def _fresh(self, n: int) -> npt.NDArray[np.uint64]:
        raw: npt.NDArray[np.uint64] = np.asarray(self._bit_generator.random_raw(n), dtype=np.uint64)
        return raw.reshape(n)

    def word(self) -> int:
        """The next word (``random_raw()`` yields the same stream one word at a time)."""
        if self._pushback.size == 0:
            return int(self._bit_generator.random_raw())
        return super().word()

    def __repr__(self) -> str:
        return f"SeededSource({type(self._bit_generator).__name__}, NOT PRIVATE)"


def bit_source_from(rng: object) -> BitSource:
    """The bit source for an ``rng`` argument: None → OS CSPRNG; a numpy Generator → seeded."""
    if rng is None:
        return OSRandomSource()
    if isinstance(rng, np.random.Generator):
        return SeededSource(rng)
    if isinstance(rng, (OSRandomSource, SeededSource)):
        return rng
    raise ParameterError(
        f"`rng` must be None (the OS CSPRNG) or a numpy.random.Generator, not {type(rng).__name__}"
    )


class UniformDraw:
    """One draw of the sign S and of U*: ``sign`` is +1 or −1, ``u`` the double U*."""

    __slots__ = ("sign", "u")

    def __init__(self, sign: int, u: float) -> None:
        self.sign = sign
        self.u = u

    def __repr__(self) -> str:
        return f"UniformDraw(sign={self.sign}, u={self.u!r})"


def geometric_exponent(first_word: int, source: BitSource) -> int:
    """e ~ Geom(1/2) on {1, 2, …} from ``first_word``, reading further words only if it is zero.

    Stops once e >= 1023 is certain; the value returned is then >= 1023 (exactly which does not
    matter: U* is subnormal).
    """
    e = 0
    w = first_word
    while w == 0:
        e += 64
        if e >= _SUBNORMAL_EXPONENT:
            return e
        w = source.word()
    return e + 65 - w.bit_length()  # 1 + leading zeros of a 64-bit word


def uniform_from_parts(mantissa: int, exponent: int) -> float:
    """U* from its 52-bit mantissa and exponent (exact: the value is a double by construction).

    For exponent >= 1023 the subnormal m·2**-1074 (m = 0 is the caller's to reject).
    """
    if exponent >= _SUBNORMAL_EXPONENT:
        return math.ldexp(float(mantissa), -1074)
    return math.ldexp(float((1 << 52) | mantissa), -(52 + exponent))


def draw_uniform(source: BitSource) -> UniformDraw:
    """Draw S and U* from ``source`` with the sample block layout of this module's docstring."""
    while True:
        block = source.words(WORDS_PER_SAMPLE)
        w0, w1 = int(block[0]), int(block[1])
        sign = -1 if w0 >> 63 else 1
        mantissa = w0 & _MANTISSA_MASK
        exponent = geometric_exponent(w1, source)
        if exponent >= _SUBNORMAL_EXPONENT and mantissa == 0:
            continue  # U* would be 0: draw the whole sample again (probability 2**-1074)
        return UniformDraw(sign, uniform_from_parts(mantissa, exponent))
