"""Random bits and the uniform U* of the snapping mechanism (DESIGN §2.4, §2.7; seed 001 §3).

A *bit source* only produces unsigned 64-bit words; the samplers below turn words into the sign S
and the ulp-weighted uniform U*. Sources: :class:`DRBGSource` (the default: AES-256-CTR keyed from
the OS, fast key erasure), :class:`OSRandomSource` (``os.urandom``), :class:`SeededSource` (a numpy
Generator, **not private**); docs/mechanism.md, "Randomness". Both the exact path and any
vectorised path read the same source in the same order, which is what makes them comparable bit
for bit.

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
import threading
import weakref
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from snapdp.errors import ParameterError

__all__ = [
    "BitSource",
    "DRBGSource",
    "OSRandomSource",
    "SeededSource",
    "UniformDraw",
    "aes256_ctr_keystream",
    "bit_source_from",
    "draw_uniform",
    "is_private",
    "substreams",
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


_fork_generation = 0  # bumped in every forked child (os.register_at_fork)


class _BufferedSource(_PushbackMixin):
    """A CSPRNG stream served from a byte buffer: thread-safe, and fresh in a forked child.

    Subclasses produce bytes with ``_generate`` and forget their state with ``_after_fork``.
    Small reads (``word``, ``pair``, ``words`` of at most a block) are served from a buffer of
    ``buffer_bytes``; larger reads go to ``_generate`` directly. A lock makes every read atomic,
    so threads sharing one source never receive the same words. In a forked child (detected by
    process id before every read, and by ``os.register_at_fork`` for the DRBG) the buffer and
    the pushed-back words — the parent's bits — are dropped.
    """

    def __init__(self, buffer_bytes: int = 1 << 14) -> None:
        super().__init__()
        self._block = max(8, buffer_bytes - buffer_bytes % 8)
        self._buffer = b""
        self._offset = 0
        self._pid = os.getpid()
        self._generation = _fork_generation
        self._lock = threading.Lock()

    def _generate(self, nbytes: int) -> bytes | npt.NDArray[np.uint8]:
        raise NotImplementedError

    def _after_fork(self) -> None:
        """Drop the parent's bits (buffer, pushback) in a forked child; subclasses add to it."""
        self._pid, self._buffer, self._offset = os.getpid(), b"", 0
        self._generation = _fork_generation
        self._pushback = np.empty(0, dtype=np.uint64)
        self._lock = threading.Lock()  # a lock held by another thread at fork stays held

    def _forget_if_forked(self) -> None:
        if self._generation != _fork_generation or os.getpid() != self._pid:
            self._after_fork()

    def words(self, n: int) -> npt.NDArray[np.uint64]:
        self._forget_if_forked()  # before the pushback buffer is served
        with self._lock:
            return super().words(n)

    def unread(self, words: npt.NDArray[np.uint64]) -> None:
        with self._lock:
            super().unread(words)

    def _fresh(self, n: int) -> npt.NDArray[np.uint64]:
        need = 8 * n
        if need > self._block:
            raw = self._generate(need)
            if isinstance(raw, np.ndarray):
                return raw.view("<u8").astype(np.uint64, copy=False)
            return np.frombuffer(raw, dtype="<u8").astype(np.uint64)
        if self._offset + need > len(self._buffer):
            self._buffer, self._offset = bytes(self._generate(self._block)), 0
        chunk = self._buffer[self._offset : self._offset + need]
        self._offset += need
        return np.frombuffer(chunk, dtype="<u8").astype(np.uint64)

    def pair(self) -> tuple[int, int]:
        """The next two words (one sample block) as ints: ``(word(), word())``, in one read.

        Served from the byte buffer when it holds them, nothing was pushed back and no fork
        happened since the buffer was filled (a counter bumped by ``os.register_at_fork``; the
        bulk reads also compare the process id); otherwise through :meth:`words`.
        """
        if self._generation == _fork_generation:
            with self._lock:
                off = self._offset
                if off + 16 <= len(self._buffer) and not self._pushback.size:
                    self._offset = off + 16
                    both = int.from_bytes(self._buffer[off : off + 16], "little")
                    return both & 0xFFFFFFFFFFFFFFFF, both >> 64
        w = self.words(2)
        return int(w[0]), int(w[1])

    def word(self) -> int:
        """The next word; served straight from the byte buffer when possible (same order)."""
        if self._generation == _fork_generation:
            with self._lock:
                off = self._offset
                if off + 8 <= len(self._buffer) and not self._pushback.size:
                    self._offset = off + 8
                    return int.from_bytes(self._buffer[off : off + 8], "little")
        return int(self.words(1)[0])


