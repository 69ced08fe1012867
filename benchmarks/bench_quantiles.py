"""Tree-histogram quantiles (snapdp.data.statistics.math.quantile_tree) against OpenDP's
private quantile, on PUMS.

For age [0, 100] and income [0, 500000] of /work/shared/data/PUMS.csv (1000 rows, one row per
person, so k = 1), the quartiles (0.25, 0.5, 0.75) at a total ε = 1:

* snapdp: one tree histogram at ε = 1 (ε/depth per level, L1-calibrated, count bounds
  ``node_bounds`` for 2**40 rows), least-squares consistency, isotonic CDF, interpolated
  quantiles;
* snapdp ``method = "exponential"``: the exact exponential mechanism
  (:mod:`snapdp.exponential`) once per quantile at ε/#quantiles over the grid of
  :func:`~snapdp.data.statistics.math.exponential_grid.quantile_grid` (the integer ages;
  income cells of
  1000), drawn directly from the module (the release path gives the same draws);
* OpenDP 0.16: ``make_private_quantile`` (exponential mechanism over candidates, pure DP,
  symmetric distance) once per quantile at ε/3, the candidates being the same leaf edges.

Errors over seeded runs (NOT private: a seeded generator): mean |q̂ − q| in value units and mean
|rank(q̂) − p·N| in rows, with q the sample quantile (inverted CDF). Writes a Markdown table.

    PYTHONPATH=src python3 benchmarks/bench_quantiles.py [--runs 100]
"""

from __future__ import annotations

import argparse
from fractions import Fraction

import numpy as np
import opendp.prelude as dp
import pandas as pd

from snapdp import SnappingMechanism, exponential
from snapdp.data.statistics.math import exponential_grid as eq
from snapdp.data.statistics.math import quantile_tail as q_tail
from snapdp.data.statistics.math import quantile_tree as q
from snapdp.randomness import SeededSource

DATA = "/work/shared/data/PUMS.csv"
QUARTILES = (0.25, 0.5, 0.75)
DECILES = tuple(i / 10 for i in range(1, 10))
EPSILON = Fraction(1)
COLUMNS = {"age": (0, 100, 1), "income": (0, 500_000, 1000)}


def _snapdp_quantiles(
    values: np.ndarray, spec: q.TreeSpec, rng: np.random.Generator, probs: tuple[float, ...]
) -> tuple[float, ...]:
    edges = np.array([float(e) for e in q.leaf_edges(spec)])
    clipped = np.clip(values, edges[0], edges[-1])
    idx = np.minimum(np.searchsorted(edges, clipped, side="right") - 1, spec.leaves - 1)
    leaves = np.bincount(idx, minlength=spec.leaves)
    lo, hi = q.node_bounds(spec, EPSILON, 1)
    cals = q.level_calibrations(spec, EPSILON, 1)
    noisy = []
    for cal, level in zip(cals, q.level_counts(leaves.tolist(), spec), strict=True):
        mech = SnappingMechanism(cal.epsilon, 1, lo, hi, rng=rng)
        noisy.append(mech.release_many(np.array(level, dtype=float)))
    return q.quantiles_from_leaves(q.consistent_leaves(noisy, spec), spec, probs)


def _exponential_quantiles(
    values: np.ndarray, grid: eq.QuantileGrid, source: SeededSource, probs: tuple[float, ...]
) -> tuple[float, ...]:
    edges = np.array([float(e) for e in grid.edges])
    idx = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, grid.cells - 1)
    counts = np.bincount(idx, minlength=grid.cells).tolist()
    out = []
    for p in probs:
        pf = Fraction(p).limit_denominator(100)
        params = eq.parameters(EPSILON / len(probs), pf, 1, grid.cells)
        j = exponential.sample(params, eq.losses(counts, pf), source)
        out.append(float(grid.value(j)))
    return tuple(out)


