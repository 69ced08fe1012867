"""The default bit source: AES-256-CTR with fast key erasure (DESIGN §2.7, docs/mechanism.md).

Known answers from NIST SP 800-38A, F.5.5 (CTR-AES256.Encrypt); the DRBG's structure (rekey from
its own keystream) against a reimplementation from that keystream; a χ² test on its bytes at
α = 1e-6; a real ``os.fork``; threads; substreams.
"""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest
from scipy.stats import chi2

from snapdp import SnappingMechanism
from snapdp import randomness as rnd
from snapdp.randomness import DRBGSource, OSRandomSource, aes256_ctr_keystream, bit_source_from

# NIST SP 800-38A, Appendix F.5.5 (CTR-AES256.Encrypt)
SP800_38A_KEY = bytes.fromhex("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4")
SP800_38A_COUNTER = bytes.fromhex("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff")
SP800_38A_PLAIN = bytes.fromhex(
    "6bc1bee22e409f96e93d7e117393172a"
    "ae2d8a571e03ac9c9eb76fac45af8e51"
    "30c81c46a35ce411e5fbc1191a0a52ef"
    "f69f2445df4f9b17ad2b417be66c3710"
)
SP800_38A_CIPHER = bytes.fromhex(
    "601ec313775789a5b7a7f504bbf3d228"
    "f443e3ca4d62b59aca84e990cacaf5c5"
    "2b0930daa23de94ce87017ba2d84988d"
    "dfc9c58db67aada613c2dd08457941a6"
)


def test_keystream_matches_sp800_38a_f55() -> None:
    stream = aes256_ctr_keystream(SP800_38A_KEY, SP800_38A_COUNTER, 64).tobytes()
    cipher = bytes(s ^ p for s, p in zip(stream, SP800_38A_PLAIN, strict=True))
    assert cipher == SP800_38A_CIPHER


def test_keystream_is_the_same_in_pieces_and_across_the_zero_buffer() -> None:
    key = bytes(range(32))
    whole = aes256_ctr_keystream(key, bytes(16), 3 * (1 << 20) + 40).tobytes()
    assert whole[:64] == aes256_ctr_keystream(key, bytes(16), 64).tobytes()
    assert len(whole) == 3 * (1 << 20) + 40
    assert whole[-48:] != bytes(48)


def _reference_drbg(key: bytes, requests: list[int]) -> list[bytes]:
    """Fast key erasure from the keystream alone: each request of r bytes takes 32 + r bytes of
    AES-256-CTR(K, counter 0); the first 32 become the next K."""
    out = []
    for r in requests:
        stream = aes256_ctr_keystream(key, bytes(16), 32 + r).tobytes()
        key, data = stream[:32], stream[32:]
        out.append(data)
    return out


def test_drbg_rekeys_from_its_own_keystream_after_every_request() -> None:
    key = bytes(range(100, 132))
    drbg = DRBGSource(buffer_bytes=64, _key=key)
    # a bulk read larger than the block is one request; small reads refill a 64-byte block
    bulk = drbg.words(20).astype("<u8").tobytes()
    first_word = drbg.word().to_bytes(8, "little")
    pair = drbg.pair()
    ref = _reference_drbg(key, [160, 64])
    assert bulk == ref[0]
    assert first_word == ref[1][:8]
    assert pair == (
        int.from_bytes(ref[1][8:16], "little"),
        int.from_bytes(ref[1][16:24], "little"),
    )
    assert bytes(drbg._key) != key  # the key that made the output is gone


def test_drbg_bytes_pass_chi_square_at_alpha_1e_minus_6() -> None:
    """2**21 bytes, 256 cells: reject uniformity only beyond the 1 − 1e-6 quantile (255 df)."""
    data = DRBGSource().words(1 << 18).view(np.uint8)
    counts = np.bincount(data, minlength=256)
    expected = data.size / 256
    stat = float(((counts - expected) ** 2 / expected).sum())
    assert stat < chi2.isf(1e-6, 255)
    # the test could fail: a biased stream (one byte value doubled) is far beyond the threshold
    biased = np.where(data == 0, 1, data).astype(np.uint8)
    counts_b = np.bincount(biased, minlength=256)
    assert float(((counts_b - expected) ** 2 / expected).sum()) > chi2.isf(1e-6, 255)


