"""The planning figure of a mean, variance and std against the union-bound figure it replaced
(issue 33; docs/utility.md, "Means" and "Variance and std"), over the whole grid that
tests/unit/data/plan/test_plan_combination.py swept until 2026-11-27: every ε of (1/10, 1/2, 2,
8) with each upper bound (100, 500,000), confidences 0.90/0.95/0.99 and sizes 3 to 50,000.

The test now keeps three (ε, bound) pairs, which cover the same cases (the cases depend on ε, not
on the bound); this script prints the full sweep, one line per (statistic, ε, bound, confidence):
new ÷ old per size ("cap" where the old figure is the cap), and exits 1 if the new figure is
ever wider than the old one, or not below 0.9× it where the old one is below the cap. Each new
(statistic, ε, bound) certifies its mechanisms (seconds of CPU each), so a cold run takes minutes.

    PYTHONPATH=src python benchmarks/planning_figure_grid.py [--stats mean,variance,std]
"""

from __future__ import annotations

import argparse
import sys
import time
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.unit.data.plan.test_plan_combination import SIZES, _old_figure, _statement

EPSILONS = (Fraction(1, 10), Fraction(1, 2), Fraction(2), Fraction(8))
UPPERS = (100, 500_000)
CONFIDENCES = (0.9, 0.95, 0.99)


def sweep(stat: str) -> int:
    """Print the sweep of one statistic; the number of cases that break the test's rule."""
    broken = 0
    for eps in EPSILONS:
        for upper in UPPERS:
            for confidence in CONFIDENCES:
                compiled, noises, statement = _statement(stat, upper, eps, confidence)
                cells = []
                for n in SIZES:
                    old = _old_figure(compiled, noises, statement, n)
                    new = statement.at(n)
                    below = old < statement.cap
                    broken += new > old or (below and new >= 0.9 * old)
                    cells.append(f"{new / old:.3f}" if below else "cap")
                print(
                    f"{stat:8s} ε={eps!s:4s} upper={upper:<7d} conf={confidence}: "
                    + " ".join(cells)
                )
    return broken


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stats", default="mean,variance,std")
    args = parser.parse_args()
    start = time.process_time()
    print(f"sizes: {', '.join(map(str, SIZES))}")
    broken = sum(sweep(stat) for stat in args.stats.split(","))
    print(f"cases breaking the rule: {broken}; CPU {time.process_time() - start:.1f} s")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
