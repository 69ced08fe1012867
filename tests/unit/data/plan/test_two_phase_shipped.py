"""The example plan's two-phase run with an empty certificate cache (docs/performance.md, issue 32).

Phase two's ε lies on the public grid (docs/plans.md, "Two-phase targets") and the grid's
certificates for the example plan ship with the package from its cap's remainder down to 1/100
of it, so ``snapdp run docs/examples/plan.toml`` certifies nothing at run time. A shipped
certificate releases exactly what a computed one does (same seed, same values), and the
planner's grid walk gives the same ε₂ as the step-by-step one it replaced.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from snapdp import _certcache
from snapdp.data import Plan
from snapdp.data.planner.two_phase import GRID, grid_up, grid_values
from snapdp.shift import _shift_certificate

EXAMPLE = Path(__file__).resolve().parents[4] / "docs" / "examples" / "plan.toml"


@pytest.fixture
def computed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[tuple[Any, ...]]:
    """An empty certificate cache; the certificates computed (not shipped) are recorded."""
    monkeypatch.setenv("SNAPDP_CACHE_DIR", str(tmp_path))
    calls: list[tuple[Any, ...]] = []
    real = _certcache._compute

    def compute(*a: Any) -> Any:
        calls.append(a)
        return real(*a)

    monkeypatch.setattr(_certcache, "_compute", compute)
    return calls


@pytest.mark.parametrize("seed", [1, 7])
def test_example_plan_runs_on_shipped_certificates(
    computed: list[tuple[Any, ...]], seed: int
) -> None:
    stale = "src/snapdp/certificates.json is stale: run tools/make_certificates.py"
    assert _certcache._shipped(), stale
    done = Plan.load(EXAMPLE).run(rng=np.random.default_rng(seed))
    assert all(r.target_met for r in done.results if r.target_met is not None)
    assert computed == []  # every certificate the run used was shipped


def test_shipped_phase_two_certificate_equals_the_computed_one(
    computed: list[tuple[Any, ...]],
) -> None:
    """The shipped certificate of phase two at ε₂ = 0.35 (the grid value the example's mean
    spends on PUMS_dup.csv, below the old 1/10 reach) is what the verifier computes: a run
    with it releases exactly what a run that certifies it releases (same seed, same values)."""
    shipped = _certcache._shipped()
    assert shipped, "src/snapdp/certificates.json is stale: run tools/make_certificates.py"
    key = next(
        k for k in shipped if k[1] == "10000000" and abs(Fraction(k[0]) - Fraction(35, 100)) < 1e-9
    )
    got = _certcache.certificate(*(Fraction(x) for x in key))
    assert computed == []  # shipped
    eps, sens, lo, hi, sens_r, eps_r = (Fraction(x) for x in key)
    assert got == _shift_certificate(eps, sens, lo, hi, sens_r, None, eps_r, False)


def _old_grid_up(eps: Fraction) -> Fraction:
    scale = Fraction(10) ** (len(str(eps.numerator)) - len(str(eps.denominator)) - 1)
    while eps > scale * 10:
        scale *= 10
    while eps <= scale:
        scale /= 10
    return next((g * scale for g in GRID if g * scale >= eps), 10 * scale)


def _old_grid_values(low: Fraction, high: Fraction) -> list[Fraction]:
    out, e = [], _old_grid_up(low)
    while e <= high:
        out.append(e)
        e = _old_grid_up(e * Fraction(1001, 1000))
    return out


def test_grid_walk_equals_the_step_by_step_one() -> None:
    rng = np.random.default_rng(5)
    cases = [(g * Fraction(10) ** k, Fraction(10) ** 3) for g in GRID for k in (-4, -1, 0, 2)]
    for _ in range(300):
        low = Fraction(int(rng.integers(1, 10**6)), int(rng.choice([1, 7, 1000, 3**9, 10**8])))
        cases.append((low, Fraction(int(rng.integers(1, 10**5)), int(rng.integers(1, 100)))))
    for low, factor in cases:
        assert grid_up(low) == _old_grid_up(low)
        assert list(grid_values(low, low * factor)) == _old_grid_values(low, low * factor)
