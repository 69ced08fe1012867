"""Keys nobody declared: which ages a private GROUP BY age shows on PUMS (docs/data.md, "Keys
nobody declared").

    SNAPDP_SHARED_DATA=/work/shared/data PYTHONPATH=src python benchmarks/partition_selection.py \
        [--runs 60] [--epsilon 1] [--delta 1e-6] [--no-opendp]

One person is one unit (L0 = L∞ = 1). Each run (seeded, NOT private: a benchmark) releases the
COUNT of every age present in PUMS plus one extra age held by a single added person (PUMS itself
has no one-person age), and shows an age when its count passes the public threshold:

* snapdp: the count's snapping mechanism at ε (the mechanism a release runs for the count part),
  threshold from :func:`snapdp.data.statistics.selection.key_selection` at δ;
* OpenDP (``make_laplace_threshold``, the measurement under its Polars thresholded group-by) at
  scale 1/ε, with the smallest integer threshold its own privacy map accepts at δ (what its
  front end does), and the threshold one higher that the map should have asked for (its map
  leaves out the mass at the threshold: opendp/opendp#2922);
* Google's optimal ("magic") partition selection, computed: the keep probability π(n) of a key
  held by n units, at (ε, δ) (selection alone: the counts then need ε of their own) and at
  (ε/2, δ) (selection and counts sharing ε).

Printed: per band of true counts, the share of ages shown (observed over the runs; expected,
from the exact/closed-form keep probabilities), the one-person age's shows, and the count at
which a key is shown half the time.
"""

from __future__ import annotations

import argparse
import collections
import csv
import math
import os
import platform
import subprocess
import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import numpy as np

from snapdp import SnappingMechanism
from snapdp.data.model.schema import DEFAULT_MAX_ROWS
from snapdp.data.statistics.selection import KeySelection, key_selection
from snapdp.data.statistics.types import Noise, Part

DATA = Path(os.environ.get("SNAPDP_SHARED_DATA", "/work/shared/data")) / "PUMS.csv"
BANDS = ((40, None), (30, 39), (20, 29), (10, 19), (1, 9))
SEED = 20261127


# -- the data -----------------------------------------------------------------------------------


def age_counts() -> dict[int, int]:
    """Rows per age in PUMS (one row per person)."""
    with DATA.open(newline="") as f:
        return dict(collections.Counter(int(r["age"]) for r in csv.DictReader(f)))


def in_band(count: int, band: tuple[int, int | None]) -> bool:
    lo, hi = band
    return count >= lo and (hi is None or count <= hi)


def band_name(band: tuple[int, int | None]) -> str:
    lo, hi = band
    return f">= {lo}" if hi is None else f"{lo}-{hi}"


# -- the three selections -----------------------------------------------------------------------


def snapdp_selection(
    epsilon: Fraction, delta: Fraction, groups: int = 1
) -> tuple[KeySelection, Noise]:
    """The selection on a COUNT whose ε is split over the L0 keys one unit reaches (ε/L0 each,
    sensitivity 1 per key: the count of a release without the L1 calibration)."""
    part = Part("count", "rows", Fraction(1), 1, groups, 0, DEFAULT_MAX_ROWS)
    noise = Noise(part, epsilon / groups, 1, groups, False)
    return key_selection(noise, delta=delta, max_groups=groups, rows_per_key=1), noise


def snapdp_runs(counts: np.ndarray, epsilon: Fraction, delta: Fraction, runs: int) -> np.ndarray:
    """(runs, keys) booleans: shown, through the count's snapping mechanism (vectorised)."""
    sel, noise = snapdp_selection(epsilon, delta)
    mech = SnappingMechanism(
        noise.epsilon, noise.sensitivity, noise.part.lower, noise.part.upper,
        rng=np.random.default_rng(SEED),
    )  # fmt: skip
    released = mech.release_many(np.tile(counts, runs)).reshape(runs, len(counts))
    return np.asarray(released >= sel.threshold)