def test_two_drbgs_differ() -> None:
    assert DRBGSource().words(4).tolist() != DRBGSource().words(4).tolist()


def test_reseeds_from_the_os_after_the_byte_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = os.urandom

    def counting(n: int) -> bytes:
        calls.append(n)
        return real(n)

    monkeypatch.setattr(rnd, "_RESEED_BYTES", 4096)
    drbg = DRBGSource(buffer_bytes=64)
    monkeypatch.setattr(rnd.os, "urandom", counting)
    drbg.words(200)  # 1600 + 32 bytes: no reseed yet
    assert calls == []
    drbg.words(400)  # would pass 4096 bytes since the seed: a fresh key from the OS first
    assert calls == [32]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.parametrize("prime", ["buffer", "pushback", "bulk"])
def test_forked_child_never_produces_the_parents_words(prime: str) -> None:
    src = DRBGSource()
    if prime == "buffer":
        src.word()
    elif prime == "pushback":
        src.unread(src.words(4))
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: its next words, small and bulk
        os.close(r)
        words = src.words(4).tolist() + src.words(4000).tolist()[:4]
        os.write(w, b"".join(int(x).to_bytes(8, "little") for x in words))
        os._exit(0)
    os.close(w)
    child = os.read(r, 64)
    os.waitpid(pid, 0)
    parent = src.words(4).tolist() + src.words(4000).tolist()[:4]
    child_words = [int.from_bytes(child[i : i + 8], "little") for i in range(0, 64, 8)]
    assert len(child_words) == 8
    assert not set(child_words) & set(parent)


def test_threads_sharing_one_source_never_get_the_same_words() -> None:
    src = DRBGSource(buffer_bytes=256)
    got: list[list[int]] = [[] for _ in range(4)]

    def read(i: int) -> None:
        for _ in range(500):
            got[i].append(src.word())
            got[i].extend(src.pair())
            got[i].extend(src.words(5).tolist())

    threads = [threading.Thread(target=read, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    everything = [w for g in got for w in g]
    assert len(everything) == 4 * 500 * 8
    assert len(set(everything)) == len(everything)


def test_substreams_are_distinct_and_keyed_from_the_parent() -> None:
    key = bytes(32)
    parent = DRBGSource(_key=key)
    children = parent.spawn(3)
    keys = _reference_drbg(key, [96])[0]
    for i, child in enumerate(children):
        assert (
            child.words(8).astype("<u8").tobytes()
            == _reference_drbg(keys[32 * i : 32 * (i + 1)], [64])[0]
        )
    assert len({tuple(c.words(4).tolist()) for c in parent.spawn(3)}) == 3


def test_default_source_is_the_drbg_and_the_os_source_stays_selectable() -> None:
    assert isinstance(bit_source_from(None), DRBGSource)
    mech = SnappingMechanism(1.0, 1, 0, 100)
    assert isinstance(mech._source, DRBGSource)
    assert "NOT PRIVATE" not in str(mech.privacy)
    os_mech = SnappingMechanism(1.0, 1, 0, 100, rng=OSRandomSource())
    assert isinstance(os_mech._source, OSRandomSource)
    assert "NOT PRIVATE" not in str(os_mech.privacy)
    out = os_mech.release_many(np.full(3 * (1 << 17), 42.0), threads=2)
    # every output is the midpoint plus a multiple of the grid the mechanism runs with (a dyadic
    # rational, 1.0625 at ε = 1 once rescaled): the quotient is an exact integer
    step = float(os_mech.parameters.grid * os_mech.parameters.sensitivity)
    assert np.all(((out - 50) / step) % 1 == 0)
    seeded = SnappingMechanism(1.0, 1, 0, 100, rng=np.random.default_rng(0))
    assert "NOT PRIVATE" in str(seeded.privacy)
