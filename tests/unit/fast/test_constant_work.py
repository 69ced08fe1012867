"""Constant work per chunk, the public fallback bound, and the runtime guard of the log premise
(docs/fast-path.md, "Constant work per chunk", "The fallback probability", F3)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from snapdp import SnappingMechanism, fast, fast_plan
from snapdp.fast import release_into
from snapdp.fast_plan import CHUNK, fallback_probability
from snapdp.randomness import SeededSource

from ._reference import ListSource, exact_releases, exact_releases_chunked, same_bits


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = fast.snapped_output

    def wrapped(*args: object) -> float:
        calls.append(1)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(fast, "snapped_output", wrapped)
    return calls


@pytest.mark.parametrize("threads", [1, 2])
def test_every_chunk_does_exactly_F_exact_evaluations(
    monkeypatch: pytest.MonkeyPatch, threads: int
) -> None:
    mech = SnappingMechanism(1.0, 1, 0, 100, rng=np.random.default_rng(1), rescale=False)
    plan = mech._plan
    assert plan is not None and 1 <= plan.padded_evaluations < 10
    calls = _counting(monkeypatch)
    values = np.random.default_rng(2).uniform(0, 100, 2 * CHUNK + 5)
    out = mech.release_many(values, threads=threads)
    assert len(calls) == 3 * plan.padded_evaluations  # three chunks, no real fallback here
    expected = exact_releases_chunked(
        mech.parameters, values, SeededSource(np.random.default_rng(1))
    )
    assert same_bits(out, expected)


def test_padding_never_exceeds_the_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    """F = CHUNK (parameters where every sample may fall back): a small array pads to its size."""
    mech = SnappingMechanism(2.0**20, 1, 0, 4e6, rng=np.random.default_rng(4), rescale=False)
    assert mech._plan is not None and mech._plan.padded_evaluations == CHUNK
    calls = _counting(monkeypatch)
    values = np.full(40, 1e6)
    out = mech.release_many(values)
    assert len(calls) == 40
    expected = exact_releases(mech.parameters, values, SeededSource(np.random.default_rng(4)))
    assert same_bits(out, expected)


def test_more_fallbacks_than_F_still_run_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    """x̃ on (k + 1/2)·Λ with U* = 1 − 2**-53: every sample is hard, all are computed exactly."""
    mech = SnappingMechanism(1.0, 1, 0, 100, rescale=False)
    plan = mech._plan
    assert plan is not None
    n = 50
    values = 50.0 + 2.0 * np.arange(-25, 25) + 1.0
    words = np.empty(2 * n, dtype=np.uint64)
    words[0::2] = np.uint64((1 << 63) | ((1 << 52) - 1))
    words[1::2] = np.uint64(1 << 63)
    calls = _counting(monkeypatch)
    out = np.empty(n)
    real = fast.release_chunks(mech.parameters, plan, values, ListSource(words.tolist()), out, 1)
    assert real == n > plan.padded_evaluations
    assert len(calls) == n  # no padding beyond F: the excess is what δ accounts for
    assert same_bits(out, exact_releases(mech.parameters, values, ListSource(words.tolist())))


def test_fallback_probability_formula_and_timing_delta() -> None:
    mech = SnappingMechanism(1.0, 1, 0, 100, rescale=False)  # B̃/Λ = 25
    p = fallback_probability(mech.parameters)
    assert p == pytest.approx(29 * 2.0**-43, rel=1e-12) and p >= 29 * 2.0**-43
    plan = mech._plan
    assert plan is not None
    f = plan.padded_evaluations
    # the union bound, recomputed: (1 + e^ε)·(CHUNK·p)**(F+1)/(F+1)! <= timing δ <= 2**-80
    q = (CHUNK * p) ** (f + 1) / math.factorial(f + 1)
    assert (1 + math.e) * q <= plan.timing_delta <= 2.0**-80
    q_less = (CHUNK * p) ** f / math.factorial(f)
    assert (1 + math.e) * q_less > 2.0**-81  # F is the smallest that meets the target
    assert mech.privacy.delta >= plan.timing_delta
    hard = SnappingMechanism(2.0**20, 1, 0, 4e6, rescale=False)  # B̃/Λ ≈ 2**40
    assert hard._plan is not None and hard._plan.padded_evaluations == CHUNK


@pytest.mark.parametrize(("eps", "x"), [(2.0**20, 1e6), (2.0**14, 1e6), (2.0**18, 3.7e6)])
def test_measured_fallback_rate_is_below_the_bound(eps: float, x: float) -> None:
    mech = SnappingMechanism(eps, 1, 0, 4e6, rescale=False)
    plan = mech._plan
    assert plan is not None
    n = 100_000
    out = np.empty(n)
    real = release_into(
        mech.parameters, plan, np.full(n, x), SeededSource(np.random.default_rng(5)), out
    )
    p = fallback_probability(mech.parameters)
    # binomial upper tail at α < 1e-6: mean + 5 sd + 25
    assert real <= n * p + 5 * math.sqrt(n * p) + 25


@pytest.fixture
def fresh_log_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fast_plan, "_LOG_CHECKED", None)


@pytest.mark.parametrize("which", ["np", "math"])
@pytest.mark.usefixtures("fresh_log_check")
def test_a_bad_log_falls_back_to_the_exact_path_bit_for_bit(
    monkeypatch: pytest.MonkeyPatch, which: str
) -> None:
    if which == "np":
        real_np_log = np.log
        monkeypatch.setattr(np, "log", lambda u: real_np_log(u) * (1 + 2.0**-40))
    else:
        real_log = math.log
        monkeypatch.setattr(math, "log", lambda u: real_log(u) * (1 + 2.0**-40))
    with pytest.warns(RuntimeWarning, match="exact path for every sample"):
        mech = SnappingMechanism(1.0, 1, 0, 100, rng=np.random.default_rng(9), rescale=False)
    assert mech._plan is None
    values = np.random.default_rng(10).uniform(-5, 105, 3000)
    expected = exact_releases(mech.parameters, values, SeededSource(np.random.default_rng(9)))
    assert same_bits(mech.release_many(values), expected)
    single = SnappingMechanism(1.0, 1, 0, 100, rng=np.random.default_rng(9), rescale=False)
    assert same_bits(np.array([single.release(float(v)) for v in values]), expected)


@pytest.mark.usefixtures("fresh_log_check")
def test_the_real_log_passes_the_guard() -> None:
    assert fast_plan.log_premise_holds()
    probe = fast_plan._log_probe()
    assert probe.size > 4000 and np.all((probe > 0) & (probe < 1))
    assert np.any(probe == 1.0 - 2.0**-53) and np.any(probe == 2.0**-64)


@pytest.mark.parametrize(
    ("lower", "upper", "values"),
    [
        (-7, 1000.5, np.array([2**62, -(2**62), 2**53 + 1, -(2**63), 2**63 - 1, 5, -8, 1001])),
        (-7, 1000.5, np.array([2**64 - 1, 2**60, 0, 1000, 1001], dtype=np.uint64)),
        (-20.5, -3.25, np.array([0, 200, 255, 3], dtype=np.uint8)),
    ],
)
def test_integers_beyond_2_53_inside_ordinary_bounds_never_fall_back(
    lower: float, upper: float, values: np.ndarray
) -> None:
    """With bounds within ±2**53, integers are clipped first: no data-dependent fallback."""
    mech = SnappingMechanism(0.5, 3, lower, upper, rng=np.random.default_rng(3), rescale=False)
    plan = mech._plan
    assert plan is not None
    values = np.tile(values, 400)
    out = np.empty(values.size)
    real = release_into(mech.parameters, plan, values, SeededSource(np.random.default_rng(3)), out)
    assert real == 0
    expected = exact_releases(mech.parameters, values, SeededSource(np.random.default_rng(3)))
    assert same_bits(out, expected)
