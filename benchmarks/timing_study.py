"""Timing study (issue 4c): does the time of a release depend on the input or on |Y|?

dudect-style (Reparaz, Balasch, Verbauwhede 2017): measurements of two classes are interleaved
in random order, the slowest 10% of each class are cropped (interrupts, GC), and a Welch t-test
compares the two time distributions. |t| > 4.5 is dudect's threshold for "evidence of a leak".

Comparisons:
  1. ``release(value)``: value = 0 vs value = B (the upper bound) vs 100/3 (a full significand),
     OS CSPRNG, ε = 1, bounds [0, 100].
  2. ``release_many`` on 1000 values: all 0 vs all B.
  3. the pure function ``snapped_output`` by noise magnitude: U* in [1/2, 1) (|Y| < 0.7·λ′)
     vs U* in [2**-40, 2**-39) (|Y| ≈ 27·λ′) vs subnormal U* (|Y| > 708·λ′).

Usage: PYTHONPATH=src python benchmarks/timing_study.py [--n 20000]. Not a CI test: timings are
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
from snapdp.snapping import normalize, snapped_output


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
    parser.add_argument("--batches", type=int, default=300)
    args = parser.parse_args()
    rng = np.random.default_rng(2024)  # only orders the classes; releases use the OS CSPRNG
    mech = SnappingMechanism(1.0, 1.0, 0.0, 100.0)
    gc.disable()

    classes = rng.integers(0, 3, args.n)
    inputs = np.array([0.0, 100.0, 100 / 3])[classes]
    calls = [lambda v=float(v): mech.release(v) for v in inputs]
    _report(
        "release(value)",
        ["value = 0", "value = B = 100", "value = 100/3 (53-bit significand)"],
        _measure(calls, classes),
    )

    classes = rng.integers(0, 2, args.batches)
    zeros, bees = np.zeros(1000), np.full(1000, 100.0)
    calls = [lambda c=c: mech.release_many(zeros if c == 0 else bees) for c in classes]
    _report("release_many(1000 values)", ["all 0", "all B"], _measure(calls, classes))

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
