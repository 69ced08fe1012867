"""Planner speed (docs/performance.md, "Planning"): plan docs/examples/plan.toml cold, again
unchanged (warm caches), and after changing one query's target (only that query re-planned);
first as a draft (L1 certificates presumed, as an interactive page would), then certified.

Run: ``PYTHONPATH=src python3 benchmarks/bench_plan.py``. Prints seconds per step.
"""

from __future__ import annotations

import dataclasses
import time
from fractions import Fraction
from pathlib import Path

from snapdp.data import Plan


def _timed(label: str, plan: Plan, draft: bool = False) -> None:
    start = time.perf_counter()
    plan.preview(presume_certified=draft)
    print(f"{label:<56} {time.perf_counter() - start:8.3f} s")


def main() -> None:
    path = Path(__file__).resolve().parents[1] / "docs" / "examples" / "plan.toml"
    plan = Plan.load(path)
    for draft in (True, False):
        kind = "draft" if draft else "certified"
        _timed(f"{kind}, cold: the example plan", plan, draft)
        _timed(f"{kind}, warm: the same plan again", plan, draft)
        for i, pq in enumerate(plan.queries):
            if pq.accuracy is None:
                continue
            for factor in (Fraction(11, 10), Fraction(12, 10)):
                changed = list(plan.queries)
                changed[i] = dataclasses.replace(pq, accuracy=pq.accuracy * factor)
                _timed(
                    f"{kind}, one change: {pq.query.label} target ×{float(factor):g}",
                    dataclasses.replace(plan, queries=tuple(changed)),
                    draft,
                )


if __name__ == "__main__":
    main()
