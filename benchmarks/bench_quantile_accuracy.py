"""The numbers of docs/data.md, "Quantiles", "The ± of a released quantile": PUMS age through
the release path, the stated ± against the measured error, and OpenDP's median.

    PYTHONPATH=src python benchmarks/bench_quantile_accuracy.py [--runs 100] [--no-opendp]
    PYTHONPATH=src python benchmarks/bench_quantile_accuracy.py --timing

For the median and the quartiles of age [0, 100] in /work/shared/data/PUMS.csv (1,000 rows, one
per person) at ε = 1/3 (the equal three-way split of docs/utility.md's comparison) and ε = 1,
``--runs`` seeded releases (NOT private: a benchmark) through ``PrivateTable.release``:

* the value ± and rank ± stated before this change (the union bound over the tree's nodes; in
  values the worst case U − L for 1,000 rows) and now (the tail bound; the ± read from the
  released tree), their means over releases;
* the measured mean |q̂ − q| (q the sample quantile, inverted CDF) and mean rank error;
* how often the stated value interval held the true quantile;
* the same through ``method = "exponential"`` (snapdp's exact exponential mechanism): stated
  rank ±, how often it held, errors;
* OpenDP's ``make_private_quantile`` (permute-and-flip over the integer ages 0..100, its score
  weighing the rows at a candidate) at the same total ε per quantile set (ε/#quantiles each,
  as snapdp's one query splits its ε over them), when opendp is installed (the ``bench``
  extra).
"""

from __future__ import annotations

import argparse
import csv
import math
from fractions import Fraction
from pathlib import Path

import numpy as np

from snapdp.data import Column, PrivateTable, Query, Schema, statistics
from snapdp.data.statistics.math import quantile_tail as qmod_tail
from snapdp.data.statistics.math import quantile_tree as qmod

DATA = Path("/work/shared/data/PUMS.csv")
SETS = {"median": (Fraction(1, 2),), "quartiles": (Fraction(1, 4), Fraction(1, 2), Fraction(3, 4))}


def _rank_error(values: np.ndarray, estimate: float, p: float) -> float:
    below, upto, target = np.sum(values < estimate), np.sum(values <= estimate), p * len(values)
    if below <= target <= upto:
        return 0.0
    return float(min(abs(below - target), abs(upto - target)))


def _before(schema: Schema, query: Query, eps: Fraction, n: int) -> tuple[float, float]:
    """The old statement: rank ± = 2·W·a(α/T) (union bound, count bounds [0, N]); in values,
    the planning figure at n rows (the release printed it, capped at U − L)."""
    compiled = statistics.compile_query(query, schema, eps)
    tree = compiled.tree
    nodes = sum(tree.nodes(lv) for lv in range(1, tree.depth + 1))
    cals = qmod.level_calibrations(tree, eps, 1, 0, schema.max_rows)
    from snapdp.accuracy import accuracy_bound
    from snapdp.parameters import compute_parameters

    node = max(
        accuracy_bound(compute_parameters(c.epsilon, 1, 0, schema.max_rows), 0.05 / nodes)
        for c in cals
    )
    rank = 2 * tree.weight * node
    span = float(tree.upper - tree.lower)
    return rank, min(span, float(tree.leaf_width) + rank * span / n)


