"""Peak memory of ``release_many`` on 10^8 values: at most the output plus 64 MiB (issue 14).

    PYTHONPATH=src python benchmarks/memory_release.py [--n 100000000] [--threads N]

The input is allocated before measuring (it belongs to the caller). ``tracemalloc`` (numpy reports
its buffers to it, from every thread) gives the peak traced allocation during the call; the
output array is part of it, so "extra" = peak − output. ``ru_maxrss`` growth is printed as a
cross-check. See docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import resource
import time
import tracemalloc

import numpy as np

from snapdp import SnappingMechanism


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=10**8)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    mech = SnappingMechanism(1.0, 1.0, 0.0, 100.0)
    xs = np.random.default_rng(0).uniform(0.0, 100.0, args.n)
    mech.release_many(xs[:1000])  # warm up (imports, the log check)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    t0 = time.perf_counter()
    out = mech.release_many(xs, threads=args.threads)
    seconds = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    mib = 2.0**20
    threads = args.threads or os.cpu_count()
    print(f"n = {args.n:.0e}, threads = {threads}, {seconds:.2f} s")
    print(f"output {out.nbytes / mib:.1f} MiB, peak traced {peak / mib:.1f} MiB, ", end="")
    print(f"extra {(peak - out.nbytes) / mib:.1f} MiB (target <= 64)")
    print(f"max RSS grew by {(rss1 - rss0) / 1024:.1f} MiB")


if __name__ == "__main__":
    main()
