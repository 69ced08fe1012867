"""Throughput and peak memory of snapdp releases against the unsafe floor and the peers.

Run from the repository root (one run, one machine, so the ratios are comparable):

    PYTHONPATH=src python benchmarks/bench_release.py            # or just `python ...` if installed
    PYTHONPATH=src python benchmarks/bench_release.py --quick    # smaller sizes, for a smoke run

Prints a table (values per second, time per value, ratio to numpy's unsafe ``Generator.laplace``,
peak memory) and writes JSON to ``benchmarks/results/bench_release-<UTC time>.json``. The peers
(the ``bench`` extra: diffprivlib, opendp, python-dp) are measured when importable and listed as
"not installed" otherwise. Timings are the best of a few repeats; peak memory is a separate
``tracemalloc`` run of one call (numpy reports its buffers to tracemalloc), the input excluded.
See docs/performance.md for the measured table.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from snapdp import SnappingMechanism
from snapdp.randomness import DRBGSource, OSRandomSource

EPS, SENS, LOWER, UPPER = 1.0, 1.0, 0.0, 100.0  # one parameter set for every row
BYTES_PER_SAMPLE = 16  # two 64-bit words per snapping sample (snapdp.randomness)


def _best_time(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm up (imports, caches, parameter set-up)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _peak_bytes(fn: Callable[[], object]) -> int:
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    fn()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return peak


def _row(
    name: str, n: int, batch: Callable[[], object], repeats: int, note: str = ""
) -> dict[str, Any]:
    """``batch`` releases ``n`` values (one call, or a loop of ``n`` scalar calls)."""
    seconds = _best_time(batch, repeats)
    peak = _peak_bytes(batch)
    return {
        "name": name,
        "n": n,
        "seconds": seconds,
        "values_per_second": n / seconds,
        "ns_per_value": seconds / n * 1e9,
        "peak_bytes": peak,
        "note": note,
    }


def _scalar_loop(fn: Callable[[float], object], n: int) -> Callable[[], None]:
    def run() -> None:
        for _ in range(n):
            fn(42.0)

    return run


def _snapdp_rows(sizes: list[int], scalar_n: int) -> list[dict[str, Any]]:
    mech = SnappingMechanism(EPS, SENS, LOWER, UPPER)  # the private default: the AES-CTR DRBG
    rows = [_row("snapdp release (scalar)", scalar_n, _scalar_loop(mech.release, scalar_n), 5)]
    os_mech = SnappingMechanism(EPS, SENS, LOWER, UPPER, rng=OSRandomSource())
    rows.append(
        _row(
            "snapdp release (scalar, OS source)",
            scalar_n,
            _scalar_loop(os_mech.release, scalar_n),
            3,
        )
    )
    cores = os.cpu_count() or 1
    for n in sizes:
        xs = np.random.default_rng(0).uniform(LOWER, UPPER, n)
        repeats = 7 if n <= 10**6 else 3
        for threads, label in ((1, "1 thread"), (None, f"{cores} threads")):
            rows.append(
                _row(
                    f"snapdp release_many {label} (n={n:.0e})",
                    n,
                    lambda xs=xs, t=threads: mech.release_many(xs, threads=t),
                    repeats,
                )
            )
        if n == 10**6:
            rows.append(
                _row(
                    f"snapdp release_many 1 thread, OS source (n={n:.0e})",
                    n,
                    lambda xs=xs: os_mech.release_many(xs, threads=1),
                    repeats,
                )
            )
    return rows


def _floor_rows(sizes: list[int], scalar_n: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng(1)
    rows = []
    for n in sizes:
        xs = np.random.default_rng(0).uniform(LOWER, UPPER, n)
        rows.append(
            _row(
                f"numpy Generator.laplace (n={n:.0e})",
                n,
                lambda xs=xs: rng.laplace(xs, SENS / EPS),
                7 if n <= 10**6 else 2,
                "UNSAFE floor (Mironov 2012)",
            )
        )
    big = max(n for n in sizes if n <= 10**6)
    rows.append(
        _row(
            f"os.urandom, 16 B/value bulk (n={big:.0e})",
            big,
            lambda: os.urandom(BYTES_PER_SAMPLE * big),
            7,
            "randomness floor",
        )
    )
    rows.append(
        _row(
            "os.urandom(16) per call",
            scalar_n,
            _scalar_loop(lambda _x: os.urandom(BYTES_PER_SAMPLE), scalar_n),
            3,
            "randomness floor, scalar",
        )
    )
    drbg = DRBGSource()
    rows.append(
        _row(
            f"DRBG (AES-256-CTR) words, 16 B/value (n={big:.0e})",
            big,
            lambda: drbg.words(2 * big),
            7,
            "randomness, the default source",
        )
    )
    return rows


def _peer_rows(scalar_n: int, vector_n: int) -> tuple[list[dict[str, Any]], list[str]]:
    rows: list[dict[str, Any]] = []
    missing: list[str] = []
    try:
        from diffprivlib.mechanisms import Snapping

        snap = Snapping(epsilon=EPS, sensitivity=SENS, lower=LOWER, upper=UPPER)
        n = max(200, scalar_n // 10)
        rows.append(_row("diffprivlib Snapping.randomise", n, _scalar_loop(snap.randomise, n), 5))
    except Exception as exc:  # ImportError, or a broken install (e.g. scikit-learn mismatch)
        missing.append(f"diffprivlib: {type(exc).__name__}: {exc}")
    try:
        import opendp.prelude as dp

        dp.enable_features("contrib")
        scalar = dp.m.make_laplace(
            dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), scale=SENS / EPS
        )
        vector = dp.m.make_laplace(
            dp.vector_domain(dp.atom_domain(T=float, nan=False)),
            dp.l1_distance(T=float),
            scale=SENS / EPS,
        )
        n = max(200, scalar_n // 10)
        rows.append(_row("OpenDP make_laplace float (scalar)", n, _scalar_loop(scalar, n), 3))
        xs = [42.0] * vector_n
        rows.append(
            _row(
                f"OpenDP make_laplace float (vector, n={vector_n:.0e})",
                vector_n,
                lambda: vector(xs),
                2,
            )
        )
    except Exception as exc:
        missing.append(f"opendp: {type(exc).__name__}: {exc}")
    try:
        from pydp.algorithms.numerical_mechanisms import LaplaceMechanism

        lap = LaplaceMechanism(epsilon=EPS, sensitivity=SENS)
        rows.append(
            _row(
                "PyDP LaplaceMechanism.add_noise",
                scalar_n,
                _scalar_loop(lap.add_noise, scalar_n),
                3,
            )
        )
    except Exception as exc:
        missing.append(f"python-dp: {type(exc).__name__}: {exc}")
    return rows, missing


def _paired_ratios(n: int, rounds: int) -> dict[str, float]:
    """Median over rounds of time(release_many)/time(numpy laplace), measured back to back.

    On a shared machine the load changes between the rows of the table; timing the three calls
    one after the other in each round and taking the median of the per-round ratios is robust to
    that (docs/performance.md).
    """
    mech = SnappingMechanism(EPS, SENS, LOWER, UPPER)
    rng = np.random.default_rng(1)
    xs = np.random.default_rng(0).uniform(LOWER, UPPER, n)
    calls: dict[str, Callable[[], object]] = {
        "laplace": lambda: rng.laplace(xs, SENS / EPS),
        "1 thread": lambda: mech.release_many(xs, threads=1),
        "default threads": lambda: mech.release_many(xs),
    }
    for call in calls.values():
        call()
    ratios: dict[str, list[float]] = {"1 thread": [], "default threads": []}
    for _ in range(rounds):
        t: dict[str, float] = {}
        for name, call in calls.items():
            t0 = time.perf_counter()
            call()
            t[name] = time.perf_counter() - t0
        for name in ratios:
            ratios[name].append(t[name] / t["laplace"])
    return {name: float(np.median(r)) for name, r in ratios.items()}


def _machine() -> dict[str, Any]:
    info: dict[str, Any] = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
    }
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--markdown", action="store_true", help="also print a Markdown table")
    args = parser.parse_args()
    sizes = [10**3, 10**4] if args.quick else [10**3, 10**6, 10**7]
    scalar_n = 2_000 if args.quick else 20_000
    vector_n = 10**3 if args.quick else 10**5

    rows = _floor_rows(sizes, scalar_n) + _snapdp_rows(sizes, scalar_n)
    peers, missing = _peer_rows(scalar_n, vector_n)
    rows += peers
    floor_n = max(n for n in sizes if n <= 10**6)
    floor = next(r for r in rows if r["name"] == f"numpy Generator.laplace (n={floor_n:.0e})")
    for r in rows:
        r["ratio_vs_numpy_laplace"] = r["ns_per_value"] / floor["ns_per_value"]

    print(f"{'':44} {'values/s':>12} {'ns/value':>11} {'× numpy':>9} {'peak MiB':>9}")
    for r in rows:
        print(
            f"{r['name']:44} {r['values_per_second']:12.4g} {r['ns_per_value']:11.1f} "
            f"{r['ratio_vs_numpy_laplace']:9.2f} {r['peak_bytes'] / 2**20:9.2f}"
        )
    for m in missing:
        print(f"not measured — {m}")
    by_name = {r["name"]: r for r in rows}
    scalar = by_name["snapdp release (scalar)"]
    cores = os.cpu_count() or 1
    targets: dict[str, float] = {}
    for n in sizes:
        if n < 10**6:
            continue
        floor_row = by_name[f"numpy Generator.laplace (n={n:.0e})"]
        for label, goal in (("1 thread", 1.5), (f"{cores} threads", 1.0)):
            row = by_name[f"snapdp release_many {label} (n={n:.0e})"]
            targets[f"release_many {label} / numpy laplace, n={n:.0e} (target <= {goal})"] = (
                row["ns_per_value"] / floor_row["ns_per_value"]
            )
    for n in sizes:
        if n >= 10**6:
            for name, ratio in _paired_ratios(n, 15 if n <= 10**6 else 5).items():
                goal = 1.5 if name == "1 thread" else 1.0
                targets[f"paired median: release_many {name} / laplace, n={n:.0e} (<= {goal})"] = (
                    ratio
                )
    if "diffprivlib Snapping.randomise" in by_name:
        targets["release / diffprivlib Snapping (target <= 0.2)"] = (
            scalar["ns_per_value"] / by_name["diffprivlib Snapping.randomise"]["ns_per_value"]
        )
    for k, v in targets.items():
        print(f"{k}: {v:.3g}")

    if args.markdown:
        print("\n| | values/s | ns/value | × numpy laplace | peak MiB |\n|---|---:|---:|---:|---:|")
        for r in rows:
            print(
                f"| {r['name']} | {r['values_per_second']:.3g} | {r['ns_per_value']:.4g} | "
                f"{r['ratio_vs_numpy_laplace']:.3g} | {r['peak_bytes'] / 2**20:.2f} |"
            )

    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"bench_release-{stamp}.json"
    path.write_text(
        json.dumps(
            {
                "date_utc": stamp,
                "machine": _machine(),
                "parameters": {"epsilon": EPS, "sensitivity": SENS, "lower": LOWER, "upper": UPPER},
                "rows": rows,
                "targets": targets,
                "not_measured": missing,
            },
            indent=2,
        )
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
