"""The textbook Laplace reachability decision against brute force, and Mironov's leak."""

from __future__ import annotations

import math

import numpy as np
import pytest

from snapdp import LaplaceMechanism
from snapdp.verify import textbook_leak
from snapdp.verify.laplace import (
    can_produce,
    laplace_mechanism_branches,
    numpy_laplace_branches,
    numpy_laplace_from_raw,
)


def test_numpy_laplace_model_is_bit_exact() -> None:
    """Our model of Generator.laplace (C log via math.log) replays numpy's outputs exactly."""
    raw = [int(w) for w in np.random.default_rng(7).bit_generator.random_raw(5000)]
    expected = np.random.default_rng(7).laplace(0.5, 3.0, 5000)
    assert np.array_equal(np.array(numpy_laplace_from_raw(0.5, 3.0, raw)), expected)


def _doubles_between(a: float, b: float, limit: int = 5000) -> list[float]:
    out = []
    d = a
    while d <= b and len(out) < limit:
        out.append(d)
        d = math.nextafter(d, math.inf)
    return out


@pytest.mark.parametrize("value", [0.0, 1.0, -2.5])
@pytest.mark.parametrize("centre", [3, 1 << 20, (1 << 52) + 12345, (1 << 53) - 40])
def test_can_produce_matches_brute_force(value: float, centre: int) -> None:
    """Every double between the outputs of m0 − 30 and m0 + 30 is reachable iff it is one of
    those 61 outputs (monotonicity: nothing else can land in between)."""
    scale = 3.0
    for branch in laplace_mechanism_branches(value, scale):
        ms = np.arange(max(1, centre - 30), min(1 << 53, centre + 30) + 1, dtype=np.int64)
        outs = branch.evaluate(ms)
        assert np.all(np.diff(outs) >= 0)  # monotone on this window
        candidates = _doubles_between(float(outs[0]), float(outs[-1]))
        truth = np.isin(candidates, outs)
        decided = can_produce(laplace_mechanism_branches(value, scale), candidates)
        assert decided[truth].all()  # every output of the window is found
        # a double strictly inside the window and not an output of the window is impossible
        # unless the other branch produces it (only possible at the value itself)
        other = [c for c, t, d in zip(candidates, truth, decided, strict=True) if d and not t]
        assert all(c == value for c in other)


def test_numpy_branch_decides_its_own_outputs() -> None:
    outs = np.random.default_rng(3).laplace(0.0, 3.0, 3000)
    assert can_produce(numpy_laplace_branches(0.0, 3.0), outs).all()
    shifted = np.random.default_rng(4).laplace(1.0, 3.0, 3000)
    assert not can_produce(numpy_laplace_branches(0.0, 3.0), shifted).all()


def test_mironov_example_infinite_loss_and_delta() -> None:
    """Δ = 1, ε = 1/3, inputs 0 and 1: outputs of 0 impossible under 1 exist (loss = ∞), and
    their mass δ is far from 0 (estimated with a 99.9% Clopper–Pearson interval)."""
    mech = LaplaceMechanism(1 / 3, 1.0, rng=np.random.default_rng(11))
    leak = textbook_leak(mech, 0.0, 1.0, samples=20_000)
    assert leak.loss_is_infinite
    assert leak.witness is not None
    assert not can_produce(laplace_mechanism_branches(1.0, mech.scale), [leak.witness])[0]
    assert can_produce(laplace_mechanism_branches(0.0, mech.scale), [leak.witness])[0]
    assert leak.delta_low > 0.3
