"""Matplotlib figures of the utility report, drawn from the report's numbers only (PNG bytes).

Uses ``matplotlib.figure.Figure`` directly (no pyplot, no global state, no display needed).
"""

from __future__ import annotations

import io
import math
from typing import Any

from matplotlib.figure import Figure

__all__ = ["draw_all"]

_METRIC_LABELS = {"mae": "MAE", "rmse": "RMSE", "q95": "95% error", "q99": "99% error"}
_DPI = 110


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=_DPI, bbox_inches="tight")
    return buf.getvalue()


def draw_all(data: dict[str, Any]) -> tuple[dict[str, bytes], dict[str, str]]:
    """All figures and their captions, keyed by name."""
    figures: dict[str, bytes] = {}
    captions: dict[str, str] = {}
    for name, draw in (
        ("three_mechanisms", _three_mechanisms),
        ("error_distribution", _error_distribution),
        ("ratios_vs_b_over_lambda", _ratios_vs_b),
        ("ratios_vs_epsilon", _ratios_vs_epsilon),
        ("coverage", _coverage),
        ("binding", _binding),
    ):
        if name in _SWEEPS and not data[_SWEEPS[name]]["rows"]:
            continue  # bounds too wide for the sweep (below the spacing of doubles): no figure
        figures[name], captions[name] = draw(data)
    return figures, captions


_SWEEPS = {
    "ratios_vs_b_over_lambda": "ratios_vs_b_over_lambda",
    "ratios_vs_epsilon": "ratios_vs_epsilon",
}


def _three_mechanisms(data: dict[str, Any]) -> tuple[bytes, str]:
    mech = data["mechanisms"]
    x = data["inputs"]["value"]
    lam = data["parameters"]["laplace_scale"]
    fig = Figure(figsize=(8, 4.2))
    ax = fig.add_subplot()
    snap = mech["snapping"]
    disc = mech["discrete_laplace"]
    gamma = disc["quantum"]
    pts = [(o - x, p) for o, p in zip(snap["outputs"], snap["probabilities"], strict=True)]
    pts = [(e, p) for e, p in pts if p > 1e-6]
    dpts = [(o - x, p) for o, p in zip(disc["outputs"], disc["probabilities"], strict=True)]
    dpts = [(e, p) for e, p in dpts if p > 1e-6]
    span = max([abs(e) for e, _ in pts + dpts] + [lam]) * 1.05
    n = 400
    grid = [-span + 2 * span * i / (n - 1) for i in range(n)]
    ax.plot(
        grid,
        [gamma * math.exp(-abs(t) / lam) / (2 * lam) for t in grid],
        color="tab:orange",
        lw=2,
        label=f"textbook Laplace: density × quantum {gamma:g}",
    )
    if dpts:
        ax.vlines([e for e, _ in dpts], 0, [p for _, p in dpts], color="tab:green", lw=1.5)
        ax.plot(
            [e for e, _ in dpts],
            [p for _, p in dpts],
            "s",
            ms=4,
            color="tab:green",
            label=f"discrete Laplace (multiples of {gamma:g})",
        )
    if pts:
        ax.vlines([e for e, _ in pts], 0, [p for _, p in pts], color="tab:blue", lw=2.5)
        ax.plot(
            [e for e, _ in pts],
            [p for _, p in pts],
            "o",
            color="tab:blue",
            label=f"snapping (grid of width {data['parameters']['grid_spacing']:g})",
        )
    ax.set_xlabel("error = output − true value")
    ax.set_ylabel("probability of each output")
    ax.set_title(f"The three mechanisms at ε = {data['inputs']['epsilon']:g}, true value {x:g}")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    caption = (
        "The probability of each output, exactly: snapping (blue) puts its mass on a grid of "
        "width Λ·Δ, discrete Laplace (green) on multiples of its quantum; the textbook "
        "mechanism's density (orange) is scaled by the quantum so that heights compare with the "
        "green stems. Outputs clamped to a bound carry the mass beyond it."
    )
    return _png(fig), caption