def geometric_tail(m: int, scale: float) -> float:
    """P(Z >= m) for OpenDP's discrete Laplace Z (P(Z = z) ∝ exp(−|z|/scale))."""
    t = math.exp(-1 / scale)
    if m >= 1:
        return t**m / (1 + t)
    return 1 - t ** (1 - m) / (1 + t)


def opendp_threshold(epsilon: float, delta: float) -> int:
    """The smallest integer threshold whose OpenDP privacy map gives (<= ε, <= δ) at d_in
    (1, 1, 1), as its group-by picks it."""
    meas = _opendp_measurement(1 / epsilon)
    for thr in range(1, 10_000):
        eps, d = meas(thr).map((1, 1, 1))
        if eps <= epsilon and d <= delta:
            return thr
    raise RuntimeError("no OpenDP threshold found")


def _opendp_measurement(scale: float) -> Callable[[int], object]:
    import opendp.prelude as dp

    dp.enable_features("contrib")
    dom = dp.map_domain(dp.atom_domain(T=dp.i32), dp.atom_domain(T=dp.i32))
    met = dp.l01inf_distance(dp.absolute_distance(T=dp.i32))
    return lambda thr: dp.m.make_laplace_threshold(dom, met, scale=scale, threshold=thr)


def opendp_runs(counts: np.ndarray, epsilon: float, threshold: int, runs: int) -> np.ndarray:
    """(runs, keys) booleans: shown by OpenDP's thresholded Laplace at scale 1/ε."""
    meas = _opendp_measurement(1 / epsilon)(threshold)
    data = {i: int(c) for i, c in enumerate(counts)}
    out = np.zeros((runs, len(counts)), dtype=bool)
    for r in range(runs):
        kept = meas(data)  # type: ignore[operator]
        out[r, list(kept)] = True
    return out


def magic_keep(epsilon: float | Fraction, delta: float, groups: int, top: int) -> list[float]:
    """π(0..top): the optimal keep probability of a key held by n units (Desfontaines, Voss,
    Gipson, Mandayam 2022). With L0 keys per unit each key gets ε/L0 and 1 − (1 − δ)^(1/L0).
    π(0) = 0 and π(n) is the largest value both DP inequalities allow from π(n − 1):
    π(n) <= e^ε·π(n − 1) + δ and 1 − π(n − 1) <= e^ε·(1 − π(n)) + δ."""
    eps = float(epsilon) / groups
    d = 1 - (1 - delta) ** (1 / groups)
    pi = [0.0]
    for _ in range(top):
        prev = pi[-1]
        pi.append(min(1.0, math.exp(eps) * prev + d, 1 - math.exp(-eps) * (1 - prev - d)))
    return pi


# -- the report ---------------------------------------------------------------------------------


