"""Measure np.log and math.log against MPFR on U* draws: the premise of docs/fast-path.md (F3).

    PYTHONPATH=src python benchmarks/log_accuracy.py [--n 1000000]

Inputs: n draws of U* (its own distribution: most in [1/2, 1), down to 2**-64), 10**5 doubles
just below 1 (u = 1 − j·2**-53) and 10**5 near 2**-64. Prints the largest error in ulps of the
result and the largest relative error; the fast path assumes relative error <= 2**-48 (16 ulps).
"""

from __future__ import annotations

import argparse
import math

import gmpy2
import numpy as np

from snapdp.fast_plan import uniform as _uniform


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=10**6)
    args = parser.parse_args()
    rng = np.random.default_rng(5)
    words = rng.integers(0, 2**64, 2 * args.n, dtype=np.uint64)
    words[1::2] |= np.uint64(1 << 11)
    groups = {
        "U* draws": _uniform(words),
        "near 1": 1.0 - np.arange(1, 100_001) * 2.0**-53,
        "near 2**-64": np.ldexp(1.0 + rng.integers(0, 2**52, 100_000) * 2.0**-52, -64),
    }
    ctx = gmpy2.context(precision=200)
    for impl, fn in [
        ("np.log", np.log),
        ("math.log", lambda a: np.array([math.log(x) for x in a])),
    ]:
        for name, us in groups.items():
            logs = fn(us)
            worst_ulp = worst_rel = 0.0
            for u, got in zip(us.tolist(), logs.tolist(), strict=True):
                true = ctx.log(gmpy2.mpfr(u, 200))
                err = abs(gmpy2.mpfr(got, 200) - true)
                worst_ulp = max(worst_ulp, float(err / math.ulp(got)))
                worst_rel = max(worst_rel, float(err / abs(true)))
            log2_rel = math.log2(worst_rel) if worst_rel else -math.inf
            print(
                f"{impl:9} {name:12} n={us.size:8d} max error {worst_ulp:.3f} ulp, "
                f"relative {worst_rel:.3e} (2**{log2_rel:.1f})"
            )


if __name__ == "__main__":
    main()