def _opendp_measurements(spec: q.TreeSpec, probs: tuple[float, ...]) -> list[dp.Measurement]:
    dp.enable_features("contrib")
    candidates = [float(e) for e in q.leaf_edges(spec)]
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    out = []
    for p in probs:

        def make(scale: float, p: float = p) -> dp.Measurement:
            return dp.m.make_private_quantile(
                domain, dp.symmetric_distance(), dp.max_divergence(), candidates, p, scale
            )

        scale = dp.binary_search_param(make, d_in=1, d_out=float(EPSILON) / len(probs))
        out.append(make(scale))
    return out


def _rank_error(values: np.ndarray, estimate: float, p: float) -> float:
    below = np.sum(values < estimate)
    at_or_below = np.sum(values <= estimate)
    target = p * len(values)
    if below <= target <= at_or_below:
        return 0.0
    return float(min(abs(below - target), abs(at_or_below - target)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=100)
    args = parser.parse_args()
    data = pd.read_csv(DATA)
    rng = np.random.default_rng(20261123)
    print(f"PUMS {DATA}: {len(data)} rows; total ε = {float(EPSILON)}; {args.runs} runs")
    print()
    print(
        "| column | quantiles | method | mean abs error (value) | mean rank error (rows) "
        "| stated 95% rank bound |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for column, (lo, hi, res) in COLUMNS.items():
        values = data[column].to_numpy(dtype=float)
        spec = q.tree_spec(lo, hi, res)
        tree = f"tree b={spec.branching}, depth={spec.depth}, leaf={float(spec.leaf_width):g}"
        for label, probs in (("quartiles", QUARTILES), ("deciles", DECILES)):
            truth = [float(np.quantile(values, p, method="inverted_cdf")) for p in probs]
            acc = q_tail.rank_accuracy(spec, EPSILON, 1, 0.95, len(probs))
            ours_v, ours_r = [], []
            for _ in range(args.runs):
                est = _snapdp_quantiles(values, spec, rng, probs)
                ours_v += [abs(e - t) for e, t in zip(est, truth, strict=True)]
                ours_r += [_rank_error(values, e, p) for e, p in zip(est, probs, strict=True)]
            grid = eq.quantile_grid(
                Fraction(lo), Fraction(hi), column == "age", None if column == "age" else res
            )
            source = SeededSource(rng)
            exp_v, exp_r = [], []
            for _ in range(args.runs):
                est = _exponential_quantiles(values, grid, source, probs)
                exp_v += [abs(e - t) for e, t in zip(est, truth, strict=True)]
                exp_r += [_rank_error(values, e, p) for e, p in zip(est, probs, strict=True)]
            stated = max(
                eq.rank_bound(
                    eq.parameters(EPSILON / len(probs), Fraction(p).limit_denominator(100), 1,
                                  grid.cells),
                    Fraction(p).limit_denominator(100),
                    0.05 / len(probs),
                )
                for p in probs
            )  # fmt: skip
            meas = _opendp_measurements(spec, probs)
            odp_v, odp_r = [], []
            for _ in range(args.runs):
                est = [float(m(values.tolist())) for m in meas]
                odp_v += [abs(e - t) for e, t in zip(est, truth, strict=True)]
                odp_r += [_rank_error(values, e, p) for e, p in zip(est, probs, strict=True)]
            print(
                f"| {column} | {label} | snapdp {tree} | {np.mean(ours_v):.4g} "
                f"| {np.mean(ours_r):.3g} | ±{acc.rank:.4g} |"
            )
            print(
                f"| {column} | {label} | snapdp exponential, ε/{len(probs)} each, "
                f"{grid.cells} cells | {np.mean(exp_v):.4g} | {np.mean(exp_r):.3g} "
                f"| ±{stated:.4g} |"
            )
            print(
                f"| {column} | {label} | OpenDP quantile, ε/{len(probs)} each "
                f"| {np.mean(odp_v):.4g} | {np.mean(odp_r):.3g} | — |"
            )


if __name__ == "__main__":
    main()