def _error_distribution(data: dict[str, Any]) -> tuple[bytes, str]:
    val = data["value"]
    par = data["parameters"]
    lam = par["laplace_scale"]
    spacing = par["grid_spacing"]
    errors, probs = val["errors"], val["probabilities"]
    lo_out, hi_out = data["inputs"]["lower"], data["inputs"]["upper"]
    x = data["inputs"]["value"]
    shown = [(e, p) for e, p in zip(errors, probs, strict=True) if p > 1e-7]
    fig = Figure(figsize=(8, 4.2))
    ax = fig.add_subplot()
    width = max(abs(e) for e, _ in shown)
    span = max(width, 8 * lam) * 1.05
    n = 400
    grid = [-span + 2 * span * i / (n - 1) for i in range(n)]
    density = [spacing * math.exp(-abs(t) / lam) / (2 * lam) for t in grid]
    ax.plot(grid, density, color="tab:orange", lw=2, label="Laplace density × grid spacing")
    clamp_errs = {lo_out - x, hi_out - x}
    inner = [(e, p) for e, p in shown if e not in clamp_errs]
    edge = [(e, p) for e, p in shown if e in clamp_errs]
    if inner:
        ax.vlines([e for e, _ in inner], 0, [p for _, p in inner], color="tab:blue", lw=2)
        ax.plot(
            [e for e, _ in inner],
            [p for _, p in inner],
            "o",
            color="tab:blue",
            label="snapping: P(output − x = e)",
        )
    if edge:
        ax.vlines([e for e, _ in edge], 0, [p for _, p in edge], color="tab:red", lw=2)
        ax.plot(
            [e for e, _ in edge],
            [p for _, p in edge],
            "s",
            color="tab:red",
            label="snapping: clamped to a bound",
        )
    ax.set_xlabel("error e = output − true value")
    ax.set_ylabel("probability")
    ax.set_title(f"Error distributions at ε = {data['inputs']['epsilon']:g}, value {x:g}")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    caption = (
        "Exact error distribution of the snapping mechanism (stems; red: the mass clamped to a "
        "bound) against the textbook Laplace density scaled by the grid spacing "
        f"Λ·Δ = {spacing:g}, so heights are comparable: each stem carries about the Laplace "
        "mass of one grid cell."
    )
    return _png(fig), caption


def _ratios_vs_b(data: dict[str, Any]) -> tuple[bytes, str]:
    sweep = data["ratios_vs_b_over_lambda"]
    fig = Figure(figsize=(9, 6.2))
    axes = fig.subplots(2, 2, sharex=True)
    colors = ["tab:blue", "tab:green", "tab:purple", "tab:brown"]
    for ax, metric in zip(axes.flat, _METRIC_LABELS, strict=True):
        for color, t in zip(colors, sweep["positions"], strict=False):
            rows = [r for r in sweep["rows"] if abs(r["position"] - t) < 1e-9]
            rs = [r["b_over_lambda"] for r in rows]
            ax.plot(
                rs,
                [r["ratios"][metric] for r in rows],
                "-o",
                ms=3,
                color=color,
                label=f"position {t:g}, vs Laplace",
            )
            ax.plot(
                rs,
                [r["ratios_clamped"][metric] for r in rows],
                "--",
                color=color,
                label=f"position {t:g}, vs clamped Laplace",
            )
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_title(f"{_METRIC_LABELS[metric]}: snapping / Laplace", fontsize=10)
        ax.grid(alpha=0.3)
    for ax in axes[1]:
        ax.set_xlabel("B/λ (half-width of [lower, upper] over λ = Δ/ε)")
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"Utility ratios against B/λ at ε = {sweep['epsilon']:g}")
    caption = (
        "Ratios snapping/Laplace of MAE, RMSE and the 95%/99% error quantiles, exact, for the "
        "true value at several positions in [lower, upper] (0.5 = the midpoint), each spread over "
        f"{sweep['offsets']} offsets within one grid cell. Solid: against the textbook "
        "(unclamped) Laplace mechanism; dashed: against Laplace clamped to the same bounds. "
        "Below 1 at small B/λ the clamp, not the snapping, is what helps (at the price of bias)."
    )
    return _png(fig), caption


def _ratios_vs_epsilon(data: dict[str, Any]) -> tuple[bytes, str]:
    sweep = data["ratios_vs_epsilon"]
    rows = sweep["rows"]
    eps = [r["epsilon"] for r in rows]
    fig = Figure(figsize=(9, 6.4))
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1.3]})
    for metric, color in zip(
        _METRIC_LABELS, ["tab:blue", "tab:green", "tab:purple", "tab:brown"], strict=True
    ):
        top.plot(
            eps,
            [r["spread"][metric] for r in rows],
            color=color,
            label=f"{_METRIC_LABELS[metric]} (value spread over a cell)",
        )
    top.plot(
        eps,
        [r["on_grid"]["mae"] for r in rows],
        color="gray",
        ls=":",
        label="MAE, value on a grid point",
    )
    top.plot(
        eps,
        [r["mid_grid"]["mae"] for r in rows],
        color="gray",
        ls="--",
        label="MAE, value half a cell off",
    )
    top.axhline(1.0, color="k", lw=0.8)
    top.set_ylabel("snapping / Laplace")
    top.legend(fontsize=7, ncol=2)
    top.grid(alpha=0.3)
    bottom.plot(eps, [r["grid_over_lambda"] for r in rows], color="k")
    bottom.set_ylabel("Λ/λ")
    bottom.set_xscale("log", base=2)
    bottom.set_xlabel("ε")
    bottom.set_ylim(0.9, 2.1)
    bottom.grid(alpha=0.3)
    for ax in (top, bottom):
        for r in rows:
            e = r["epsilon"]
            if math.log2(e).is_integer():
                ax.axvline(e, color="tab:red", lw=0.6, alpha=0.5)
    fig.suptitle(f"Utility ratios against ε at B/λ = {sweep['b_over_lambda']:g}")
    caption = (
        "The cost of Λ >= λ′: the output grid Λ is the smallest power of two >= λ′, so Λ/λ runs "
        "from 1 to 2 and jumps when 1/ε crosses a power of two (red lines; since λ′ > λ, at "
        "1/ε = 2**m exactly Λ is already 2**(m+1)). The ratios follow the sawtooth. Gray: MAE "
        "for a value exactly on the grid (can beat Laplace) and half a cell off (worst)."
    )
    return _png(fig), caption


