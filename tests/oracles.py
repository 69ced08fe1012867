"""Independent oracles shared by tests: the ideal output distribution of DESIGN §5."""

from __future__ import annotations

import math
from fractions import Fraction

from snapdp import SnappingMechanism


def laplace_cdf(t: float, scale: float) -> float:
    return 0.5 * math.exp(t / scale) if t < 0 else 1 - 0.5 * math.exp(-t / scale)


def exact_distribution(m: SnappingMechanism, value: float | Fraction) -> dict[object, float]:
    """DESIGN §5 in scaled units: grid points strictly inside (−B̃, B̃), and the two bounds."""
    params = m.parameters
    grid = Fraction(m.Lambda)
    bound = Fraction(int(params.bound.numerator), int(params.bound.denominator))
    center = Fraction(int(params.center.numerator), int(params.center.denominator))
    # the sensitivity DESIGN's steps run with: Δ_r = r·Δ when rescaled (docs/mechanism.md)
    sens = Fraction(int(params.sensitivity.numerator), int(params.sensitivity.denominator))
    if isinstance(value, float) and math.isinf(value):
        x = bound if value > 0 else -bound
    else:
        x = min(max((Fraction(value) - center) / sens, -bound), bound)
    scale = float(m.scale)
    k_hi = math.ceil(bound / grid)  # smallest grid point >= B̃
    k_lo = math.floor(-bound / grid)  # largest grid point <= −B̃
    dist: dict[object, float] = {}
    dist["lo"] = laplace_cdf(float(k_lo * grid + grid / 2 - x), scale)
    for k in range(k_lo + 1, k_hi):
        a = float(k * grid - grid / 2 - x)
        b = float(k * grid + grid / 2 - x)
        dist[k] = laplace_cdf(b, scale) - laplace_cdf(a, scale)
    dist["hi"] = 1 - laplace_cdf(float(k_hi * grid - grid / 2 - x), scale)
    return dist
