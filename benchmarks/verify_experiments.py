"""Reproduce the numbers of docs/verification.md (issue 4). Prints Markdown tables.

Usage: PYTHONPATH=src python benchmarks/verify_experiments.py   (about half a minute)

Sections: the default grid; the γ experiment (loss of the implementation with the library's
γ = 2**-48 and, as a clearly labelled EXPERIMENT, with γ = 0); the ranges where δ > 0; the
textbook Laplace mechanism on Mironov's example.
"""

from __future__ import annotations

import time

import numpy as np
from gmpy2 import mpq

import snapdp.parameters as parameters_module
from snapdp import LaplaceMechanism
from snapdp.parameters import compute_parameters
from snapdp.verify import GridPoint, certify, textbook_leak
from snapdp.verify.attacks import could_be_zero_numpy, could_be_zero_textbook
from snapdp.verify.certify import DEFAULT_GRID
from snapdp.verify.loss import privacy_loss_for


def default_grid() -> None:
    print("\n## Default grid (snapdp verify --default-grid)\n")
    print("| ε | bounds | x | x′ | outputs | exact loss | ε − loss | δ(ε) | pass |")
    print("|---|---|---|---|---|---|---|---|---|")
    t0 = time.perf_counter()
    for p in DEFAULT_GRID:
        c = certify(p)
        d = c.as_dict()
        print(
            f"| {p.epsilon:g} | [{p.lower:g}, {p.upper:g}] | {p.value:g} | {p.neighbour:g} | "
            f"{d['outputs']} | {d['loss_digits'][:20]} | {float(c.loss.margin):.3g} | "
            f"{d['hockey_stick_delta']} | {'PASS' if c.passed else 'FAIL'} |"
        )
    print(f"\n({len(DEFAULT_GRID)} certificates in {time.perf_counter() - t0:.2f} s)")


def gamma_experiment() -> None:
    print("\n## γ experiment: exact loss with γ = 2**-48 (library) and γ = 0 (EXPERIMENT)\n")
    print("| ε | bounds | x, x′ | loss with γ | loss − ε | loss, γ = 0 | loss − ε, γ = 0 |")
    print("|---|---|---|---|---|---|---|")
    cases = [
        (0.1, -10.0, 10.0, 0.0, 1.0),
        (0.5, -10.0, 10.0, 0.0, 1.0),
        (1.0, -8.0, 8.0, 0.0, 1.0),
        (1.0, 0.0, 100.0, 0.0, 1.0),
        (2.0, 0.0, 100.0, 50.0, 51.0),
        (2.0, -10.0, 10.0, -10.0, -9.0),
    ]
    original = parameters_module.UNIFORM_GRANULARITY
    for eps, lo, hi, x, y in cases:
        with_gamma = privacy_loss_for(compute_parameters(eps, 1.0, lo, hi), x, y)
        parameters_module.UNIFORM_GRANULARITY = mpq(0)  # EXPERIMENT ONLY
        try:
            without = privacy_loss_for(compute_parameters(eps, 1.0, lo, hi), x, y)
        finally:
            parameters_module.UNIFORM_GRANULARITY = original
        print(
            f"| {eps:g} | [{lo:g}, {hi:g}] | {x:g}, {y:g} | {with_gamma.loss:.20f} | "
            f"{-float(with_gamma.margin):+.3g} | {without.loss:.20f} | "
            f"{-float(without.margin):+.3g} |"
        )


def delta_ranges() -> None:
    print("\n## Where δ > 0: exact δ against the library's stated δ\n")
    print(
        "| ε | bounds | x, x′ | outputs | exact loss | one-sided δ | δ(ε) hockey-stick | "
        "library δ | pure ε | pass |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    points = [
        GridPoint(1.0, -353.0, 353.0, -353.0, -352.0),
        GridPoint(1.0, -354.0, 354.0, -354.0, -353.0),
        GridPoint(1.0, -360.0, 360.0, -360.0, -359.0),
        GridPoint(1.0, -373.0, 373.0, -373.0, -372.0),
        GridPoint(1.0, -380.0, 380.0, -380.0, -379.0),
        GridPoint(1.0, -1000.0, 1000.0, 0.0, 1.0),
        GridPoint(1.0, -1e6, 1e6, -1e6, -1e6 + 1),
        GridPoint(0.001, -1e6, 1e6, -1e6, -1e6 + 1),
        GridPoint(100.0, -1.0, 1.0, 0.0, 1.0),
        GridPoint(300.0, -1.0, 1.0, 0.0, 1.0),
        GridPoint(500.0, -1.0, 1.0, 0.0, 1.0),
        GridPoint(700.0, -1.0, 1.0, 0.0, 1.0),
        GridPoint(1000.0, -1.0, 1.0, 0.0, 1.0),
        GridPoint(1500.0, -1.0, 1.0, 0.0, 1.0),
    ]
    for p in points:
        c = certify(p)
        d = c.as_dict()
        print(
            f"| {p.epsilon:g} | [{p.lower:g}, {p.upper:g}] | {p.value:g}, {p.neighbour:g} | "
            f"{d['outputs']} | {d['loss_digits'][:18]} | {d['delta']} | "
            f"{d['hockey_stick_delta']} | {d['delta_bound_library']} | {c.pure} | "
            f"{'PASS' if c.passed else 'FAIL'} |"
        )


def textbook() -> None:
    print("\n## Textbook Laplace on Mironov's example (Δ = 1, ε = 1/3, inputs 0 and 1)\n")
    n = 1_000_000
    mech = LaplaceMechanism(1 / 3, 1.0, rng=np.random.default_rng(1))
    for x, y in ((0.0, 1.0), (1.0, 0.0)):
        leak = textbook_leak(mech, x, y, samples=n)
        print(
            f"- outputs of {x:g} impossible under {y:g}: {leak.impossible}/{n} = "
            f"{leak.fraction:.4f} (99.9% CI [{leak.delta_low:.4f}, {leak.delta_high:.4f}]); "
            f"witness output {leak.witness!r}: privacy loss = ∞"
        )
    print("\nMironov's distinguisher ('could input 0 have produced this output?'), 10**6 each:\n")
    for name, sample, decide in (
        (
            "LaplaceMechanism",
            lambda x, s: LaplaceMechanism(1 / 3, 1.0, rng=np.random.default_rng(s)).release_many(
                np.full(n, x)
            ),
            lambda o: could_be_zero_textbook(o, 3.0),
        ),
        (
            "numpy Generator.laplace",
            lambda x, s: np.random.default_rng(s).laplace(x, 3.0, n),
            lambda o: could_be_zero_numpy(o, 3.0),
        ),
    ):
        r0 = decide(sample(0.0, 10)).mean()
        r1 = decide(sample(1.0, 11)).mean()
        print(f"- {name}: input 0 flagged {r0:.4f}, input 1 flagged {r1:.4f}")


if __name__ == "__main__":
    default_grid()
    gamma_experiment()
    delta_ranges()
    textbook()
