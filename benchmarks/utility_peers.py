"""snapdp's error and the tightness of its stated ± beside OpenDP's, on PUMS (docs/utility.md,
"Against peers").

    SNAPDP_SHARED_DATA=/work/shared/data PYTHONPATH=src python benchmarks/utility_peers.py \
        [--runs 40] [--epsilon 1] [--no-opendp]

For each statistic of the workload below, ``--runs`` seeded releases (NOT private: a benchmark)
at the same ε per query, through ``PrivateTable.release``; per statistic: the mean |error| (MAE)
against the truth of the clamped data, the stated 95% ± divided by the observed 95th percentile
of |error| (1 would be as tight as the truth), and the coverage (share of errors within the
stated ±). OpenDP (when installed, the ``bench`` extra) releases the same statistics from its own
Laplace and quantile measurements at the same ε (a mean from a noisy sum and a noisy count at
ε/2 each; a variance from the sums of x and x² and the count at ε/3 each); its stated ± is shown
where OpenDP gives one (counts and sums). Tumult Analytics runs from its own virtual environment
when ``TUMULT_PYTHON`` names that environment's interpreter (benchmarks/tumult_peer.py; never a
snapdp dependency; ``--tumult-runs`` and ``--tumult-stats`` keep Spark's time down); its MAE is
printed beside. SmartNoise SQL is not in this environment.

Run it with ``PYTHONPATH=/path/to/an/older/src`` to get the "before" column of the same table.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import numpy as np

from snapdp.data import Column, PrivateTable, Query, Schema

DATA = Path(os.environ.get("SNAPDP_SHARED_DATA", "/work/shared/data")) / "PUMS.csv"
AGE, INCOME = (0, 100), (0, 200_000)
HALF, QUARTERS = (Fraction(1, 2),), (Fraction(1, 4), Fraction(1, 2), Fraction(3, 4))

WORKLOAD: dict[str, Query] = {
    "count": Query("count"),
    "count by sex": Query("count", by=("sex",)),
    "sum(income)": Query("sum", "income"),
    "mean(income) by sex": Query("mean", "income", by=("sex",)),
    "mean(age)": Query("mean", "age"),
    "variance(income)": Query("variance", "income"),
    "std(age)": Query("std", "age"),
    "median(age)": Query("quantiles", "age", quantiles=HALF),
    "quartiles(age)": Query("quantiles", "age", quantiles=QUARTERS),
    # last, so that the rows above draw the same noise as without them
    "var_samp(income)": Query("var_samp", "income"),
    "std_samp(age)": Query("std_samp", "age"),
}


def _load() -> dict[str, np.ndarray]:
    with DATA.open(newline="") as f:
        rows = list(csv.DictReader(f))
    age = np.clip(np.array([float(r["age"]) for r in rows]), *AGE)
    income = np.clip(np.array([float(r["income"]) for r in rows]), *INCOME)
    return {"age": age, "income": income, "sex": np.array([int(r["sex"]) for r in rows])}


def _cells(d: dict[str, np.ndarray], by: tuple[str, ...]) -> list[np.ndarray]:
    if not by:
        return [np.ones(len(d["age"]), dtype=bool)]
    return [d["sex"] == s for s in (0, 1)]


def _truth(d: dict[str, np.ndarray], q: Query) -> list[float]:
    out: list[float] = []
    for mask in _cells(d, q.by):
        x = d[q.column][mask] if q.column else mask[mask]
        if q.statistic == "count":
            out.append(float(mask.sum()))
        elif q.statistic == "sum":
            out.append(float(x.sum()))
        elif q.statistic == "mean":
            out.append(float(x.mean()))
        elif q.statistic == "variance":
            out.append(float(x.var()))
        elif q.statistic == "std":
            out.append(float(x.std()))
        elif q.statistic == "var_samp":
            out.append(float(x.var(ddof=1)))
        elif q.statistic == "std_samp":
            out.append(float(x.std(ddof=1)))
        else:
            out += [float(np.quantile(x, float(p), method="inverted_cdf")) for p in q.quantiles]
    return out


def _summary(errors: list[float], stated: list[float]) -> tuple[float, float, float]:
    e = np.abs(np.array(errors))
    held = float(np.mean(e <= np.array(stated))) if stated else float("nan")
    p95 = float(np.quantile(e, 0.95))
    ratio = float(np.mean(stated)) / p95 if stated and p95 > 0 else float("nan")
    return float(np.mean(e)), ratio, held


def snapdp_figures(d: dict[str, np.ndarray], eps: Fraction, runs: int) -> dict[str, tuple]:
    schema = Schema(
        (
            Column("age", "integer", Fraction(AGE[0]), Fraction(AGE[1])),
            Column("income", "integer", Fraction(INCOME[0]), Fraction(INCOME[1])),
            Column("sex", "integer", keys=(0, 1)),
        )
    )
    errors: dict[str, list[float]] = {k: [] for k in WORKLOAD}
    stated: dict[str, list[float]] = {k: [] for k in WORKLOAD}
    truths = {k: _truth(d, q) for k, q in WORKLOAD.items()}
    for seed in range(runs):
        table = PrivateTable(str(DATA), schema, total_epsilon=100, rng=np.random.default_rng(seed))
        results = table.release(list(WORKLOAD.values()), [eps] * len(WORKLOAD))
        for (name, _q), result in zip(WORKLOAD.items(), results, strict=True):
            for row, t in zip(result.rows, truths[name], strict=True):
                errors[name].append(float(row.value) - t)
                stated[name].append(float(row.accuracy))
    return {k: _summary(errors[k], stated[k]) for k in WORKLOAD}


def _opendp_measures(eps: float) -> dict[str, Callable[[dict[str, np.ndarray]], list[float]]]:
    import opendp.prelude as dp

    dp.enable_features("contrib")
    ints = dp.vector_domain(dp.atom_domain(T="i64"))
    floats = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    sym = dp.symmetric_distance()

    def count(e: float) -> Callable[[np.ndarray], float]:
        m = dp.t.make_count(ints, sym) >> dp.m.then_laplace(1.0 / e)
        return lambda x: float(m(x.astype(int).tolist()))

    def total(lo: int, hi: int, e: float) -> Callable[[np.ndarray], float]:
        space = dp.t.make_clamp(ints, sym, (lo, hi)) >> dp.t.then_sum()
        m = space >> dp.m.then_laplace(max(abs(lo), abs(hi)) / e)
        return lambda x: float(m(x.astype(int).tolist()))

    def quantile(p: float, e: float) -> Callable[[np.ndarray], float]:
        def make(scale: float) -> dp.Measurement:
            return dp.m.make_private_quantile(
                floats, sym, dp.max_divergence(), [float(v) for v in range(101)], p, scale
            )

        m = make(dp.binary_search_param(make, d_in=1, d_out=e))
        return lambda x: float(m(x.tolist()))

    def mean(lo: int, hi: int) -> Callable[[np.ndarray], float]:
        s, n = total(lo, hi, eps / 2), count(eps / 2)
        return lambda x: min(max(s(x) / max(n(x), 1.0), lo), hi)

    def moments(lo: int, hi: int, root: bool) -> Callable[[np.ndarray], float]:
        s, s2, n = total(lo, hi, eps / 3), total(lo * lo, hi * hi, eps / 3), count(eps / 3)

        def f(x: np.ndarray) -> float:
            k = max(n(x), 1.0)
            v = min(max(s2(x.astype(int) ** 2) / k - (s(x) / k) ** 2, 0.0), (hi - lo) ** 2 / 4)
            return float(np.sqrt(v)) if root else v

        return f

    c, t = count(eps), total(*INCOME, eps)
    mi, ma = mean(*INCOME), mean(*AGE)
    var, sd = moments(*INCOME, root=False), moments(*AGE, root=True)
    med = quantile(0.5, eps)
    # ε/3 per quartile: the same total ε as snapdp's one query (which splits its ε over them)
    quarts = [quantile(float(p), eps / 3) for p in QUARTERS]

    def grouped(f: Callable[[np.ndarray], float], col: str) -> Callable[[dict], list[float]]:
        return lambda d: [f(d[col][d["sex"] == s]) for s in (0, 1)]

    return {
        "count": lambda d: [c(d["age"])],
        "count by sex": lambda d: [c(d["age"][d["sex"] == s]) for s in (0, 1)],
        "sum(income)": lambda d: [t(d["income"])],
        "mean(income) by sex": grouped(mi, "income"),
        "mean(age)": lambda d: [ma(d["age"])],
        "variance(income)": lambda d: [var(d["income"])],
        "std(age)": lambda d: [sd(d["age"])],
        "median(age)": lambda d: [med(d["age"])],
        "quartiles(age)": lambda d: [q(d["age"]) for q in quarts],
    }


def opendp_figures(d: dict[str, np.ndarray], eps: Fraction, runs: int) -> dict[str, tuple]:
    import opendp.prelude as dp

    measures = _opendp_measures(float(eps))
    out = {}
    for name, f in measures.items():
        truth = _truth(d, WORKLOAD[name])
        errs = [v - t for _ in range(runs) for v, t in zip(f(d), truth, strict=True)]
        stated: list[float] = []
        if name.startswith("count"):
            stated = [dp.laplacian_scale_to_accuracy(1.0 / float(eps), 0.05)] * len(errs)
        elif name == "sum(income)":
            a = dp.laplacian_scale_to_accuracy(INCOME[1] / float(eps), 0.05)
            stated = [a] * len(errs)
        out[name] = _summary(errs, stated)
    return out


def tumult_figures(
    d: dict[str, np.ndarray], eps: Fraction, runs: int, stats: list[str]
) -> dict[str, float]:
    """Tumult Analytics' MAE per statistic, from benchmarks/tumult_peer.py run by the interpreter
    ``TUMULT_PYTHON`` names; empty when it is not set."""
    python = os.environ.get("TUMULT_PYTHON")
    if not python:
        return {}
    script = Path(__file__).with_name("tumult_peer.py")
    cmd = [python, str(script), str(DATA), str(runs), str(eps), *stats]
    out = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    maes = {}
    for name, values in out.items():
        truth = _truth(d, WORKLOAD[name])
        errs = [v - t for run in values for v, t in zip(run, truth, strict=True)]
        maes[name] = float(np.mean(np.abs(errs)))
    return maes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--epsilon", type=Fraction, default=Fraction(1))
    parser.add_argument("--no-opendp", action="store_true")
    parser.add_argument("--tumult-runs", type=int, default=None)
    parser.add_argument("--tumult-stats", nargs="*", default=[])
    args = parser.parse_args()
    d = _load()
    ours = snapdp_figures(d, args.epsilon, args.runs)
    peer: dict[str, tuple] = {}
    if not args.no_opendp:
        try:
            peer = opendp_figures(d, args.epsilon, args.runs)
        except ImportError:
            peer = {}
    tumult = tumult_figures(d, args.epsilon, args.tumult_runs or args.runs, args.tumult_stats)
    print(f"PUMS.csv, {len(d['age'])} rows; ε = {args.epsilon} per query; {args.runs} runs; 95% ±")
    for name, mae in tumult.items():
        print(f"Tumult Analytics {name}: MAE {mae:.4g} (snapdp ÷ Tumult {ours[name][0] / mae:.2f})")
    print()
    print("| statistic | MAE snapdp | stated/observed snapdp | coverage | MAE OpenDP "
          "| stated/observed OpenDP |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- |")
    for name, (mae, ratio, held) in ours.items():
        if name in peer:
            pm, pr, _ = peer[name]
            other = f"{pm:.4g} | " + ("—" if np.isnan(pr) else f"{pr:.2f}")
        else:
            other = "— | —"
        print(f"| {name} | {mae:.4g} | {ratio:.2f} | {held:.3f} | {other} |")


if __name__ == "__main__":
    main()
