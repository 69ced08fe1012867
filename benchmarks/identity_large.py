"""Large bit-identity run: release_many against the exact path on >= 10**6 values per set.

    PYTHONPATH=src python benchmarks/identity_large.py [--n 1000000] [--seed 2026]

For each parameter set, ``SnappingMechanism.release_many`` (the vectorised path) and the exact
path (``draw_uniform`` + ``snapped_output``, sample by sample, on a second generator with the same
seed) must return the same doubles, bit for bit, and leave the stream at the same position. Prints
per set: the number of values, how many the vectorised path sent to the exact fallback, and
whether all agreed; exits 1 on any difference. The CI-sized version is
tests/unit/fast/test_identity.py; the results of a run are recorded in docs/fast-path.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import numpy as np
import numpy.typing as npt

from snapdp import SnappingMechanism
from snapdp.fast import release_into
from snapdp.randomness import SeededSource, draw_uniform
from snapdp.snapping import normalize, snapped_output


def _values(kind: str, rng: np.random.Generator, n: int) -> npt.NDArray[Any]:
    if kind == "outside":
        return rng.uniform(-10, 110, n)
    if kind == "inf_asym":
        x = rng.uniform(-8, 6, n)
        x[::7], x[3::7], x[5::7], x[6::7] = np.inf, -np.inf, 3.0, -5.0
        return x
    if kind == "million":
        return np.full(n, 1e6)
    if kind == "million_spread":
        return 1e6 + rng.uniform(-1, 1, n)
    if kind == "unit":
        return rng.uniform(-0.5, 1.5, n)
    if kind == "boundaries":
        k = rng.integers(-30, 30, n)
        x = 50.0 + 2.0 * k + 1.0  # (k + 1/2)·Λ with Λ = 2, c = 50
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
    raise ValueError(kind)


SETS = [
    (1.0, 1, 0, 100, "outside"),
    (1e-3, 1, -5, 3, "inf_asym"),
    (10.0, 1, 0, 1, "unit"),
    (2.0**20, 1, 0, 4e6, "million"),
    (2.0**24, 1, -4e6, 4e6, "million_spread"),
    (1.0, 1, 0, 100, "boundaries"),
    (0.5, 3, -7, 1000.5, "ints"),
    (1.0, 2.0**-10, -(2.0**61), 2.0**61, "big_ints"),
    (0.7, 0.1, -1, 7.3, "tenth"),
]


def _exact(mech: SnappingMechanism, values: npt.NDArray[Any], src: SeededSource) -> Any:
    out = np.empty(values.size)
    as_int = values.dtype.kind in "iu"
    params = mech.parameters
    for i, x in enumerate(values.tolist()):
        draw = draw_uniform(src)
        out[i] = snapped_output(
            params, normalize(params, int(x) if as_int else x), draw.sign, draw.u
        )
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=10**6)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    failures = 0
    for eps, sens, lower, upper, kind in SETS:
        t0 = time.perf_counter()
        values = _values(kind, np.random.default_rng(args.seed + 1), args.n)
        mech = SnappingMechanism(eps, sens, lower, upper)
        assert mech._plan is not None
        fast_src = SeededSource(np.random.default_rng(args.seed))
        got = np.empty(args.n)
        fallbacks = release_into(mech.parameters, mech._plan, values, fast_src, got)
        exact_src = SeededSource(np.random.default_rng(args.seed))
        expected = _exact(mech, values, exact_src)
        same = np.array_equal(got.view(np.uint64), expected.view(np.uint64))
        same_pos = fast_src.words(4).tolist() == exact_src.words(4).tolist()
        ok = same and same_pos
        failures += not ok
        print(
            f"eps={eps:<10g} sens={sens:<10g} [{lower:g}, {upper:g}] {kind:15} n={args.n} "
            f"fallbacks={fallbacks} identical={ok} ({time.perf_counter() - t0:.0f} s)",
            flush=True,
        )
    print("ALL IDENTICAL" if not failures else f"{failures} SET(S) DIFFER")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
