"""accuracy_bound stops its bisection once both ends state the same double: bit for bit the
result of the full bisection (docs/mechanism.md, "Accuracy"), checked here against that full
bisection, written out independently, over seeded random parameters."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from gmpy2 import mpq

from snapdp import _exact, accuracy
from snapdp.parameters import compute_parameters


def _full_bisection(params: object, alpha: float, rounding: bool) -> float:
    """The bisection to 2**-200 relative with the jump-point step, no early exit."""
    p = params
    target = _exact.exact_rational(alpha)
    hi = accuracy._noise_tail_scaled(p, alpha)  # type: ignore[arg-type]
    lo = mpq(0)
    if accuracy._worst_case_tail(p, lo) <= target:  # type: ignore[arg-type]
        hi = lo
    for _ in range(400):
        if hi - lo <= hi * mpq(1, 1 << 200):
            break
        mid = (lo + hi) / 2
        if mpq(accuracy._worst_case_tail(p, mid)) <= target:  # type: ignore[arg-type]
            hi = mid
        else:
            lo = mid
    jump = p.grid * (int((2 * lo) // p.grid) + 1) / 2  # type: ignore[attr-defined]
    if jump <= hi and mpq(accuracy._worst_case_tail(p, jump)) <= target:  # type: ignore[arg-type]
        hi = jump
    total = (p.grid / 2 + hi) * p.sensitivity  # type: ignore[attr-defined]
    if rounding:
        total += accuracy._output_rounding(p)  # type: ignore[arg-type]
    width = p.upper - p.lower  # type: ignore[attr-defined]
    return float(_exact.round_up(min(total, width), 53))


def _cases(n: int) -> list[tuple[Fraction, Fraction, Fraction, Fraction, float]]:
    rng = np.random.default_rng(20261125)
    out = []
    for _ in range(n):
        eps = Fraction(float(10 ** rng.uniform(-3, 1.5)))
        sens = Fraction(2) ** int(rng.integers(-6, 8)) * int(rng.integers(1, 4))
        width = Fraction(float(10 ** rng.uniform(-1, 7)))
        lo = Fraction(float(rng.uniform(-1e3, 1e3)))
        alpha = float(10 ** rng.uniform(-9, -0.3))
        out.append((eps, sens, lo, lo + width, alpha))
    return out


@pytest.mark.parametrize("rounding", [True, False])
def test_the_early_exit_gives_the_full_bisections_double(rounding: bool) -> None:
    checked = 0
    for eps, sens, lo, hi, alpha in _cases(120):
        try:
            params = compute_parameters(eps, sens, lo, hi)
        except ValueError:
            continue
        got = accuracy.accuracy_bound(params, alpha, rounding=rounding)
        assert got == _full_bisection(params, alpha, rounding), (eps, sens, lo, hi, alpha)
        checked += 1
    assert checked >= 100
