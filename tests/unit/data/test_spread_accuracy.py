"""The ± of a ratio mean, a variance and a std from the parts' combined error holds on the events
its proof uses (docs/utility.md, "Means" and "Variance and std"): every combination of errors at
the edges of those events, on random data, with fixed seeds."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np

from snapdp.data.statistics.kinds.moments import std_accuracy
from snapdp.data.statistics.math.ratio_bound import mean_error, variance_error
from snapdp.data.statistics.math.sum_bound import combination_accuracy, noise_kind
from snapdp.rescaling import mechanism_parameters

W = 100.0
N = 10**6


def _kind(eps: Fraction, sens: int, lo: int, hi: int):  # type: ignore[no-untyped-def]
    return noise_kind(mechanism_parameters(eps, sens, lo, hi))


SQ = _kind(Fraction(1000, 4146), 10_000, 0, N * 10_000)
SUM = _kind(Fraction(1414, 4146), 100, -N * 100, N * 100)
COUNT = _kind(Fraction(1732, 4146), 1, 0, N)
MEAN_SUM, MEAN_COUNT = _kind(Fraction(1, 2), 100, -N * 100, N * 100), _kind(Fraction(1, 2), 1, 0, N)


def _data(rng: np.random.Generator) -> tuple[int, float, float]:
    n = int(rng.integers(20, 2000))
    x = 2 * rng.integers(0, 101, size=n) * rng.choice([0.2, 1.0]) - W  # w in [−W, W]
    return n, float(x.sum()), float((x * x).sum())


def test_the_mean_bound_holds_at_the_edge_of_its_event() -> None:
    rng = np.random.default_rng(33)
    alpha = 0.05
    for _ in range(20):
        n, s1, _ = _data(rng)
        m = s1 / n
        t = combination_accuracy(MEAN_SUM, ((abs(m), MEAN_COUNT),), alpha)
        for en, sign in itertools.product((-0.3 * n, -5.0, 0.0, 5.0, 0.3 * n), (-1, 1)):
            nn, total = n + en, s1 + m * en + sign * t  # e_S − m·e_n = ±T(|m|)
            released = min(max(total / nn, -W), W)
            assert abs(released - m) <= mean_error((MEAN_SUM, MEAN_COUNT), alpha, nn, total, W)


def test_the_variance_bound_holds_at_the_edge_of_its_events() -> None:
    rng = np.random.default_rng(34)
    alpha = 0.05
    for _ in range(12):
        n, s1, s2 = _data(rng)
        m1, sigma2 = s1 / n, s2 / n - (s1 / n) ** 2
        truth = sigma2 / 4
        t1 = combination_accuracy(SUM, ((abs(m1), COUNT),), alpha / 10)
        rest = ((2 * abs(m1), SUM), (abs(m1 * m1 - sigma2), COUNT))
        tz = combination_accuracy(SQ, rest, alpha * 9 / 10)
        for en, s_b, s_z in itertools.product((-0.2 * n, 0.0, 0.2 * n), (-1, 1), (-1, 0, 1)):
            eb = m1 * en + s_b * t1  # e_S − m·e_n = ±T_1
            ea = s_z * tz + 2 * m1 * eb - (m1 * m1 - sigma2) * en  # Z = 0 or ±T_Z
            nn, a, b = n + en, max(s2 + ea, 0.0), s1 + eb
            if abs(b / nn) > W or a / nn > W * W:
                continue  # a clamped moment: the row states the whole range
            var = min(max(a / nn - (b / nn) ** 2, 0.0), W * W) / 4
            a_var = variance_error((SQ, SUM, COUNT), alpha, nn, a, b, W) / 4
            assert abs(var - truth) <= a_var * (1 + 1e-12)
            root = std_accuracy(var, a_var, W / 2)
            assert abs(math.sqrt(var) - math.sqrt(truth)) <= root * (1 + 1e-9) + 1e-12