class OSRandomSource(_BufferedSource):
    """Words from the operating system's CSPRNG (``os.urandom``, i.e. getrandom on Linux).

    Bytes are read from the OS in blocks of ``buffer_bytes`` and served from memory; the buffer is
    dropped in a forked child (checked by process id), so parent and child never share bits.
    Private, and selectable with ``SnappingMechanism(..., rng=OSRandomSource())``; the default
    source is the faster :class:`DRBGSource` (docs/mechanism.md, "Randomness").
    """

    def _generate(self, nbytes: int) -> bytes:
        return os.urandom(nbytes)

    def spawn(self, count: int) -> list[OSRandomSource]:
        """``count`` independent sources (each reads the OS CSPRNG itself)."""
        return [OSRandomSource(self._block) for _ in range(count)]

    def __repr__(self) -> str:
        return "OSRandomSource()"


_KEY_BYTES = 32  # AES-256
_RESEED_BYTES = 1 << 30  # fresh key from the OS after this much output
_REQUEST_PIECE = 1 << 26  # one request (and one key) produces at most this many bytes
_ZERO_COUNTER = bytes(16)
_ZEROS = memoryview(bytes(1 << 20))  # plaintext for the keystream (CTR: ciphertext = keystream)
_LIVE_DRBGS: weakref.WeakSet[DRBGSource] = weakref.WeakSet()


def aes256_ctr_keystream(
    key: bytes | bytearray, counter: bytes, nbytes: int
) -> npt.NDArray[np.uint8]:
    """The first ``nbytes`` of the AES-256-CTR keystream (NIST SP 800-38A §6.5).

    E_K(T₁) ‖ E_K(T₂) ‖ …, T₁ = ``counter`` (16 bytes), T_{i+1} = T_i + 1 mod 2**128 (big-endian),
    computed by OpenSSL through ``cryptography`` as the encryption of zero bytes.
    """
    out = np.empty(nbytes + 15, dtype=np.uint8)  # update_into wants block size − 1 spare bytes
    encryptor = Cipher(algorithms.AES(key), modes.CTR(counter)).encryptor()
    view = out.data
    pos = 0
    while pos < nbytes:
        step = min(len(_ZEROS), nbytes - pos)
        encryptor.update_into(_ZEROS[:step], view[pos:])
        pos += step
    return out[:nbytes]


