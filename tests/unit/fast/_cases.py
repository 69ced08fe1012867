"""The parameter sets and input values of the bit-identity runs (DESIGN §7, docs/fast-path.md).

Shared by tests/unit/fast/test_identity.py (CI size) and benchmarks/identity_large.py (10**6
values per set), so that the large documented run covers exactly the sets CI checks.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt


def identity_values(kind: str, rng: np.random.Generator, n: int) -> npt.NDArray[Any]:
    if kind == "uniform_0_100_with_outside":
        return rng.uniform(-10, 110, n)
    if kind == "mixed_inf_asym":
        base = rng.uniform(-8, 6, n)
        base[::7] = np.inf
        base[3::7] = -np.inf
        base[5::7] = 3.0  # exactly the upper bound
        base[6::7] = -5.0  # exactly the lower bound
        return base
    if kind == "million":
        return np.full(n, 1e6)
    if kind == "million_spread":
        return 1e6 + rng.uniform(-1, 1, n)
    if kind == "unit":
        return rng.uniform(-0.5, 1.5, n)
    if kind == "boundaries_eps1":
        # Λ = 2 in scaled units, c = 50: x̃ on (k + 1/2)·Λ boundaries, on grid points, near ties
        k = rng.integers(-30, 30, n)
        x = 50.0 + 2.0 * k + 1.0
        x[1::3] = 50.0 + 2.0 * k[1::3]
        x[2::3] = np.nextafter(x[2::3], np.inf)
        return x
    if kind == "ints":
        return rng.integers(-(10**6), 10**6, n)
    if kind == "big_ints":
        x = rng.integers(-(2**62), 2**62, n, dtype=np.int64)
        x[::2] = rng.integers(-(2**20), 2**20, n // 2 + n % 2)
        return x
    if kind == "tenth":
        return rng.uniform(-1, 8, n)
    raise ValueError(f"unknown value kind {kind!r}")


#: (epsilon, sensitivity, lower, upper, values kind)
IDENTITY_SETS = [
    (1.0, 1, 0, 100, "uniform_0_100_with_outside"),
    (1e-3, 1, -5, 3, "mixed_inf_asym"),
    (10.0, 1, 0, 1, "unit"),
    (2.0**20, 1, 0, 4e6, "million"),  # Λ = 2**-19 against |x̃| = 10**6: hard samples
    (2.0**24, 1, -4e6, 4e6, "million_spread"),
    (1.0, 1, 0, 100, "boundaries_eps1"),
    (0.5, 3, -7, 1000.5, "ints"),
    (1.0, 2.0**-10, -(2.0**61), 2.0**61, "big_ints"),
    (0.7, 0.1, -1, 7.3, "tenth"),  # Δ = 0.1: outputs through output_from_index
]
