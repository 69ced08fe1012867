"""L1 calibration (snapdp.data.statistics.calibration): certification time, and the gain at k = 5.

1. Time to certify (``shift_certificate``, first call, uncached) for the parameter sets the data
   layer uses: counts with Δ₁ = k and bounds [0, 2**40]; sums in quanta with Δ₁ = 10**6 and
   10**12 and bounds ±2**40·10**6 quanta-ish; then ``calibrate_l1`` (cached: ~µs).
2. The gain: a count histogram of G = 10 groups, rows per unit k = 5 (a unit touches m =
   min(k, G) = 5 groups). Today: each group gets ε/m at Δ = k. Calibrated: each group gets
   ε − m·slack at Δ₁ = k. Stated 95% accuracy per cell (snapdp.accuracy, data-free) and the
   mean absolute error over seeded releases (NOT private: a seeded generator).

    PYTHONPATH=src python3 benchmarks/bench_calibration.py
"""

from __future__ import annotations

import time
from fractions import Fraction

import numpy as np

from snapdp import SnappingMechanism
from snapdp.accuracy import accuracy_bound
from snapdp.data.statistics.calibration import _shift_certificate, calibrate_l1, shift_certificate

N = 1 << 40
CASES = [
    ("count, k = 1", 1, 0, N),
    ("count, k = 5", 5, 0, N),
    ("count, k = 16", 16, 0, N),
    ("count, k = 20", 20, 0, N),
    ("count, k = 100", 100, 0, N),
    ("sum, Δ₁ = 10^6 quanta", 10**6, -N * 10**6, N * 10**6),
    ("sum, Δ₁ = 10^12 quanta", 10**12, -N * 10**12, N * 10**12),
]


def timing(epsilon: Fraction) -> None:
    print(f"Certification time at ε = {epsilon} (first call; later calls are cached)")
    print()
    print(
        "| parameters | shifts | pairs | exhaustive | slack (measured) | certified "
        "| CPU time (s) | wall time (s) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for label, delta, lo, hi in CASES:
        _shift_certificate.cache_clear()
        t0, c0 = time.perf_counter(), time.process_time()
        cert = shift_certificate(epsilon, delta, lo, hi)
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        print(
            f"| {label} | {len(cert.shifts)} | {cert.pairs} | {cert.exhaustive} "
            f"| {float(cert.slack):.3g} | {cert.certified} | {dc:.2f} | {dt:.2f} |"
        )
    calibrate_l1(epsilon, 5, 0, N, 5)  # the first call certifies (ε − m·slack): not timed
    t0 = time.perf_counter()
    for _ in range(1000):
        calibrate_l1(epsilon, 5, 0, N, 5)
    print()
    print(f"calibrate_l1, cached: {(time.perf_counter() - t0) / 1000 * 1e6:.1f} µs per call")


def gain(epsilon: Fraction, k: int = 5, groups: int = 10, runs: int = 2000) -> None:
    m = min(k, groups)
    cal = calibrate_l1(epsilon, k, 0, N, m)
    today = (epsilon / m, k)
    ours = (cal.epsilon, k)
    rng = np.random.default_rng(20261123)
    truth = rng.integers(50, 500, groups).astype(float)
    print()
    print(
        f"Histogram gain: G = {groups} groups, k = {k} rows per unit (m = {m}), ε = {epsilon}, "
        f"count bounds [0, 2**40]; {runs} seeded releases"
    )
    print()
    print("| rule | ε per cell | Δ per cell | stated 95% accuracy | mean abs error per cell |")
    print("| --- | --- | --- | --- | --- |")
    for label, (eps, delta) in (("today: ε/m per cell", today), ("L1-calibrated", ours)):
        mech = SnappingMechanism(eps, delta, 0, N, rng=rng)  # rescaled, as a release does
        stated = accuracy_bound(mech.parameters, 0.05)
        errors = [np.abs(mech.release_many(truth) - truth).mean() for _ in range(runs)]
        print(f"| {label} | {float(eps):.6g} | {delta} | ±{stated:.4g} | {np.mean(errors):.3f} |")
    print()
    print(f"calibration: certified = {cal.certified}, slack per cell = {float(cal.slack):.3g}")


if __name__ == "__main__":
    timing(Fraction(1))
    gain(Fraction(1))
    gain(Fraction(1, 10))
