"""The ± of a sample variance and std from the parts' combined error (docs/utility.md, "Variance
and std", the sample forms): on small data sets in exact rationals, the identity
(ñ − 1)(ŝ² − s²) = Z_s − ñ·δ² holds, and with the errors at the edges of the events the proof
uses (Z_s = 0 or ±T_Z at the true weights, ñ·δ = ±T₁), the released value (clamps as the
release path makes them) lies within the stated ± of the exact sample variance; fixed seeds."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np

from snapdp.data.statistics.kinds.moments import std_accuracy
from snapdp.data.statistics.math.ratio_bound import sample_error, sample_plan
from snapdp.data.statistics.math.sum_bound import combination_accuracy, noise_kind
from snapdp.rescaling import mechanism_parameters

W = 4  # w = 2q − L − U for q in [0, 4]: w in {−4, −2, 0, 2, 4}
N = 100
ALPHA = 0.05


def _kind(eps: Fraction, sens: int, lo: int, hi: int):  # type: ignore[no-untyped-def]
    return noise_kind(mechanism_parameters(eps, sens, lo, hi))


EPS = 40  # a large ε: cells of a few rows are released inside their bounds
SQ = _kind(Fraction(1000 * EPS, 4146), W * W, 0, N * W * W)
SUM = _kind(Fraction(1414 * EPS, 4146), W, -N * W, N * W)
COUNT = _kind(Fraction(1732 * EPS, 4146), 1, 0, N)
KINDS = (SQ, SUM, COUNT)


def _released(a: Fraction, b: Fraction, n: Fraction) -> Fraction:
    """The released sample variance of w (w units), exactly as the release path clamps:
    the ratios into [−W, W] and [0, W²], the population value into [0, W²], the sample value
    into [0, 2W²] (in quanta these are 4× the values' variances)."""
    m1 = min(max(b / n, Fraction(-W)), Fraction(W))
    m2 = min(max(a / n, Fraction(0)), Fraction(W * W))
    pop = min(max(m2 - m1 * m1, Fraction(0)), Fraction(W * W))
    return min(max(pop * n / (n - 1), Fraction(0)), Fraction(2 * W * W))


def _data_sets() -> list[list[int]]:
    """Every pair and triple of values, and seeded larger sets."""
    values = range(-W, W + 1, 2)
    out = [list(c) for k in (2, 3) for c in itertools.combinations_with_replacement(values, k)]
    rng = np.random.default_rng(3306)
    for size in (5, 12, 40):
        out += [list(2 * rng.integers(0, W + 1, size=size) - W) for _ in range(3)]
    return [[int(x) for x in xs] for xs in out]


def test_the_identity_and_the_bound_at_the_edges_of_the_events() -> None:
    checked = 0
    for xs in _data_sets():
        n = len(xs)
        a_true, b_true = sum(Fraction(x * x) for x in xs), sum(Fraction(x) for x in xs)
        m = b_true / n
        s2 = (a_true - n * m * m) / (n - 1)  # the exact sample variance of w
        t1 = combination_accuracy(SUM, ((abs(float(m)), COUNT),), ALPHA / 10)
        # (a weight of 0 raised to 1e-9: T only grows with the weights)
        rest = ((max(2 * abs(float(m)), 1e-9), SUM), (max(abs(float(m * m - s2)), 1e-9), COUNT))
        tz = combination_accuracy(SQ, rest, ALPHA * 9 / 10)
        for en, s_b, s_z in itertools.product((-0.4, 0.0, 0.7), (-1, 1), (-1, 0, 1)):
            # the released parts (doubles), then their exact errors
            nn = float(n + en)
            b = float(b_true + m * Fraction(en) + s_b * Fraction(t1))  # ñ·δ = ±T₁
            eb = Fraction(b) - b_true
            e_n = Fraction(nn) - n
            ea = s_z * Fraction(tz) + 2 * m * eb - (m * m - s2) * e_n  # Z_s = 0 or ±T_Z
            a_raw = a_true + ea
            a = float(max(a_raw, Fraction(0)))  # Σ̂w² is clamped at 0
            n_hat, b_hat = Fraction(nn), Fraction(b)
            delta = b_hat / n_hat - m
            z_s = (Fraction(a_raw) if a > 0 else a_raw) - a_true
            z_s += -2 * m * eb + (m * m - s2) * e_n
            raw = n_hat / (n_hat - 1) * (Fraction(a_raw) / n_hat - (b_hat / n_hat) ** 2)
            if a > 0:  # the identity, exactly
                assert (n_hat - 1) * (raw - s2) == z_s - n_hat * delta * delta
            if not nn > 1 or abs(b_hat / n_hat) > W or Fraction(a) / n_hat > W * W:
                continue  # ñ <= 1 or a clamped ratio: the fallback or the whole range
            released = _released(Fraction(a), b_hat, n_hat)
            bound = sample_error(KINDS, ALPHA, nn, a, b, float(W))
            assert abs(released - s2) <= Fraction(bound) * (1 + Fraction(1, 10**12))
            # and the std (values: a quarter of w's variance, w's std halved)
            var, root = float(released) / 4, std_accuracy(float(released) / 4, bound / 4, W)
            assert abs(math.sqrt(var) - math.sqrt(float(s2) / 4)) <= root * (1 + 1e-9) + 1e-12
            checked += 1
    assert checked > 300


def test_the_bound_is_at_most_its_public_weights_figure_and_near_the_edge() -> None:
    """Every row's bound is at most the first iterate (T_Z + T₁²/ñ)/(ñ − 1) at the public
    weights (|m| <= W, max(m², s²) <= 2W²), and on a large cell at most 1.3× the error at the
    edge of its event (Z_s = T_Z at the true weights, δ = 0): the statement is tight."""
    t_z, t_1 = sample_plan(KINDS, ALPHA, float(W))
    rng = np.random.default_rng(3307)
    for _ in range(6):
        xs = 2 * rng.integers(0, W + 1, size=int(rng.integers(50, 99))) - W
        n = len(xs)
        m, s2 = float(xs.mean()), float(xs.var(ddof=1))
        bound = sample_error(KINDS, ALPHA, float(n), float((xs * xs).sum()), float(xs.sum()), W)
        assert bound <= (t_z + t_1 * t_1 / n) / (n - 1)
        rest = ((2 * abs(m), SUM), (abs(m * m - s2), COUNT))
        edge = combination_accuracy(SQ, rest, ALPHA * 9 / 10) / (n - 1)
        assert edge <= bound <= 1.3 * edge
