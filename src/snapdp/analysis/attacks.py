"""Mironov's distinguisher on the three mechanisms, at the user's own ε and bounds.

Reuses :mod:`snapdp.verify.laplace` (which outputs an input can produce under the textbook
mechanism, decided exactly by bisection on its random integer). For two neighbouring inputs x0 = the
value in [lower, upper] nearest 0 and x1 = x0 + Δ (x0 − Δ if that leaves the bounds), each mechanism
releases ``n`` times per input from a **seeded** generator (reproducible, NOT private: no data is
involved, only the two hypothetical inputs), and the test "could x0 have produced this output?" is
applied to every output. If the set of possible outputs did not depend on the input, the test would
pass for every output of both inputs:

- textbook Laplace: every output of x0 passes, only some of x1's — a single output can rule x0
  out (the leak of DESIGN §1);
- snapping: every output is a grid point c + Δ·kΛ or a bound, and every such point is a possible
  output of x0 (the ideal noise has full support; the mechanism's deep tail is accounted as δ):
  both rates are 1;
- discrete Laplace: every output is fl(k·γ) for an integer k, or a bound, whatever the input:
  both rates are 1. Its noise is sampled as the difference of two geometric variables by
  inversion in doubles (for this comparison only; a real release would need an exact sampler
  such as Canonne–Kamath–Steinke's).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from msgspec import Struct

from snapdp import _exact
from snapdp._exact import mpq
from snapdp._records import as_dict
from snapdp.analysis.discrete_laplace import DiscreteLaplace
from snapdp.mechanism import LaplaceMechanism, SnappingMechanism
from snapdp.parameters import SnappingParameters
from snapdp.snapping import output_from_index
from snapdp.verify.laplace import can_produce, laplace_mechanism_branches

__all__ = ["ATTACK_SAMPLES", "ATTACK_SEED", "AttackRates", "distinguisher_rates"]

ATTACK_SAMPLES = 20000
ATTACK_SEED = 2026

FloatArray = npt.NDArray[np.float64]


class AttackRates(Struct, frozen=True):
    """Fraction of outputs of x0 and of x1 that the test "could x0 have produced it?" passes."""

    mechanism: str
    input0: float
    input1: float
    rate0: float
    rate1: float
    samples: int
    seed: int

    @property
    def leaks(self) -> bool:
        """Whether some output of x1 was impossible under x0."""
        return self.rate1 < 1.0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, with ``leaks``."""
        d = as_dict(self)
        d["leaks"] = self.leaks
        return d


def _inputs(params: SnappingParameters, sens: mpq) -> tuple[float, float]:
    """x0: the value in [lower, upper] nearest 0 (doubles are finest there, so the textbook
    mechanism leaks most); x1 = x0 + Δ, or x0 − Δ if that leaves the bounds."""
    x0q = min(max(mpq(0), params.lower), params.upper)
    x1q = x0q + sens
    if x1q > params.upper:
        x1q = x0q - sens
    return _exact.rational_to_float(x0q), _exact.rational_to_float(x1q)


def _on_snapping_grid(params: SnappingParameters, outputs: FloatArray) -> npt.NDArray[np.bool_]:
    """Whether each output is one the snapping mechanism can return (a grid point or a bound)."""
    cell = params.grid * params.sensitivity
    ok: dict[float, bool] = {}
    for o in np.unique(outputs):
        t = (_exact.exact_rational(float(o)) - params.center) / cell + mpq(1, 2)
        k = int(t.numerator) // int(t.denominator)
        ok[float(o)] = any(output_from_index(params, j) == o for j in (k - 1, k, k + 1))
    return np.array([ok[float(o)] for o in outputs], dtype=bool)


def _on_quantum_grid(dl: DiscreteLaplace, outputs: FloatArray) -> npt.NDArray[np.bool_]:
    """Whether each output is one the sampler below can return for *some* input: a bound, or
    fl(k·γ) for an integer k (the same float arithmetic as :func:`_discrete_release`)."""
    gamma = _exact.rational_to_float(dl.quantum)
    lo, hi = _exact.rational_to_float(dl.lower), _exact.rational_to_float(dl.upper)
    ok: dict[float, bool] = {}
    for o in np.unique(outputs):
        v = float(o)
        k = np.round(np.float64(v) / gamma)
        ok[v] = v in (lo, hi) or (
            lo <= v <= hi and any(float(np.float64(k + j) * gamma) == v for j in (-1, 0, 1))
        )
    return np.array([ok[float(o)] for o in outputs], dtype=bool)


