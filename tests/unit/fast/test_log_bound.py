"""The premise of the error bound (docs/fast-path.md, F3): np.log and math.log are within
2**-48 relative (16 ulps) of the true logarithm on doubles in (0, 1), checked against MPFR at 200
bits on ordinary draws of U*, on U* near 1 and near 2**-64."""

from __future__ import annotations

import math

import gmpy2
import numpy as np

from snapdp.fast_plan import uniform as _uniform

PREMISE = 2.0**-48


def _inputs() -> np.ndarray:
    rng = np.random.default_rng(77)
    words = rng.integers(0, 2**64, 40_000, dtype=np.uint64)
    words[1::2] |= np.uint64(1 << 11)
    ordinary = _uniform(words)
    near_one = 1.0 - np.arange(1, 3001) * 2.0**-53
    tiny = np.ldexp(1.0 + np.arange(0, 3000) * 2.0**-40, -64)
    return np.concatenate([ordinary, near_one, tiny])


def _worst_relative_error(us: np.ndarray, logs: np.ndarray) -> float:
    ctx = gmpy2.context(precision=200)
    worst = 0.0
    for u, got in zip(us.tolist(), logs.tolist(), strict=True):
        true = ctx.log(gmpy2.mpfr(u, 200))
        rel = abs(ctx.div(ctx.sub(gmpy2.mpfr(got, 200), true), true))
        worst = max(worst, float(rel))
    return worst


def test_np_log_within_premise() -> None:
    us = _inputs()
    assert _worst_relative_error(us, np.log(us)) <= PREMISE


def test_math_log_within_premise() -> None:
    us = _inputs()
    logs = np.array([math.log(u) for u in us.tolist()])
    assert _worst_relative_error(us, logs) <= PREMISE
