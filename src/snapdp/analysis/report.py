"""The utility report of ``snapdp compare``: a self-contained HTML page and a JSON of every number.

Built from the exact computations of this package (no simulation): the parameters, the accuracy
stated before spending (:mod:`snapdp.accuracy`, shared with the mechanism), the error distribution
of both mechanisms for one value, the utility ratios snapping/Laplace against B/λ and against ε,
the accuracy bounds against the exact error quantiles (coverage), the binding probability of the
clamp, and seed 000's distance cases. Figures are matplotlib PNGs embedded as base64.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from msgspec import Struct, field

from snapdp import _exact, usefulness
from snapdp._exact import mpq
from snapdp._validation import Number, check_finite, check_positive_finite
from snapdp.accuracy import accuracy_bound, epsilon_for_accuracy, failure_probability_bound
from snapdp.analysis.attacks import distinguisher_rates
from snapdp.analysis.bounds import binding_probability_bound, bounds_for_binding_probability
from snapdp.analysis.comparison import (
    UtilityPoint,
    distance_cases,
    utility_point,
)
from snapdp.analysis.discrete_laplace import (
    DiscreteLaplace,
    discrete_accuracy,
    discrete_laplace,
    discrete_metrics,
    discrete_output_probabilities,
)
from snapdp.analysis.distribution import OutputDistribution, output_distribution
from snapdp.analysis.getaccuracy import data_dependent_accuracy
from snapdp.analysis.metrics import (
    clamped_laplace_metrics,
    error_metrics,
    error_quantile,
    laplace_metrics,
    laplace_quantile,
    tail_probability,
)
from snapdp.errors import ParameterError
from snapdp.mechanism import SnappingMechanism
from snapdp.parameters import SnappingParameters
from snapdp.rescaling import mechanism_parameters

__all__ = ["ALPHAS", "GAMMAS", "ReportGrid", "UtilityReport", "build_report"]

ALPHAS = (0.5, 0.2, 0.1, 0.05, 0.02, 0.01, 0.005, 0.002, 0.001)
GAMMAS = (0.1, 0.01, 0.001)


class ReportGrid(Struct, frozen=True):
    """The grids of the report. The defaults run in a few seconds."""

    b_over_lambdas: tuple[float, ...] = (0.5, 1, 2, 3, 4, 6, 8, 12, 16, 32)
    positions: tuple[float, ...] = (0.5, 0.25, 0.05)
    epsilon_octaves: float = 2.0  # ε from ε·2**-o to ε·2**o
    epsilon_points: int = 33
    offsets: int = 8  # true values spread over one grid cell (see utility_point)
    binding_positions: int = 41


class UtilityReport(Struct):
    """``data``: every number (JSON-ready); ``figures``: name → PNG bytes; ``captions``."""

    data: dict[str, Any]
    figures: dict[str, bytes] = field(default_factory=dict)
    captions: dict[str, str] = field(default_factory=dict)

    def json(self) -> str:
        """The numbers as JSON (non-finite values become null)."""
        return json.dumps(_clean(self.data), indent=1, allow_nan=False)

    def html(self) -> str:
        """A self-contained HTML page: tables of the key numbers and the embedded figures
        (:mod:`snapdp.analysis._report_html`)."""
        from snapdp.analysis._report_html import render_html

        return render_html(self)

    def write(self, directory: str | Path) -> tuple[Path, Path]:
        """Write report.html and report.json into ``directory`` (created); return their paths.

        Both are written to temporary files first and renamed into place only when both are
        complete, so a failure (OSError) leaves no half-written report behind.
        """
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        html_path, json_path = out / "report.html", out / "report.json"
        temps = [out / ".report.html.partial", out / ".report.json.partial"]
        try:
            temps[0].write_text(self.html(), encoding="utf-8")
            temps[1].write_text(self.json(), encoding="utf-8")
            temps[0].replace(html_path)
            temps[1].replace(json_path)
        finally:
            for t in temps:
                t.unlink(missing_ok=True)
        return html_path, json_path


def _clean(obj: Any) -> Any:
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def _params(
    epsilon: Number, sensitivity: Number, lower: Number, upper: Number
) -> SnappingParameters:
    try:
        return mechanism_parameters(epsilon, sensitivity, lower, upper)
    except ValueError as exc:
        raise ParameterError(str(exc)) from None


def build_report(
    epsilon: Number,
    lower: Number,
    upper: Number,
    sensitivity: Number = 1.0,
    value: Number | None = None,
    *,
    quantum: Number | None = None,
    grid: ReportGrid | None = None,
    figures: bool = True,
) -> UtilityReport:
    """Compute the report for the snapping mechanism (ε, Δ, [lower, upper]) and one true value
    (default: the midpoint). Data units throughout; λ = Δ/ε is the textbook Laplace scale.

    ``quantum``: the discrete Laplace baseline's quantum (default: 1 for an integer Δ, an
    integer-valued statistic; else Δ; :func:`~snapdp.analysis.discrete_laplace.discrete_laplace`).
    The JSON starts with ``summary`` (plain words, :func:`snapdp.usefulness.plain_summary`) and
    ``flags`` (:func:`snapdp.usefulness.flags`), then ``mechanisms`` (the three side by side)
    and ``attacks`` (Mironov's distinguisher on each)."""
    eps = float(check_positive_finite("epsilon", epsilon))
    sens = float(check_positive_finite("sensitivity", sensitivity))
    lo = float(check_finite("lower", lower))
    hi = float(check_finite("upper", upper))
    if not lo < hi:
        raise ParameterError(f"`lower` must be < `upper`, not lower={lo!r}, upper={hi!r}")
    x = lo / 2 + hi / 2 if value is None else float(check_finite("value", value))
    if not lo <= x <= hi:
        raise ParameterError(f"`value` must lie in [lower, upper], not {x!r}")
    g = grid or ReportGrid()
    params = _params(eps, sens, lo, hi)
    dl = discrete_laplace(eps, sens, lo, hi, quantum)
    lam = sens / eps
    data: dict[str, Any] = {
        "summary": "",
        "flags": [f.as_dict() for f in usefulness.flags(params)],
        "inputs": {
            "epsilon": eps,
            "sensitivity": sens,
            "lower": lo,
            "upper": hi,
            "value": x,
            "quantum": _f(dl.quantum),
        },
        "parameters": _parameter_numbers(params, lam),
        "accuracy_before_spending": _accuracy_numbers(params, eps, sens, lo, hi, lam),
    }
    dist = output_distribution(params, x)
    mech = _mechanism_numbers(params, dist, dl, eps, sens, lo, hi, x)
    data["mechanisms"] = mech
    data["summary"] = usefulness.plain_summary(
        eps,
        lo,
        hi,
        mech["snapping"]["accuracy95"],
        mech["discrete_laplace"]["accuracy95"],
        mech["textbook_laplace"]["accuracy95"],
        data["parameters"]["grid_spacing"],
    )
    claim = (_exact.exact_rational(eps), _exact.exact_rational(sens))
    data["attacks"] = [r.as_dict() for r in distinguisher_rates(params, dl, claim=claim)]
    data["value"] = _value_numbers(params, dist, eps, sens, lo, hi, x)
    data["distance_cases"] = _distance_numbers(params, x, lo, hi, lam)
    data["ratios_vs_b_over_lambda"] = _b_sweep(eps, sens, lo, hi, g)
    data["ratios_vs_epsilon"] = _epsilon_sweep(eps, sens, lo, hi, g)
    data["coverage"] = _coverage_numbers(params, dist, x, eps, sens)
    data["binding"] = _binding_numbers(params, eps, sens, lo, hi, g)
    report = UtilityReport(data=data)
    if figures:
        from snapdp.analysis import _figures

        report.figures, report.captions = _figures.draw_all(data)
    return report


def _f(q: Any) -> float:
    return float(q) if not isinstance(q, mpq) else _exact.rational_to_float(q)


def _mechanism_numbers(
    params: SnappingParameters,
    dist: OutputDistribution,
    dl: DiscreteLaplace,
    eps: float,
    sens: float,
    lo: float,
    hi: float,
    x: float,
) -> dict[str, Any]:
    """The three mechanisms side by side: the ± for every value (before spending), the metrics
    for the value ``x``, and the probability of each output."""
    width = _f(params.upper - params.lower)
    d_out, d_prob, d_mass = discrete_output_probabilities(dl, x)
    lam = sens / eps
    # the textbook output is fl(x + fl(Y)): two roundings of at most half an ulp each, of values
    # no larger than twice the larger bound where the clamp does not bind
    rounding = 2 * math.ulp(max(abs(lo), abs(hi)))
    return {
        "snapping": {
            "accuracy95": accuracy_bound(params, 0.05),
            "accuracy99": accuracy_bound(params, 0.01),
            "value_metrics": error_metrics(dist).as_dict(),
            "outputs": list(dist.outputs),
            "probabilities": [float(p) for p in dist.probabilities],
        },
        "discrete_laplace": {
            "quantum": _f(dl.quantum),
            "units": dl.units,
            "integer_valued": dl.integer_valued,
            "accuracy95": discrete_accuracy(dl, 0.05),
            "accuracy99": discrete_accuracy(dl, 0.01),
            "value_metrics": discrete_metrics(dl, x).as_dict(),
            "outputs": d_out,
            "probabilities": d_prob,
            "listed_mass": d_mass,
        },
        "textbook_laplace": {
            "accuracy95": min(laplace_quantile(eps, sens, 0.05) + rounding, width),
            "accuracy99": min(laplace_quantile(eps, sens, 0.01) + rounding, width),
            "value_metrics": clamped_laplace_metrics(eps, sens, lo, hi, [x]).as_dict(),
            "density_at_discrete_outputs": [
                math.exp(-abs(o - x) / lam) / (2 * lam) for o in d_out[1:-1]
            ],
        },
    }


def _parameter_numbers(params: SnappingParameters, lam: float) -> dict[str, Any]:
    sens = params.sensitivity
    return {
        "precision": params.precision,
        "epsilon_prime": float(params.epsilon_prime),
        "laplace_scale": lam,
        "snapping_scale": _f(mpq(params.scale) * sens),
        "grid_spacing": _f(params.grid * sens),
        "grid_over_lambda": _f(params.grid * sens) / lam,
        "lambda_exponent": params.lambda_exponent,
        "half_width": _f((params.upper - params.lower) / 2),
        "b_over_lambda": _f((params.upper - params.lower) / 2) / lam,
        "delta": float(_exact.round_up(params.delta, 53)),
    }


def _accuracy_numbers(
    params: SnappingParameters, eps: float, sens: float, lo: float, hi: float, lam: float
) -> dict[str, Any]:
    rows = []
    for a in ALPHAS:
        rows.append(
            {
                "alpha": a,
                "snapping_accuracy_bound": accuracy_bound(params, a),
                "laplace_quantile": laplace_quantile(eps, sens, a),
            }
        )
    target = laplace_quantile(eps, sens, 0.05)
    try:
        needed = epsilon_for_accuracy(target, 0.05, sens, lo, hi)
        price = needed / eps
    except ParameterError:
        needed, price = None, None
    return {
        "rows": rows,
        "laplace_q95": target,
        "failure_probability_at_laplace_q95": failure_probability_bound(params, target),
        "epsilon_for_laplace_q95": needed,
        "epsilon_price": price,
    }


def _value_numbers(
    params: SnappingParameters,
    dist: Any,
    eps: float,
    sens: float,
    lo: float,
    hi: float,
    x: float,
) -> dict[str, Any]:
    snap = error_metrics(dist)
    lap = laplace_metrics(eps, sens)
    point = utility_point(eps, sens, lo, hi, x, rescale=True)
    return {
        "outputs": list(dist.outputs),
        "probabilities": [float(p) for p in dist.probabilities],
        "errors": [_f(e) for e in dist.errors()],
        "total_probability": float(dist.total()),
        "truncated_mass": float(dist.truncated_mass),
        "rounding_error": float(dist.rounding_error),
        "binding_probability": float(dist.binding_probability),
        "lower_mass": float(dist.lower_mass),
        "upper_mass": float(dist.upper_mass),
        "snapping": snap.as_dict(),
        "laplace": lap.as_dict(),
        "laplace_clamped": point.laplace_clamped.as_dict(),
        "ratios": point.ratios,
        "ratios_clamped": point.ratios_clamped,
    }


def _distance_numbers(
    params: SnappingParameters, x: float, lo: float, hi: float, lam: float
) -> dict[str, Any]:
    outside = hi + 2 * lam if x >= (lo + hi) / 2 else lo - 2 * lam
    out: dict[str, Any] = {}
    for name, v in (("value", x), ("outside", outside)):
        cases = distance_cases(params, v)
        out[name] = {"true_value": v, "cases": [c.as_dict() for c in cases]}
    return out


def _sweep_rows(points: Sequence[UtilityPoint]) -> list[dict[str, Any]]:
    return [p.as_dict() for p in points]


def _b_sweep(eps: float, sens: float, lo: float, hi: float, g: ReportGrid) -> dict[str, Any]:
    lam = sens / eps
    center = lo / 2 + hi / 2
    rows = []
    for r in g.b_over_lambdas:
        half = r * lam
        a, b = center - half, center + half
        if not (math.isfinite(a) and math.isfinite(b) and a < b):  # not representable: not shown
            continue
        for t in g.positions:
            rows.append(
                utility_point(
                    eps, sens, a, b, a + t * (b - a), offsets=g.offsets, rescale=True
                ).as_dict()
            )
    return {
        "epsilon": eps,
        "b_over_lambdas": list(g.b_over_lambdas),
        "positions": list(g.positions),
        "offsets": g.offsets,
        "rows": rows,
    }


def epsilon_sweep_values(eps: float, octaves: float, points: int) -> list[float]:
    """ε·2**t on an even grid of t in [−octaves, octaves], plus every power of two in the range
    and its successor double: the jump of Λ sits between them (λ′ > λ)."""
    values = {eps * 2.0 ** (-octaves + 2 * octaves * i / (points - 1)) for i in range(points)}
    lo_exp = math.floor(math.log2(eps) - octaves)
    hi_exp = math.ceil(math.log2(eps) + octaves)
    for m in range(lo_exp, hi_exp + 1):
        p = 2.0**m
        if eps * 2.0**-octaves <= p <= eps * 2.0**octaves:
            values.add(p)
            values.add(p * (1 + 2.0**-40))
    return sorted(values)


def _epsilon_sweep(eps: float, sens: float, lo: float, hi: float, g: ReportGrid) -> dict[str, Any]:
    """At the report's B/λ ratio (kept fixed as ε moves; capped at ``SWEEP_MAX_B_OVER_LAMBDA``,
    beyond which the ratios no longer change — docs/utility.md section 2 — and the exact
    distributions only get longer) and the value at the midpoint (on the grid), half a grid cell
    off it, and spread over the cell."""
    b_over_lambda = min((hi / 2 - lo / 2) / (sens / eps), SWEEP_MAX_B_OVER_LAMBDA)
    center = lo / 2 + hi / 2
    rows = []
    for e in epsilon_sweep_values(eps, g.epsilon_octaves, g.epsilon_points):
        half = b_over_lambda * sens / e
        a, b = center - half, center + half
        if not (math.isfinite(a) and math.isfinite(b) and a < b):  # not representable
            continue
        try:
            params = _params(e, sens, a, b)
        except ParameterError:  # ε too small for the mechanism (ε <= 2η + 2**-48): not shown
            continue
        mid_grid = center + _f(params.grid * params.sensitivity) / 2
        row: dict[str, Any] = {"epsilon": e, "grid_over_lambda": _f(params.grid) * e}
        for name, v, k in (
            ("on_grid", center, 1),
            ("mid_grid", mid_grid, 1),
            ("spread", center, g.offsets),
        ):
            row[name] = utility_point(e, sens, a, b, v, offsets=k, rescale=True).ratios
        rows.append(row)
    return {"b_over_lambda": b_over_lambda, "offsets": g.offsets, "rows": rows}


SWEEP_MAX_B_OVER_LAMBDA = 64.0

SIMULATION_SEED = 0
SIMULATION_SIZE = 5000


def _coverage_numbers(
    params: SnappingParameters, dist: Any, x: float, eps: float, sens: float
) -> dict[str, Any]:
    """The accuracy statements against the exact quantiles, with a small seeded simulation of the
    mechanism itself (``release_many``; seeded, so NOT private — it releases no data, only the
    hypothetical value) as a visible cross-check."""
    lo, hi = _f(params.lower), _f(params.upper)
    mech = SnappingMechanism(eps, sens, lo, hi, rng=np.random.default_rng(SIMULATION_SEED))
    errors = np.sort(np.abs(mech.release_many(np.full(SIMULATION_SIZE, x)) - x))
    rows = []
    for a in ALPHAS:
        bound = accuracy_bound(params, a)
        # the smallest sample error e with a fraction <= a of the sample above it
        rank = max(math.ceil((1 - a) * SIMULATION_SIZE) - 1, 0)
        rows.append(
            {
                "alpha": a,
                "accuracy_bound": bound,
                "getaccuracy_true_value": data_dependent_accuracy(params, x, a),
                "exact_quantile": error_quantile(dist, a),
                "simulated_quantile": float(errors[rank]),
                "laplace_quantile": laplace_quantile(eps, sens, a),
                "achieved_failure_probability": float(tail_probability(dist, bound)),
                "simulated_failure_fraction": float(np.mean(errors > bound)),
            }
        )
    return {
        "value": x,
        "simulation": {"seed": SIMULATION_SEED, "size": SIMULATION_SIZE},
        "rows": rows,
    }


def _binding_numbers(
    params: SnappingParameters, eps: float, sens: float, lo: float, hi: float, g: ReportGrid
) -> dict[str, Any]:
    n = g.binding_positions
    rows = []
    for i in range(n):
        t = i / (n - 1)
        v = lo * (1 - t) + hi * t  # no overflow for bounds near ±1.8e308
        d = output_distribution(params, v)
        rows.append(
            {
                "position": t,
                "value": v,
                "binding_probability": float(d.binding_probability),
                "bound": binding_probability_bound(params, v, v),
            }
        )
    suggestions = []
    for gamma in GAMMAS:
        try:
            new_lo, new_hi = bounds_for_binding_probability(eps, sens, lo, hi, gamma)
            new_params = _params(eps, sens, new_lo, new_hi)
        except ParameterError:  # the widened bounds overflow the doubles: no suggestion
            continue
        worst = max(float(output_distribution(new_params, v).binding_probability) for v in (lo, hi))
        suggestions.append(
            {"gamma": gamma, "lower": new_lo, "upper": new_hi, "exact_binding_at_ends": worst}
        )
    return {"rows": rows, "bounds_for_gamma": suggestions}
