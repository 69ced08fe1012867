"""Timing study (issue 4c): does the time of a release depend on the input or on |Y|?

dudect-style (Reparaz, Balasch, Verbauwhede 2017): measurements of two classes are interleaved
in random order, the slowest 10% of each class are cropped (interrupts, GC), and a Welch t-test
compares the two time distributions. |t| > 4.5 is dudect's threshold for "evidence of a leak".

Comparisons (ε = 1, bounds [0, 100], Λ = 2, c = 50; the default DRBG source):
  1. ``release_many`` on ``--size`` values (one chunk, constant work), the issue-14 classes:
     on the grid (all 50) vs off it (all 51, on a snapping boundary (k + 1/2)·Λ) vs near the
     bounds (alternating 0.5 and 99.5) vs far (all 50, as class 0).
  2. ``release_chunks`` on crafted random words (one chunk): small noise (U* in [1/2, 1),
     |Y| < 0.7·λ′) vs large noise (U* in [2**-40, 2**-39), |Y| ≈ 27·λ′).
  3. ``release(value)`` (scalar, not padded): value = 0 vs B = 100 vs 100/3.
  4. the pure function ``snapped_output`` by noise magnitude: U* in [1/2, 1) vs
     [2**-40, 2**-39) vs subnormal U*.

Usage: PYTHONPATH=src python benchmarks/timing_study.py [--n 20000] [--batches 3000].
Not a CI test: timings are
machine-dependent and never asserted.
"""

from __future__ import annotations

import argparse
import gc
import math
import time
from collections.abc import Callable

import numpy as np
from scipy.stats import ttest_ind

from snapdp import SnappingMechanism
from snapdp.fast import release_chunks
from snapdp.randomness import _PushbackMixin
from snapdp.snapping import normalize, snapped_output


class _Words(_PushbackMixin):
    """A bit source that serves one fixed array of words again and again (for crafted noise)."""

    def __init__(self, words: np.ndarray) -> None:
        super().__init__()
        self._words = words

    def _fresh(self, n: int) -> np.ndarray:
        return self._words[:n].copy()


def _crafted_words(n: int, exponent: int, rng: np.random.Generator) -> np.ndarray:
    """Sample blocks with random sign and mantissa and U* in [2**-e, 2**(1-e))."""
    words = rng.integers(0, 2**64, 2 * n, dtype=np.uint64)
    words[1::2] = np.uint64(1 << (64 - exponent))
    return words


def _measure(calls: list[Callable[[], object]], classes: np.ndarray) -> list[np.ndarray]:
    times = np.empty(len(calls), dtype=np.float64)
    for i, call in enumerate(calls):
        t0 = time.perf_counter_ns()
        call()
        times[i] = time.perf_counter_ns() - t0
    out = []
    for c in range(int(classes.max()) + 1):
        t = times[classes == c]
        out.append(t[t <= np.percentile(t, 90)])
    return out


def _report(name: str, labels: list[str], samples: list[np.ndarray]) -> None:
    base = samples[0]
    print(f"\n{name}")
    for label, s in zip(labels, samples, strict=True):
        print(f"  {label:<28} n={s.size:>6}  median {np.median(s) / 1e3:8.2f} µs")
    for label, s in zip(labels[1:], samples[1:], strict=True):
        t = ttest_ind(base, s, equal_var=False).statistic
        verdict = "LEAK?" if abs(t) > 4.5 else "no evidence"
        print(f"  Welch t ({labels[0]} vs {label}): {t:+.2f}  ({verdict})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--batches", type=int, default=3000)
    parser.add_argument("--size", type=int, default=10_000)
    args = parser.parse_args()
    rng = np.random.default_rng(2024)  # only orders the classes; releases use the OS CSPRNG
    mech = SnappingMechanism(1.0, 1.0, 0.0, 100.0)
    gc.disable()

    size = args.size
    near = np.where(np.arange(size) % 2 == 0, 0.5, 99.5)
    batches = [np.full(size, 50.0), np.full(size, 51.0), near]
    classes = rng.integers(0, 3, args.batches)
    calls = [lambda c=c: mech.release_many(batches[c]) for c in classes]
    _report(
        f"release_many({size} values), default source and threads",
        ["on grid / far (all 50)", "off grid (all 51)", "near the bounds (0.5, 99.5)"],
        _measure(calls, classes),
    )

    plan = mech._plan
    assert plan is not None
    values = np.full(size, 50.0)
    sources = [_Words(_crafted_words(size, e, rng)) for e in (1, 40)]
    out = np.empty(size)
    classes = rng.integers(0, 2, args.batches)
    calls = [
        lambda c=c: release_chunks(mech.parameters, plan, values, sources[c], out, 1)
        for c in classes
    ]
    _report(
        f"release_chunks({size} values), crafted words",
        ["small noise, U* in [1/2, 1)", "large noise, U* in [2**-40, 2**-39)"],
        _measure(calls, classes),
    )

    classes = rng.integers(0, 3, args.n)
    inputs = np.array([0.0, 100.0, 100 / 3])[classes]
    calls = [lambda v=float(v): mech.release(v) for v in inputs]
    _report(
        "release(value)",
        ["value = 0", "value = B = 100", "value = 100/3 (53-bit significand)"],
        _measure(calls, classes),
    )

    params = mech.parameters
    x_tilde = normalize(params, 50.0)
    classes = rng.integers(0, 3, args.n)

    def draw_u(c: int) -> float:
        m = int(rng.integers(0, 1 << 52))
        if c == 0:
            return math.ldexp(float((1 << 52) | m), -53)  # [1/2, 1)
        if c == 1:
            return math.ldexp(float((1 << 52) | m), -92)  # [2**-40, 2**-39)
        return math.ldexp(float(max(m, 1)), -1074)  # subnormal

    draws = [(1 if rng.integers(0, 2) else -1, draw_u(int(c))) for c in classes]
    calls = [lambda s=s, u=u: snapped_output(params, x_tilde, s, u) for s, u in draws]
    _report(
        "snapped_output by noise magnitude",
        ["U* in [1/2, 1)", "U* in [2**-40, 2**-39)", "U* subnormal"],
        _measure(calls, classes),
    )
    gc.enable()


if __name__ == "__main__":
    main()
