"""Random search for a violation of the library's (ε, δ) claim (docs/verification.md §2).

Draws random parameters (ε log-uniform in [2**-40, 2000], Δ log-uniform in [e**-5, e**5],
bounds anywhere in ±10**4 with width log-uniform in [e**-3, e**12]) and a pair of inputs exactly
within Δ (an edge, a random point; a step of ±Δ, a random fraction of Δ, or 2**-60·Δ), and
certifies each until the time budget runs out. Prints every failure and a count.

Usage: PYTHONPATH=src python benchmarks/verify_random_search.py [--seconds 150] [--seed 7]
"""

from __future__ import annotations

import argparse
import math
import random
import time
from fractions import Fraction

from snapdp.verify import GridPoint, certify


def _neighbour(value: float, step: float, sensitivity: float) -> float:
    neighbour = value + step * sensitivity
    while abs(Fraction(neighbour) - Fraction(value)) > Fraction(sensitivity):
        neighbour = math.nextafter(neighbour, value)  # the rounding may overshoot Δ
    return neighbour


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=150.0)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    start, checked, failures = time.perf_counter(), 0, 0
    while time.perf_counter() - start < args.seconds:
        eps = math.exp(rng.uniform(math.log(2.0**-40), math.log(2000.0)))
        sens = math.exp(rng.uniform(-5, 5))
        lower = rng.uniform(-1e4, 1e4)
        width = math.exp(rng.uniform(-3, 12))
        value = lower + rng.choice([0.0, 1.0, rng.random()]) * width
        step = rng.choice([1.0, -1.0, rng.uniform(-1, 1), 2.0**-60])
        point = GridPoint(eps, lower, lower + width, value, _neighbour(value, step, sens), sens)
        cert = certify(point)
        checked += 1
        if not cert.passed:
            failures += 1
            print("FAIL", point, cert.as_dict(), flush=True)
    print(f"checked {checked} random certificates, {failures} failures")


if __name__ == "__main__":
    main()