def _geometric(p: float, n: int, rng: np.random.Generator) -> FloatArray:
    """n draws of Geometric(p) on {0, 1, ...} by inversion, as integer-valued doubles."""
    u = 1.0 - rng.random(n)  # in (0, 1]
    g: FloatArray = np.floor(np.log(u) / np.log1p(-p))
    return g


def _discrete_release(
    dl: DiscreteLaplace, x: float, n: int, rng: np.random.Generator
) -> FloatArray:
    """clamp(fl(γ·(round(x/γ) + Z))) with Z = G1 − G2, computed in doubles (for this comparison
    only: not an exact sampler)."""
    p = float(dl.one_minus_q())
    z = _geometric(p, n, rng) - _geometric(p, n, rng)
    s = _setting_base(dl, x)
    gamma = _exact.rational_to_float(dl.quantum)
    lo, hi = _exact.rational_to_float(dl.lower), _exact.rational_to_float(dl.upper)
    out: FloatArray = np.clip((s + z) * gamma, lo, hi)
    return out


def _setting_base(dl: DiscreteLaplace, x: float) -> float:
    """round(x/γ) with ties toward +∞, exactly, as a double."""
    t = _exact.exact_rational(x) / dl.quantum + mpq(1, 2)
    return float(int(t.numerator) // int(t.denominator))


def distinguisher_rates(
    params: SnappingParameters,
    dl: DiscreteLaplace,
    *,
    samples: int = ATTACK_SAMPLES,
    seed: int = ATTACK_SEED,
    claim: tuple[mpq, mpq] | None = None,
) -> list[AttackRates]:
    """Mironov's test on textbook Laplace, snapping and discrete Laplace (module docstring).

    ``params``: the snapping mechanism's exact parameters (a rescaled run's (ε_r, Δ_r) included);
    ``claim``: the requested (ε, Δ) when they differ — the neighbours' distance and the textbook
    mechanism's parameters (default: the parameters' own)."""
    claim_eps, claim_sens = (params.epsilon, params.sensitivity) if claim is None else claim
    x0, x1 = _inputs(params, claim_sens)
    eps = _exact.rational_to_float(claim_eps)
    sens = _exact.rational_to_float(claim_sens)
    m_eps = _exact.rational_to_float(params.epsilon)
    m_sens = _exact.rational_to_float(params.sensitivity)
    lo, hi = _exact.rational_to_float(params.lower), _exact.rational_to_float(params.upper)
    rngs = [np.random.default_rng([seed, i]) for i in range(6)]
    rows = []
    textbook = [LaplaceMechanism(eps, sens, rng=rngs[i]) for i in (0, 1)]
    branches = laplace_mechanism_branches(x0, textbook[0].scale)
    rates = [
        float(can_produce(branches, m.release_many(np.full(samples, x))).mean())
        for m, x in zip(textbook, (x0, x1), strict=True)
    ]
    rows.append(AttackRates("textbook Laplace", x0, x1, rates[0], rates[1], samples, seed))
    # the mechanism of `params` exactly (they may be a rescaled run: not rescaled again)
    snap = [SnappingMechanism(m_eps, m_sens, lo, hi, rng=rngs[i], rescale=False) for i in (2, 3)]
    rates = [
        float(_on_snapping_grid(params, m.release_many(np.full(samples, x))).mean())
        for m, x in zip(snap, (x0, x1), strict=True)
    ]
    rows.append(AttackRates("snapping", x0, x1, rates[0], rates[1], samples, seed))
    rates = [
        float(_on_quantum_grid(dl, _discrete_release(dl, x, samples, rngs[4 + i])).mean())
        for i, x in enumerate((x0, x1))
    ]
    rows.append(AttackRates("discrete Laplace", x0, x1, rates[0], rates[1], samples, seed))
    return rows