def _coverage(data: dict[str, Any]) -> tuple[bytes, str]:
    rows = data["coverage"]["rows"]
    alphas = [r["alpha"] for r in rows]
    fig = Figure(figsize=(10, 4.2))
    left, right = fig.subplots(1, 2)
    left.plot(alphas, [r["accuracy_bound"] for r in rows], "-o", label="a(α): stated bound")
    left.plot(
        alphas,
        [r["getaccuracy_true_value"] for r in rows],
        "-s",
        label="GetAccuracy, corrected (true value; analysis only)",
    )
    left.plot(
        alphas,
        [r["exact_quantile"] for r in rows],
        "k^",
        ms=7,
        label="exact (1 − α) quantile of |error|",
    )
    sim = data["coverage"]["simulation"]
    left.plot(
        alphas,
        [r["simulated_quantile"] for r in rows],
        "x",
        color="tab:red",
        ms=7,
        label=f"simulated quantile (release_many, n = {sim['size']}, seeded)",
    )
    left.plot(alphas, [r["laplace_quantile"] for r in rows], "--", label="Laplace −λ·ln α")
    left.set_xscale("log")
    left.set_xlabel("α")
    left.set_ylabel("error a")
    left.legend(fontsize=7)
    left.grid(alpha=0.3)
    right.loglog(
        alphas,
        [max(r["achieved_failure_probability"], 1e-300) for r in rows],
        "-o",
        label="P(|error| > a(α)), exact",
    )
    sim_pts = [(r["alpha"], r["simulated_failure_fraction"]) for r in rows]
    sim_pts = [(a, f) for a, f in sim_pts if f > 0]
    if sim_pts:
        right.loglog(
            [a for a, _ in sim_pts],
            [f for _, f in sim_pts],
            "x",
            color="tab:red",
            ms=7,
            label="simulated fraction (seeded)",
        )
    right.loglog(alphas, alphas, "k--", label="α (the promise)")
    right.set_xlabel("α")
    right.set_ylabel("probability")
    right.legend(fontsize=7)
    right.grid(alpha=0.3)
    fig.suptitle(
        f"Accuracy statements against the exact error, value {data['coverage']['value']:g}"
    )
    caption = (
        "Left: the data-independent accuracy a(α) (docs/mechanism.md, shown before spending), "
        "the published data-dependent GetAccuracy, corrected (uses the true value: never publish "
        "it), and the exact quantile of the error, with a seeded simulation of the mechanism "
        "as a cross-check. "
        "Right: the exact probability that the error exceeds a(α) "
        "stays below α (coverage)."
    )
    return _png(fig), caption


def _binding(data: dict[str, Any]) -> tuple[bytes, str]:
    rows = data["binding"]["rows"]
    pos = [r["position"] for r in rows]
    fig = Figure(figsize=(8, 4))
    ax = fig.add_subplot()
    ax.semilogy(
        pos,
        [max(r["binding_probability"], 1e-300) for r in rows],
        "-o",
        ms=3,
        label="exact P(clamp binds)",
    )
    ax.semilogy(pos, [r["bound"] for r in rows], "--", label="bound exp(−(B − |x| − Λ/2)/λ′)")
    ax.set_xlabel("position of the true value in [lower, upper]")
    ax.set_ylabel("probability")
    lowest = min(
        (r["binding_probability"] for r in rows if r["binding_probability"] > 0), default=1e-300
    )
    ax.set_ylim(max(lowest / 10, 1e-300), 1.5)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    ax.set_title("How often the output is clamped to a bound")
    caption = (
        "The exact probability that the output is lower or upper, against the bound used to "
        "choose B from a binding probability γ (docs/utility.md). Near the bounds it is close "
        "to 1/2."
    )
    return _png(fig), caption