class DRBGSource(_BufferedSource):
    """Words from a deterministic random bit generator: AES-256-CTR keyed from the OS (DESIGN §2.7).

    **The default source.** The key K (32 bytes) comes from ``os.urandom``. Every request for r
    bytes computes the AES-256-CTR keystream of K from the all-zero counter block for 32 + r bytes;
    the first 32 bytes replace K (fast key erasure: the key that produced the output handed out
    is overwritten before the output is used, so a later disclosure of the state does not reveal
    earlier noise), the other r bytes are the output. A fresh key is read from the OS after every
    2**30 bytes and in a forked child (``os.register_at_fork`` and a process-id check before every
    read), so parent and child never produce the same words. Reads are serialised by a lock.
    Why this is a CSPRNG: docs/mechanism.md, "Randomness".
    """

    def __init__(self, buffer_bytes: int = 1 << 14, *, _key: bytes | None = None) -> None:
        super().__init__(buffer_bytes)
        self._key = bytearray(os.urandom(_KEY_BYTES) if _key is None else _key)
        self._since_seed = 0
        _LIVE_DRBGS.add(self)

    def _after_fork(self) -> None:
        super()._after_fork()
        self._key[:] = os.urandom(_KEY_BYTES)
        self._since_seed = 0

    def _generate(self, nbytes: int) -> npt.NDArray[np.uint8]:
        if nbytes <= _REQUEST_PIECE:
            return self._request(nbytes)
        pieces = [
            self._request(min(_REQUEST_PIECE, nbytes - pos))
            for pos in range(0, nbytes, _REQUEST_PIECE)
        ]
        return np.concatenate(pieces)

    def _request(self, nbytes: int) -> npt.NDArray[np.uint8]:
        """One request (the caller holds the lock): rekey from the keystream, return the rest."""
        if self._since_seed + nbytes > _RESEED_BYTES:
            self._key[:] = os.urandom(_KEY_BYTES)
            self._since_seed = 0
        stream = aes256_ctr_keystream(self._key, _ZERO_COUNTER, _KEY_BYTES + nbytes)
        self._key[:] = stream[:_KEY_BYTES].tobytes()  # the old key is overwritten in place
        stream[:_KEY_BYTES] = 0
        self._since_seed += _KEY_BYTES + nbytes
        return stream[_KEY_BYTES:]

    def spawn(self, count: int) -> list[DRBGSource]:
        """``count`` independent DRBGs, each keyed with 32 bytes of this one's output."""
        self._forget_if_forked()
        with self._lock:
            keys = self._generate(_KEY_BYTES * count)
        children = [
            DRBGSource(self._block, _key=keys[i * _KEY_BYTES : (i + 1) * _KEY_BYTES].tobytes())
            for i in range(count)
        ]
        keys[:] = 0
        return children

    def __repr__(self) -> str:
        return "DRBGSource(AES-256-CTR)"


def _after_fork_in_child() -> None:
    """In a forked child: every buffered source forgets its buffer on its next read; every live
    DRBG takes a fresh key from the OS now."""
    global _fork_generation
    _fork_generation += 1
    for drbg in list(_LIVE_DRBGS):
        drbg._after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


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

    def spawn(self, count: int) -> list[SeededSource]:
        """``count`` child streams from the generator's ``SeedSequence`` (``BitGenerator.spawn``).

        The children depend only on the seed and on how many children were spawned before, never
        on how many words were read: chunk i of a release gets the same words for any number of
        threads.
        """
        try:
            children = self._bit_generator.spawn(count)
        except (TypeError, ValueError, AttributeError):
            raise ParameterError(
                "`rng` must be created with numpy.random.default_rng(seed) (its SeedSequence is "
                "split into per-chunk substreams); see docs/fast-path.md"
            ) from None
        return [SeededSource(np.random.Generator(child)) for child in children]

    def __repr__(self) -> str:
        return f"SeededSource({type(self._bit_generator).__name__}, NOT PRIVATE)"


def bit_source_from(rng: object) -> BitSource:
    """The bit source for an ``rng`` argument (docs/mechanism.md, "Randomness").

    None → a new :class:`DRBGSource` (AES-256-CTR keyed from the OS, the default); a
    :class:`DRBGSource` or :class:`OSRandomSource` instance → that source; a numpy Generator → a
    :class:`SeededSource` (**not private**).
    """
    if rng is None:
        return DRBGSource()
    if isinstance(rng, np.random.Generator):
        return SeededSource(rng)
    if isinstance(rng, (DRBGSource, OSRandomSource, SeededSource)):
        return rng
    raise ParameterError(
        "`rng` must be None (the default CSPRNG), a DRBGSource or OSRandomSource, or a "
        f"numpy.random.Generator (not private), not {type(rng).__name__}"
    )


def is_private(source: BitSource) -> bool:
    """True for the CSPRNG sources (:class:`DRBGSource`, :class:`OSRandomSource`)."""
    return isinstance(source, (DRBGSource, OSRandomSource))


def substreams(source: BitSource, count: int) -> list[BitSource]:
    """``count`` independent child sources of ``source``, one per chunk of a parallel release.

    DRBG: children keyed from the parent's output; OS: independent OS sources; seeded: children of
    the ``SeedSequence`` (so a seeded release is the same for any number of threads).
    """
    spawn = getattr(source, "spawn", None)
    if spawn is None:
        raise ParameterError(
            f"the bit source {source!r} cannot be split into substreams (no spawn method)"
        )
    children: list[BitSource] = spawn(count)
    return children


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
