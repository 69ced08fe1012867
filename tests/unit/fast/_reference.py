"""The exact path as the oracle: draw_uniform + snapped_output, sample by sample."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from snapdp.fast_plan import CHUNK
from snapdp.parameters import SnappingParameters
from snapdp.randomness import BitSource, _PushbackMixin, draw_uniform, substreams
from snapdp.snapping import normalize, snapped_output


def exact_releases(
    params: SnappingParameters, values: npt.NDArray[Any], source: BitSource
) -> npt.NDArray[np.float64]:
    """What the exact path returns for ``values``, drawing from ``source`` in order."""
    out = np.empty(values.size, dtype=np.float64)
    as_int = values.dtype.kind in "iu"
    for i, x in enumerate(values.reshape(-1)):
        draw = draw_uniform(source)
        value = int(x) if as_int else float(x)
        out[i] = snapped_output(params, normalize(params, value), draw.sign, draw.u)
    return out


def exact_releases_chunked(
    params: SnappingParameters, values: npt.NDArray[Any], source: BitSource, chunk: int = CHUNK
) -> npt.NDArray[np.float64]:
    """The exact path under release_many's chunk rule: up to ``chunk`` values read ``source``
    itself; more: chunk i reads the i-th substream of ``source``, in order."""
    flat = values.reshape(-1)
    count = max(1, -(-flat.size // chunk))
    if count == 1:
        return exact_releases(params, flat, source)
    subs = substreams(source, count)
    return np.concatenate(
        [exact_releases(params, flat[i * chunk : (i + 1) * chunk], s) for i, s in enumerate(subs)]
    )


def same_bits(a: npt.NDArray[np.float64], b: npt.NDArray[np.float64]) -> bool:
    """Equal as bit patterns (so 0.0 and -0.0 differ)."""
    return bool(np.array_equal(np.asarray(a).view(np.uint64), np.asarray(b).view(np.uint64)))


class ListSource(_PushbackMixin):
    """A bit source serving a fixed list of words, then words from a seeded generator."""

    def __init__(self, words: list[int], seed: int = 0) -> None:
        super().__init__()
        self._words = np.array(words, dtype=np.uint64)
        self._rng = np.random.default_rng(seed)

    def _fresh(self, n: int) -> npt.NDArray[np.uint64]:
        head, self._words = self._words[:n], self._words[n:]
        tail = self._rng.bit_generator.random_raw(n - head.size)
        return np.concatenate([head, np.asarray(tail, dtype=np.uint64)])
