"""The numbers of docs/utility.md, "No power-of-two penalty": the stated ± before and after.

    PYTHONPATH=src python benchmarks/utility_cliff.py [--markdown] [--sweep N]

For Δ = 1 and bounds [0, 10⁶] (wide: the clamp does not help), at each ε it prints the grid
width and the stated 95% ± (``accuracy_bound``, the ± that holds for every true value) of
``SnappingMechanism(ε, 1, 0, 10⁶, rescale=False)`` (before: DESIGN's power-of-two grid on (ε, Δ))
and of the default rescaled mechanism (after), each as a ratio to the ideal Laplace ±
λ·ln(1/α), λ = 1/ε; then the worst ratio of each over a log-spaced sweep of N values of ε in
[0.01, 100] (the sweep presumes the rescaling's certificates, as the planner's search does; the
listed ε use the certified mechanisms). Exact, deterministic, no data; about a minute on 2 cores.
"""

from __future__ import annotations

import argparse
import math
from fractions import Fraction

from snapdp import SnappingMechanism
from snapdp.accuracy import accuracy_bound
from snapdp.rescaling import mechanism_parameters

EPSILONS = ("0.1", "0.25", "0.3", "0.5", "0.7", "1", "1.0001", "1.5", "2", "4", "10")
LOWER, UPPER = 0, 10**6
ALPHA = 0.05


def _row(eps: str) -> dict[str, float | str]:
    e = Fraction(eps)
    ideal = float(1 / e) * math.log(1 / ALPHA)
    before = SnappingMechanism(eps, 1, LOWER, UPPER, rescale=False)
    after = SnappingMechanism(eps, 1, LOWER, UPPER)
    a0, a1 = before.accuracy(ALPHA), after.accuracy(ALPHA)
    return {
        "epsilon": eps,
        "ideal": ideal,
        "grid_before": before.grid_spacing,
        "pm_before": a0,
        "ratio_before": a0 / ideal,
        "grid_after": after.grid_spacing,
        "pm_after": a1,
        "ratio_after": a1 / ideal,
        "r": str(after.rescaling.ratio),
    }


def _sweep(n: int) -> tuple[tuple[float, float], tuple[float, float]]:
    worst_before, worst_after = (0.0, 0.0), (0.0, 0.0)
    for i in range(n + 1):
        e = Fraction(10 ** (-2 + 4 * i / n)).limit_denominator(10**6)
        ideal = float(1 / e) * math.log(1 / ALPHA)
        for rescale in (False, True):
            params = mechanism_parameters(
                e, 1, LOWER, UPPER, rescale=rescale, presume_certified=True
            )
            ratio = accuracy_bound(params, ALPHA) / ideal
            if rescale:
                worst_after = max(worst_after, (ratio, float(e)))
            else:
                worst_before = max(worst_before, (ratio, float(e)))
    return worst_before, worst_after


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="a Markdown table")
    parser.add_argument("--sweep", type=int, default=2000, help="ε values in the sweep")
    args = parser.parse_args()
    rows = [_row(e) for e in EPSILONS]
    if args.markdown:
        print(
            "| ε | Laplace ± | grid before | ± before (ratio) | r | grid after | ± after (ratio) |"
        )
        print("|---|---|---|---|---|---|---|")
        for r in rows:
            print(
                f"| {r['epsilon']} | {r['ideal']:.4g} | {r['grid_before']:.4g} | "
                f"{r['pm_before']:.4g} ({r['ratio_before']:.3f}) | {r['r']} | "
                f"{r['grid_after']:.4g} | {r['pm_after']:.4g} ({r['ratio_after']:.3f}) |"
            )
    else:
        for r in rows:
            print(r)
    before, after = _sweep(args.sweep)
    print(
        f"\nworst ratio over {args.sweep + 1} ε in [0.01, 100]: before {before[0]:.4f} "
        f"(at ε = {before[1]:.4g}), after {after[0]:.4f} (at ε = {after[1]:.4g})"
    )


if __name__ == "__main__":
    main()
