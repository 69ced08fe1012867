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
from pathlib import Path

import numpy as np

from snapdp import SnappingMechanism
from snapdp.fast import release_into
from snapdp.randomness import SeededSource

# the parameter sets, values and exact oracle of the CI-sized test, at a larger size
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.unit.fast._cases import IDENTITY_SETS, identity_values
from tests.unit.fast._reference import exact_releases, same_bits


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=10**6)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    failures = 0
    for eps, sens, lower, upper, kind in IDENTITY_SETS:
        t0 = time.perf_counter()
        values = identity_values(kind, np.random.default_rng(args.seed + 1), args.n)
        mech = SnappingMechanism(eps, sens, lower, upper)
        assert mech._plan is not None
        fast_src = SeededSource(np.random.default_rng(args.seed))
        got = np.empty(args.n)
        fallbacks = release_into(mech.parameters, mech._plan, values, fast_src, got)
        exact_src = SeededSource(np.random.default_rng(args.seed))
        expected = exact_releases(mech.parameters, values, exact_src)
        same = same_bits(got, expected)
        same_pos = fast_src.words(4).tolist() == exact_src.words(4).tolist()
        ok = same and same_pos
        failures += not ok
        print(
            f"eps={eps:<10g} sens={sens:<10g} [{lower:g}, {upper:g}] {kind:27} n={args.n} "
            f"fallbacks={fallbacks} identical={ok} ({time.perf_counter() - t0:.0f} s)",
            flush=True,
        )
    print("ALL IDENTICAL" if not failures else f"{failures} SET(S) DIFFER")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
