"""The log premise check (docs/fast-path.md, F3) gives the verdict of the exact MPFR comparison
for every element, while comparing in MPFR only what its double-precision test does not clear."""

from __future__ import annotations

import math

import gmpy2
import numpy as np
import pytest

from snapdp import fast_plan


def _exact_verdict(us: np.ndarray, logs: np.ndarray) -> bool:
    """The check as it was: every element in MPFR at 200 bits."""
    ctx = gmpy2.context(precision=200)
    for u, got in zip(us.tolist(), logs.tolist(), strict=True):
        if not math.isfinite(got):
            return False
        true = ctx.log(gmpy2.mpfr(u, 200))
        if abs(ctx.sub(gmpy2.mpfr(got, 200), true)) > fast_plan.LOG_PREMISE * abs(true):
            return False
    return True


@pytest.mark.parametrize("ulps", [0, 1, 8, 15, 16, 17, 24, 64])
def test_the_shared_check_agrees_with_the_exact_one(ulps: int) -> None:
    us = fast_plan._log_probe()[::7]
    true = fast_plan._true_logs(us)
    rng = np.random.default_rng(ulps)
    for logs in (
        np.log(us) * (1 + ulps * 2.0**-52),
        np.log(us) * (1 - ulps * 2.0**-52),
        np.log(us) * (1 + rng.integers(-ulps, ulps + 1, us.size) * 2.0**-52),
    ):
        assert fast_plan._within_premise(true, logs) == _exact_verdict(us, logs)


def test_a_non_finite_log_fails_the_check() -> None:
    us = fast_plan._log_probe()[:50]
    logs = np.log(us)
    logs[3] = np.nan
    assert not fast_plan._within_premise(fast_plan._true_logs(us), logs)
