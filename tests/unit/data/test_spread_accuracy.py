"""The ± of a variance and a std from the released moments holds whenever each part's noise is
within its own ± (docs/utility.md, "Variance and std"): checked against random data and every
extreme noise, with fixed seeds."""

from __future__ import annotations

import itertools
import math

import numpy as np

from snapdp.data.statistics.kinds.moments import spread_accuracy, std_accuracy


def test_the_released_moment_bound_holds_at_every_extreme_noise() -> None:
    rng = np.random.default_rng(33)
    w = 100.0
    for _ in range(300):
        n = int(rng.integers(5, 400))
        q = rng.integers(0, 101, size=n) * rng.choice([0.1, 1.0])
        x = 2 * q - w  # w = 2q − L − U with L = 0, U = W
        s1, s2 = float(x.sum()), float((x * x).sum())
        truth = (s2 / n - (s1 / n) ** 2) / 4
        a2, a1, an = rng.uniform(0, 5e4), rng.uniform(0, 3e3), rng.uniform(0, 30)
        for e2, e1, en in itertools.product((-1, 0, 1), repeat=3):
            nn = n + en * an
            if not nn > 0:
                continue
            m1 = min(max((s1 + e1 * a1) / nn, -w), w)
            m2 = min(max((s2 + e2 * a2) / nn, 0.0), w * w)
            var = min(max(m2 - m1 * m1, 0.0), w * w) / 4
            a_var = spread_accuracy((a2, a1, an), nn, m1, m2, w)
            assert abs(var - truth) <= a_var * (1 + 1e-9) + 1e-9
            assert a_var <= (a2 + 2 * w * a1 + 3 * w * w * an) / (4 * nn) * (1 + 1e-12)
            root = std_accuracy(var, a_var, w / 2)
            assert abs(math.sqrt(var) - math.sqrt(truth)) <= root * (1 + 1e-9) + 1e-9
            assert root <= math.sqrt(a_var) * (1 + 1e-12)