def _opendp(values: np.ndarray, probs: tuple[Fraction, ...], eps: Fraction, runs: int) -> float:
    import opendp.prelude as dp

    dp.enable_features("contrib")
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    candidates = [float(x) for x in range(101)]
    errors = []
    for p in probs:

        def make(scale: float, p: float = float(p)) -> dp.Measurement:
            return dp.m.make_private_quantile(
                domain, dp.symmetric_distance(), dp.max_divergence(), candidates, p, scale
            )

        scale = dp.binary_search_param(make, d_in=1, d_out=float(eps) / len(probs))
        m = make(scale)
        truth = float(np.quantile(values, float(p), method="inverted_cdf"))
        errors += [abs(float(m(values.tolist())) - truth) for _ in range(runs)]
    return float(np.mean(errors))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--no-opendp", action="store_true")
    parser.add_argument(
        "--exponential-only", action="store_true", help="only the second table (fast)"
    )
    parser.add_argument(
        "--timing", action="store_true", help="only the tail bound's cost (docs/performance.md)"
    )
    args = parser.parse_args()
    if args.timing:
        _timing()
        return
    with DATA.open(newline="") as f:
        values = np.array([float(r["age"]) for r in csv.DictReader(f)])
    schema = Schema((Column("age", "integer", Fraction(0), Fraction(100)),))
    if args.exponential_only:
        _exponential(values, schema, args.runs, not args.no_opendp)
        return
    print(f"PUMS age, {len(values)} rows; {args.runs} seeded releases per row; 95% ±")
    print()
    print("| ε | quantiles | rank ± before | rank ± now | value ± before | value ± now (mean) "
          "| interval held | MAE snapdp | rank error snapdp | MAE OpenDP |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for eps in (Fraction(1, 3), Fraction(1)):
        for name, probs in SETS.items():
            query = Query("quantiles", "age", quantiles=probs, method="tree")
            rank_before, value_before = _before(schema, query, eps, len(values))
            truth = [float(np.quantile(values, float(p), method="inverted_cdf")) for p in probs]
            ranks, accs, errs, rerrs, held = [], [], [], [], 0
            for seed in range(args.runs):
                table = PrivateTable(
                    str(DATA), schema, total_epsilon=100, rng=np.random.default_rng(seed)
                )
                result = table.release([query], eps)[0]
                for row, t in zip(result.rows, truth, strict=True):
                    assert row.interval is not None and row.rank_accuracy is not None
                    ranks.append(row.rank_accuracy)
                    accs.append(row.accuracy)
                    errs.append(abs(row.value - t))
                    rerrs.append(_rank_error(values, row.value, float(row.quantile or 0)))
                    held += row.interval[0] <= t <= row.interval[1]
            odp = "—" if args.no_opendp else f"{_opendp(values, probs, eps, args.runs):.3g}"
            print(
                f"| {eps} | {name} | ±{rank_before:.0f} | ±{max(ranks):.0f} | ±{value_before:.3g} "
                f"| ±{np.mean(accs):.3g} | {held / len(accs):.3f} | {np.mean(errs):.3g} "
                f"| {np.mean(rerrs):.3g} | {odp} |"
            )
    assert math.isfinite(float(np.mean(accs)))
    _exponential(values, schema, args.runs, not args.no_opendp)


def _timing() -> None:
    """The cost of :func:`~snapdp.data.statistics.math.quantile_tail.tree_tail_bound` (one
    process, one core): the first call for a (b, depth, p) groups the weights once; a call at
    another ε reuses them."""
    import time

    from snapdp.data.statistics.math.sum_bound import noise_kind
    from snapdp.rescaling import mechanism_parameters

    print("| b | depth | first call (groups the weights) | at a new ε | r for p = 1/2 at ε = 1 |")
    print("| --- | --- | --- | --- | --- |")
    for b, depth in ((10, 2), (10, 3), (8, 3), (2, 7), (4, 5), (8, 4), (16, 3), (2, 12)):
        spec = qmod.tree_spec(0, b**depth, 1, branching=b)
        times, c = [], 0.0
        for eps in (Fraction(1), Fraction(1, 2)):
            lo, hi = qmod.node_bounds(spec, eps, 1, 1000)
            cals = qmod.level_calibrations(spec, eps, 1, lo, hi)
            kinds = tuple(noise_kind(mechanism_parameters(k.epsilon, 1, lo, hi)) for k in cals)
            start = time.perf_counter()
            bound = qmod_tail.tree_tail_bound(b, depth, kinds, 0.05, 0.5)
            times.append(time.perf_counter() - start)
            c = c or bound
        print(f"| {b} | {depth} | {times[0]:.3f} s | {times[1]:.3f} s | {c:.1f} |")


def _exponential(values: np.ndarray, schema: Schema, runs: int, opendp: bool) -> None:
    """The same quantiles by ``method = "exponential"`` (the exact exponential mechanism over
    the integer ages, ε split over the quantiles): the stated rank ± (95%, for every n), how
    often it held, the mean absolute error and the mean rank error."""
    print()
    print('exact exponential mechanism (method = "exponential"), same seeds:')
    print()
    print(
        "| ε | quantiles | rank ± stated | rank ± held | MAE | mean rank error | exact "
        "| MAE OpenDP |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for eps in (Fraction(1, 3), Fraction(1)):
        for name, probs in SETS.items():
            query = Query("quantiles", "age", quantiles=probs, method="exponential")
            truth = [float(np.quantile(values, float(p), method="inverted_cdf")) for p in probs]
            ranks, errs, rerrs, held, exact = [], [], [], 0, 0
            for seed in range(runs):
                table = PrivateTable(
                    str(DATA), schema, total_epsilon=100, rng=np.random.default_rng(seed)
                )
                result = table.release([query], eps)[0]
                for row, t in zip(result.rows, truth, strict=True):
                    assert row.rank_accuracy is not None
                    rerr = _rank_error(values, row.value, float(row.quantile or 0))
                    ranks.append(row.rank_accuracy)
                    errs.append(abs(row.value - t))
                    rerrs.append(rerr)
                    held += rerr <= row.rank_accuracy
                    exact += row.value == t
            odp = f"{_opendp(values, probs, eps, runs):.3g}" if opendp else "—"
            print(
                f"| {eps} | {name} | ±{max(ranks):.1f} | {held / len(errs):.3f} "
                f"| {np.mean(errs):.3g} | {np.mean(rerrs):.3g} | {exact / len(errs):.2f} "
                f"| {odp} |"
            )


if __name__ == "__main__":
    main()