def half_point(keep: Callable[[int], float]) -> int:
    """The smallest count shown with probability >= 1/2."""
    return next(n for n in range(0, 10_000) if keep(n) >= 0.5)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=60)
    ap.add_argument("--epsilon", type=Fraction, default=Fraction(1))
    ap.add_argument("--delta", type=Fraction, default=Fraction(1, 10**6))
    ap.add_argument("--no-opendp", action="store_true")
    args = ap.parse_args()
    eps, delta, runs = args.epsilon, args.delta, args.runs
    by_age = age_counts()
    counts = np.array([*by_age.values(), 1], dtype=np.int64)  # the last key: one added person
    t0 = time.time()
    sel, _ = snapdp_selection(eps, delta)
    t_sel = time.time() - t0
    keep: dict[str, Callable[[int], float]] = {"snapdp": sel.recall}
    shown: dict[str, np.ndarray] = {"snapdp": snapdp_runs(counts, eps, delta, runs)}
    notes = [f"snapdp: count >= {int(sel.threshold + 0.5)} (grid value >= {sel.threshold}), "
             f"δ <= {float(sel.delta):.3g} (computed in {t_sel:.1f} s)"]  # fmt: skip
    if not args.no_opendp:
        thr = opendp_threshold(float(eps), float(delta))
        for name, t in (("OpenDP", thr), ("OpenDP, threshold + 1", thr + 1)):
            keep[name] = lambda n, t=t: geometric_tail(t - n, 1 / float(eps))
            shown[name] = opendp_runs(counts, float(eps), t, runs)
        true_delta = geometric_tail(thr - 1, 1 / float(eps))
        notes.append(f"OpenDP (its own unseeded draws): threshold {thr} (its map: δ <= "
                     f"{float(delta):.3g}; a one-person key actually shows with probability "
                     f"{true_delta:.3g})")  # fmt: skip
    for name, e in (("magic (ε)", float(eps)), ("magic (ε/2)", float(eps) / 2)):
        pi = magic_keep(e, float(delta), 1, 200)
        keep[name] = lambda n, pi=pi: pi[min(n, len(pi) - 1)]
    _print(by_age, counts, keep, shown, runs, notes)
    _print_thresholds()


def _print_thresholds() -> None:
    """The count at which a key is shown half the time, over (ε, δ, L0): snapdp's thresholded
    count, the magic selection at (ε, δ) and at (ε/2, δ)."""
    print()
    print("| ε | δ | L0 | snapdp T (grid value) | snapdp δ | shown half the time at: snapdp |"
          " magic (ε) | magic (ε/2) |")  # fmt: skip
    print("|" + " --- |" * 8)
    for eps in (Fraction(1, 2), Fraction(1), Fraction(2)):
        for delta in (Fraction(1, 10**6), Fraction(1, 10**9)):
            for groups in (1, 4):
                sel, _ = snapdp_selection(eps, delta, groups)
                magic = [magic_keep(e, float(delta), groups, 2000) for e in (eps, eps / 2)]
                halves = [half_point(sel.recall)]
                halves += [half_point(lambda n, pi=pi: pi[min(n, len(pi) - 1)]) for pi in magic]
                row = [str(eps), f"{float(delta):.0e}", str(groups), f"{sel.threshold:g}"]
                row += [f"{float(sel.delta):.2g}", *map(str, halves)]
                print("| " + " | ".join(row) + " |")


def _print(
    by_age: dict[int, int],
    counts: np.ndarray,
    keep: dict[str, Callable[[int], float]],
    shown: dict[str, np.ndarray],
    runs: int,
    notes: list[str],
) -> None:
    load = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}, "
          f"{os.cpu_count()} cores, {load}")  # fmt: skip
    print(f"# PUMS: {len(by_age)} ages, {int(counts[:-1].sum())} people; {runs} runs")
    for n in notes:
        print(f"# {n}")
    real = counts[:-1]
    head = "| selection | " + " | ".join(
        f"ages {band_name(b)} ({int(sum(in_band(int(c), b) for c in real))})" for b in BANDS
    )
    print(head + " | one-person age shown | shown half the time at |")
    print("|" + " --- |" * (len(BANDS) + 3))
    for name, k in keep.items():
        cells = []
        for b in BANDS:
            idx = [i for i, c in enumerate(real) if in_band(int(c), b)]
            if not idx:
                cells.append("–")
                continue
            expected = np.mean([k(int(real[i])) for i in idx])
            if name in shown:
                observed = shown[name][:, idx].mean()
                cells.append(f"{observed:.1%} ({expected:.1%})")
            else:
                cells.append(f"({expected:.1%})")
        one = f"{int(shown[name][:, -1].sum())} of {runs}" if name in shown else "–"
        one += f" (p = {k(1):.2g})"
        print(f"| {name} | " + " | ".join(cells) + f" | {one} | {half_point(k)} |")


if __name__ == "__main__":
    main()
