"""The exact exponential mechanism (snapdp.exponential) and its quantile loss
(snapdp.data.statistics.math.exponential_grid), against independent oracles: exact
rationals, brute force
over neighbouring datasets on a tiny domain, and a chi-square test with a fixed seed."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from fractions import Fraction

import gmpy2
import numpy as np
import numpy.typing as npt
import pytest

from snapdp.data.statistics.math import exponential_grid as eq
from snapdp.errors import ParameterError
from snapdp.exponential import (
    ExponentialParameters,
    exponential_parameters,
    probabilities,
    sample,
    uniform_below,
)
from snapdp.randomness import SeededSource


class _Words:
    """A bit source returning given integers (each as ``words`` 64-bit words); counts reads."""

    def __init__(self, values: list[int], words: int) -> None:
        self._values = list(values)
        self._words = words
        self.read = 0

    def words(self, n: int) -> npt.NDArray[np.uint64]:
        assert n == self._words
        x = self._values.pop(0)
        self.read += n
        out = [(x >> (64 * (n - 1 - i))) & ((1 << 64) - 1) for i in range(n)]
        return np.array(out, dtype=np.uint64)

    def word(self) -> int:
        raise AssertionError("not used")

    def unread(self, words: npt.NDArray[np.uint64]) -> None:
        raise AssertionError("not used")


class _Counting:
    """A seeded source that counts the words read."""

    def __init__(self, seed: int) -> None:
        self._inner = SeededSource(np.random.default_rng(seed))
        self.read = 0

    def words(self, n: int) -> npt.NDArray[np.uint64]:
        self.read += n
        return self._inner.words(n)

    def word(self) -> int:
        self.read += 1
        return self._inner.word()

    def unread(self, words: npt.NDArray[np.uint64]) -> None:
        raise AssertionError("not used")


def _oracle(params: ExponentialParameters, losses: list[int]) -> list[Fraction]:
    """r**−min(d, C) normalised, with Fraction powers (not the mechanism's integer table)."""
    r = Fraction(params.numerator, 1 << params.shift)
    w = [r ** -min(d, params.cap) for d in losses]
    total = sum(w, Fraction(0))
    return [x / total for x in w]


def _exp_upper(x: Fraction) -> Fraction:
    """A rational >= exp(x) (MPFR rounded up)."""
    with gmpy2.context(precision=200, round=gmpy2.RoundUp):
        e = gmpy2.exp(gmpy2.mpq(x.numerator, x.denominator))
    return Fraction(*e.as_integer_ratio())


@pytest.mark.parametrize("eps", [Fraction(1, 3), Fraction(1), Fraction(5, 2), Fraction(1, 20)])
@pytest.mark.parametrize("sens", [1, 3])
def test_base_never_exceeds_the_ideal_and_is_close(eps: Fraction, sens: int) -> None:
    p = exponential_parameters(eps, sens, 7)
    r = p.base
    assert 1 < r <= _exp_upper(eps / (2 * sens))
    assert r ** (2 * sens) <= _exp_upper(eps)  # ε_used <= ε, exactly
    assert p.epsilon_used <= float(eps) * (1 + 1e-15)
    assert p.epsilon_used >= float(eps) * (1 - 2**-15)


def test_probabilities_equal_the_oracle_exactly() -> None:
    for eps, losses in [
        (Fraction(1, 3), [0, 1, 2, 3, 5, 8]),
        (Fraction(2), [4, 0, 0, 7, 1]),
        (Fraction(1, 10), [0, 10**9, 3, 2]),  # a loss past the cap is capped
    ]:
        p = exponential_parameters(eps, 1, len(losses))
        assert probabilities(p, losses) == _oracle(p, losses)
    p = exponential_parameters(Fraction(1, 10), 1, 4)
    assert p.cap < 10**9
    assert probabilities(p, [0, 10**9, 3, 2])[1] == probabilities(p, [0, p.cap, 3, 2])[1]


def test_the_draw_inverts_the_cumulative_weights() -> None:
    losses = [2, 0, 1, 5]
    p = exponential_parameters(Fraction(1), 1, 4)
    words = p.draw_words
    weights = [p.numerator ** (p.cap - d) * (1 << (p.shift * d)) for d in losses]
    z = sum(weights)
    cum = list(itertools.accumulate(weights))
    for x in [0, cum[0] - 1, cum[0], cum[1] - 1, cum[1], cum[2], z - 1, z, 5 * z + cum[0]]:
        j = sample(p, losses, _Words([x], words))  # type: ignore[arg-type]
        assert j == next(i for i, c in enumerate(cum) if (x % z) < c)
    # a draw in the top 2**K mod Z values is rejected and drawn again
    k = 64 * words
    limit = ((1 << k) // z) * z
    assert limit < 1 << k
    src = _Words([limit, cum[1]], words)
    assert sample(p, losses, src) == 2  # type: ignore[arg-type]
    assert src.read == 2 * words


def test_chi_square_with_a_fixed_seed() -> None:
    losses = [3, 1, 0, 0, 2, 6]
    p = exponential_parameters(Fraction(1, 2), 1, len(losses))
    probs = [float(x) for x in _oracle(p, losses)]
    src = SeededSource(np.random.default_rng(20261125))
    n = 20000
    counts = Counter(sample(p, losses, src) for _ in range(n))
    chi2 = sum((counts[j] - n * pr) ** 2 / (n * pr) for j, pr in enumerate(probs))
    # 5 degrees of freedom: P(chi2 > 35.9) ≈ 1e-6
    assert chi2 < 35.9


def test_work_is_fixed_by_public_parameters() -> None:
    p = exponential_parameters(Fraction(1, 3), 1, 101)
    reads = set()
    for losses in ([0] * 101, [abs(50 - j) for j in range(101)], [10**6] * 100 + [0]):
        src = _Counting(7)
        for _ in range(20):
            sample(p, losses, src)  # type: ignore[arg-type]
        reads.add(src.read)
    assert reads == {20 * p.draw_words}


def test_uniform_below_refuses_a_total_past_the_words() -> None:
    with pytest.raises(ParameterError):
        uniform_below(1 << 64, 1, _Words([0], 1))  # type: ignore[arg-type]


def test_too_small_epsilon_is_refused_by_name() -> None:
    with pytest.raises(ParameterError) as info:
        exponential_parameters(Fraction(1, 1000), 1, 4096)
    assert info.value.parameter == "epsilon"


# -- the quantile loss ----------------------------------------------------------------------------
def _brute_loss(values: list[int], p: Fraction, cells: int) -> list[int]:
    """b·(distance from p·n to [#{x < j}, #{x <= j}]), from the values themselves."""
    n = len(values)
    out = []
    for j in range(cells):
        lo, hi = sum(v < j for v in values), sum(v <= j for v in values)
        target = p * n
        dist = max(lo - target, target - hi, Fraction(0))
        out.append(int(dist * p.denominator))
    return out


def _counts(values: list[int], cells: int) -> list[int]:
    return [sum(v == j for v in values) for j in range(cells)]


@pytest.mark.parametrize("p", [Fraction(1, 2), Fraction(1, 4), Fraction(2, 3), Fraction(9, 10)])
def test_loss_matches_the_rank_distance(p: Fraction) -> None:
    rng = np.random.default_rng(3)
    for _ in range(30):
        values = [int(v) for v in rng.integers(0, 6, size=int(rng.integers(0, 12)))]
        assert eq.losses(_counts(values, 6), p) == _brute_loss(values, p, 6)
        assert min(eq.losses(_counts(values, 6), p)) == 0


def _datasets(cells: int, size: int) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = []
    for n in range(size + 1):
        out += list(itertools.combinations_with_replacement(range(cells), n))
    return out


@pytest.mark.parametrize("p", [Fraction(1, 2), Fraction(1, 3), Fraction(3, 4)])
@pytest.mark.parametrize("k", [1, 2])
def test_privacy_ratio_brute_force_over_neighbours(p: Fraction, k: int) -> None:
    """Every dataset of <= 3 values on 4 cells against every neighbour adding k rows: the exact
    output probabilities differ by a factor <= r**(2Δ) <= e^ε (an exact comparison)."""
    cells, eps = 4, Fraction(1, 2)
    params = eq.parameters(eps, p, k, cells)
    bound = params.base ** (2 * params.sensitivity)
    assert bound <= _exp_upper(eps)
    worst = Fraction(1)
    for data in _datasets(cells, 3):
        base = probabilities(params, eq.losses(_counts(list(data), cells), p))
        for extra in itertools.combinations_with_replacement(range(cells), k):
            other = list(data) + list(extra)
            probs = probabilities(params, eq.losses(_counts(other, cells), p))
            for x, y in zip(base, probs, strict=True):
                worst = max(worst, x / y, y / x)
    assert worst <= bound
    assert worst > params.base**params.sensitivity  # the factor 2 is needed: the test can fail


def test_rank_bound_holds_exactly() -> None:
    """P(the released cell's rank distance > the stated ±) <= α, from the exact distribution."""
    rng = np.random.default_rng(11)
    cells = 50
    for p in (Fraction(1, 2), Fraction(1, 4), Fraction(9, 10)):
        params = eq.parameters(Fraction(1, 2), p, 1, cells)
        for alpha in (0.05, 1e-3):
            rank = eq.rank_bound(params, p, alpha)
            for shape in ("uniform", "skewed", "point"):
                if shape == "uniform":
                    values = rng.integers(0, cells, size=500)
                elif shape == "skewed":
                    values = np.minimum(rng.exponential(4, size=500).astype(int), cells - 1)
                else:
                    values = np.full(500, 17)
                counts = [int(c) for c in np.bincount(values, minlength=cells)]
                loss = eq.losses(counts, p)
                probs = probabilities(params, loss)
                miss = sum(
                    (pr for pr, d in zip(probs, loss, strict=True) if d / p.denominator > rank),
                    Fraction(0),
                )
                assert miss <= alpha
    # and it is not vacuous: under 20 ranks for a median over 50 cells at ε = 1/2
    med = eq.parameters(Fraction(1, 2), Fraction(1, 2), 1, cells)
    assert eq.rank_bound(med, Fraction(1, 2), 0.05) < 20


def test_grid_integer_and_decimal() -> None:
    g = eq.quantile_grid(Fraction(0), Fraction(100), True, None)
    assert g.cells == 101 and g.value(0) == 0 and g.value(100) == 100 and g.half_width == 0
    g = eq.quantile_grid(Fraction(0), Fraction(100), True, Fraction(10))
    assert g.cells == 11 and g.value(0) == Fraction(9, 2) and g.value(10) == 100
    d = eq.quantile_grid(Fraction(0), Fraction(1), False, None)
    assert d.cells == 1024 and d.value(0) == Fraction(1, 2048)
    with pytest.raises(ParameterError) as info:
        eq.quantile_grid(Fraction(0), Fraction(10**6), True, None)
    assert info.value.parameter == "resolution"
    assert math.isclose(float(d.width), 1 / 1024)


def test_the_ladder_path_equals_the_table_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a table (large parameters), each weight comes from a fixed-length ladder: the
    same exact distribution, the same words per draw."""
    import snapdp.exponential as mod

    losses = [3, 0, 1, 10**6, 2, 7]
    p = exponential_parameters(Fraction(1, 3), 2, len(losses))
    table = probabilities(p, losses)
    words = []
    for bits in (mod._TABLE_BITS, 0):
        monkeypatch.setattr(mod, "_TABLE_BITS", bits)
        assert mod._uses_table(p) == (bits > 0)
        assert probabilities(p, losses) == table == _oracle(p, losses)
        src = _Counting(3)
        draws = [sample(p, losses, src) for _ in range(50)]  # type: ignore[arg-type]
        words.append((src.read, draws))
    assert words[0] == words[1]  # same source, same draws, same words read
    three, four = gmpy2.mpz(3), gmpy2.mpz(4)  # P = 3, 2**s = 4 (s = 2), 4 bits
    assert mod._ladder(three, four, 0, 4, 2 * 15) == 1
    assert mod._ladder(three, four, 13, 4, 2 * 2) == 3**13


def test_a_long_draw_reads_its_words_first_one_most_significant() -> None:
    """Issue 32: the words of a draw are joined in one conversion (it was a shift per word,
    quadratic in the thousands of words a small ε needs); the integer is the same."""
    words = 3000
    stream = SeededSource(np.random.default_rng(5)).words(words)
    expected = 0
    for w in stream:
        expected = (expected << 64) | int(w)
    total = (1 << (64 * words)) - 1  # every draw but the last integer is kept as it is
    assert expected < total
    assert uniform_below(total, words, SeededSource(np.random.default_rng(5))) == expected


@pytest.mark.parametrize(
    ("epsilon", "candidates"), [(Fraction(1, 100), 4000), (Fraction(1, 50), 300)]
)
def test_the_half_tables_give_the_ladders_weights_exactly(
    epsilon: Fraction, candidates: int
) -> None:
    """Where the whole table does not fit, the weights come from two half tables (the high and
    low bits of e = C − v); each is the ladder's integer, bit for bit, at losses across 0..C+2 (so
    the draws from a seed are unchanged), and the half tables are what is used."""
    from snapdp import exponential as ex

    params = exponential_parameters(epsilon, 1, candidates)
    assert not ex._uses_table(params) and ex._split(params) is not None
    cap, shift = params.cap, params.shift
    steps = cap.bit_length()
    excess = shift * ((1 << steps) - 1 - cap)
    p, two = gmpy2.mpz(params.numerator), gmpy2.mpz(1) << shift
    # one draw's worth of losses spread over 0..C+2 (their low bits take every residue)
    losses = [(k * (cap + 3)) // candidates for k in range(candidates - 4)]
    losses += [cap - 1, cap, cap + 1, cap + 2]
    got = ex._weights(params, losses)
    checked = range(0, candidates, max(1, candidates // 500))  # the ladder is the slow oracle
    for k in [*checked, *range(candidates - 4, candidates)]:
        assert got[k] == ex._ladder(p, two, cap - min(losses[k], cap), steps, excess)
