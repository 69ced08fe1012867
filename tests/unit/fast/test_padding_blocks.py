"""The padding F (docs/fast-path.md, "Constant work per chunk") is computed a block of F at a
time (issue 32, a fresh `snapdp run`): the same F and timing δ, double for double, as the
scalar recurrence it replaced, kept here as the reference."""

from __future__ import annotations

import math
import random
from fractions import Fraction
from types import SimpleNamespace
from typing import Any

import pytest

from snapdp import fast_plan
from snapdp.fast_plan import CHUNK


def _scalar_padding(params: Any, p: float) -> tuple[int, float]:
    """The recurrence one F at a time: ln q(1) = 2·ln(Cp) − ln 2, ln q(F) = ln q(F−1) + ln(Cp) −
    ln(F+1); the first F with ln(1 + e^ε) + ln q(F) <= ln 2**-80 − ln 2."""
    if p >= 1.0:
        return CHUNK, 0.0
    eps = float(params.epsilon) * (1.0 + 2.0**-50)
    log_one_plus_e_eps = eps + math.log1p(math.exp(-eps))
    log_cp = math.log(CHUNK * p)
    target = -80 * math.log(2.0) - math.log(2.0)
    f, log_q = 1, 2.0 * log_cp - math.log(2.0)
    while f < CHUNK:
        if log_one_plus_e_eps + log_q <= target:
            return f, min(1.0, 2.0 * math.exp(log_one_plus_e_eps + log_q))
        f += 1
        log_q += log_cp - math.log(f + 1)
    return CHUNK, 0.0


_RNG = random.Random(20261127)
_PROBABILITIES = [1e-13, 1e-6, 2.0**-7, 2.0**-6, 0.02, 0.3, 0.5, 0.999, 1.0] + [
    10 ** _RNG.uniform(-14, 0) for _ in range(40)
]


@pytest.mark.parametrize("epsilon", [Fraction(1, 1000), Fraction(333, 1000), Fraction(40)])
def test_the_padding_by_blocks_is_the_scalar_recurrence(epsilon: Fraction) -> None:
    params = SimpleNamespace(epsilon=epsilon)
    for p in _PROBABILITIES:
        got, want = fast_plan._padding(params, p), _scalar_padding(params, p)  # type: ignore[arg-type]
        assert got[0] == want[0], p
        assert got[1].hex() == want[1].hex(), p


def test_a_padding_at_a_block_edge_and_at_the_chunk() -> None:
    """F just past a block's end, and p so large that no F below CHUNK passes."""
    params = SimpleNamespace(epsilon=Fraction(1, 3))
    edge = fast_plan._PADDING_BLOCK
    probes = [p for p in (2.0**-k for k in range(1, 40))]
    found = {_scalar_padding(params, p)[0] for p in probes}
    assert any(f > edge for f in found) and CHUNK in found
    for p in probes:
        assert fast_plan._padding(params, p) == _scalar_padding(params, p)  # type: ignore[arg-type]
