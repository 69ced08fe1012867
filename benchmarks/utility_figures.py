"""Regenerate the figures and numbers of docs/utility.md.

    PYTHONPATH=src python benchmarks/utility_figures.py [--output docs/figures]

Runs the report of ``snapdp compare`` for a representative setting with finer grids, saves its
figures as PNGs, adds a map of the MAE ratio over (ε, B/λ), and prints the numbers quoted in the
doc. Everything is exact (no simulation); it takes well under a minute.
"""

from __future__ import annotations

import argparse
import io
import json
import math
from pathlib import Path

from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure

from snapdp.analysis.comparison import utility_grid
from snapdp.analysis.report import ReportGrid, build_report

GRID = ReportGrid(
    b_over_lambdas=(0.25, 0.5, 1, 1.5, 2, 3, 4, 6, 8, 12, 16, 32, 64),
    positions=(0.5, 0.25, 0.05),
    epsilon_octaves=3.0,
    epsilon_points=49,
    offsets=16,
    binding_positions=41,
)


def ratio_map(output: Path) -> dict[str, list[list[float]]]:
    """MAE ratio (snapping over textbook and over clamped Laplace) on an (ε, B/λ) grid."""
    epsilons = [2.0 ** (-3 + 6 * i / 36) for i in range(37)]
    ratios = [0.5, 1, 2, 4, 8, 16, 32, 64]
    points = utility_grid(epsilons, ratios, [0.5], offsets=8)
    text = [[0.0] * len(epsilons) for _ in ratios]
    clamped = [[0.0] * len(epsilons) for _ in ratios]
    for idx, p in enumerate(points):
        i, j = divmod(idx, len(ratios))
        text[j][i] = p.ratios["mae"]
        clamped[j][i] = p.ratios_clamped["mae"]
    fig = Figure(figsize=(10, 4.2))
    axes = fig.subplots(1, 2, sharey=True)
    for ax, grid, title in (
        (axes[0], text, "vs textbook Laplace"),
        (axes[1], clamped, "vs Laplace clamped to the same bounds"),
    ):
        mesh = ax.pcolormesh(
            [math.log2(e) for e in epsilons],
            [math.log2(r) for r in ratios],
            grid,
            shading="nearest",
            cmap="RdBu_r",
            norm=TwoSlopeNorm(vmin=0.3, vcenter=1.0, vmax=1.3),
        )
        ax.set_title(f"MAE ratio snapping {title}", fontsize=10)
        ax.set_xlabel("log2 ε")
        fig.colorbar(mesh, ax=ax)
    axes[0].set_ylabel("log2 (B/λ)")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    (output / "utility_mae_map.png").write_bytes(buf.getvalue())
    return {
        "epsilons": epsilons,
        "b_over_lambdas": ratios,
        "mae_text": text,
        "mae_clamped": clamped,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--output", default="docs/figures")
    args = parser.parse_args()
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    report = build_report(1.0, 0.0, 100.0, 1.0, 97.0, grid=GRID)
    for name, png in report.figures.items():
        (out / f"utility_{name}.png").write_bytes(png)
    data = report.data
    data["mae_map"] = ratio_map(out)
    (out / "utility_numbers.json").write_text(report.json(), encoding="utf-8")
    acc = data["accuracy_before_spending"]
    print("parameters", json.dumps(data["parameters"]))
    print("epsilon for Laplace q95", acc["epsilon_for_laplace_q95"], "price", acc["epsilon_price"])
    print(
        "value metrics", json.dumps(data["value"]["snapping"]), json.dumps(data["value"]["ratios"])
    )
    for row in data["ratios_vs_epsilon"]["rows"]:
        if row["epsilon"] in (0.5, 1.0, 2.0) or abs(row["epsilon"] - 1) < 1e-9:
            print("eps", row["epsilon"], row["grid_over_lambda"], json.dumps(row["spread"]))
    print("coverage", json.dumps(data["coverage"]["rows"][3]))
    print("gamma", json.dumps(data["binding"]["bounds_for_gamma"]))
    print("cases", json.dumps(data["distance_cases"]))


if __name__ == "__main__":
    main()
