"""An exact exponential mechanism over a finite candidate set (docs/exponential.md).

The mechanism picks candidate j with probability proportional to r**(−min(dⱼ, C)), where dⱼ >= 0
is an integer *loss* (a utility turned around), Δ the most one neighbour can change any dⱼ, r a
rational base and C a public cap on the loss. Every probability is an exact rational, and the
sampler draws exactly from it:

* **The base.** r = P/2**s, the largest such rational with r <= exp(ε/(2Δ)): P is the floor of
  2**s·exp(ε/(2Δ)) computed by MPFR rounded toward zero, so r never exceeds the ideal base. The
  mechanism is then pure ε_used-DP with ε_used = 2Δ·ln r <= ε (the usual argument: a neighbour
  moves each weight by a factor at most r**Δ and the total by at most r**Δ). Any ε charged for it
  must be at least ε_used; the callers charge ε.
* **The cap.** min(·, C) is 1-Lipschitz, so capping keeps Δ: privacy does not depend on C. C is
  chosen from public parameters so that candidates at loss >= C carry a negligible share
  (m·r**−C <= 2**−64 of the best candidate's weight), which only the accuracy bound needs.
* **Exact weights.** Multiplying every weight by P**C gives integers Wⱼ = T[min(dⱼ, C)] with
  T[v] = P**(C−v)·2**(s·v). When the whole table T[0..C] fits in 16 MiB it is computed from
  public parameters and a weight is a look-up; otherwise, when two half tables fit there (the
  high and the low bits of e = C − v, see ``_halves``), a weight is the product of one entry of
  each, of the same sizes whatever e; otherwise each weight comes from a ladder over
  the L = bitlen(C) bits of e = C − v: square, then multiply by P (bit set) or by 2**s (bit
  clear, an integer of P's bit length), giving P**e·2**(s·(2**L − 1 − e)), then shift right by
  s·(2**L − 1 − C). Every step's operands have (nearly) the same sizes whatever e, so the work,
  operand sizes included, does not depend on the losses.
* **One uniform integer.** Z = ΣWⱼ <= m·T[0] =: Z_max (public). The sampler reads K/64 words,
  K = bitlen(Z_max) + 128 fixed by public parameters, as X uniform on [0, 2**K). If
  X < ⌊2**K/Z⌋·Z it returns the j with cumₓ(j−1) <= X mod Z < cum(j) (a scan over all m
  candidates); else it draws again. The retry has probability < Z/2**K <= 2**−128: the number of
  words read, and the work, are fixed except on that event, and the output's distribution is
  exactly Wⱼ/Z whether or not it happens.

Nothing here is floating point: the weights, the total and the draw are integers.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from fractions import Fraction

import gmpy2
import numpy as np
from msgspec import Struct

from snapdp._rational import shown_rational
from snapdp._validation import check_epsilon
from snapdp.errors import ParameterError
from snapdp.randomness import BitSource

__all__ = [
    "MAX_TABLE_BITS",
    "ExponentialParameters",
    "exponential_parameters",
    "probabilities",
    "sample",
    "uniform_below",
]

MAX_TABLE_BITS = 1 << 30
"""The most bits (128 MiB) the candidates' weights may take together; larger is refused."""

_TABLE_BITS = 1 << 27  # a table of every weight T[0..C] is built when it fits in 16 MiB

_TAIL_BITS = 64  # the cap C leaves at most m·2**-64 of the best weight beyond it
_RETRY_BITS = 128  # slack bits of the uniform draw: a retry has probability <= 2**-128


class ExponentialParameters(Struct, frozen=True):
    """The public parameters of one exact exponential mechanism.

    ``epsilon``: the ε asked for; ``sensitivity``: Δ (an integer, of the loss); ``candidates``:
    m; base r = ``numerator``/2**``shift``; ``cap``: C. ``epsilon_used`` = 2Δ·ln r <= ε.
    """

    epsilon: Fraction
    sensitivity: int
    candidates: int
    numerator: int
    shift: int
    cap: int

    @property
    def base(self) -> Fraction:
        """r = P/2**s exactly."""
        return Fraction(self.numerator, 1 << self.shift)

    @property
    def log_base(self) -> float:
        """ln r, rounded down (for accuracy statements: a smaller ln r states a wider ±)."""
        with gmpy2.context(precision=128, round=gmpy2.RoundDown):
            lr = gmpy2.log(gmpy2.mpq(self.numerator, 1 << self.shift))
            return float(gmpy2.mpfr(lr, 53))

    @property
    def epsilon_used(self) -> float:
        """2Δ·ln r, the ε the mechanism actually spends, rounded up (always <= ``epsilon``)."""
        with gmpy2.context(precision=128, round=gmpy2.RoundUp):
            lr = 2 * self.sensitivity * gmpy2.log(gmpy2.mpq(self.numerator, 1 << self.shift))
            return float(gmpy2.mpfr(lr, 53))

    @property
    def draw_words(self) -> int:
        """The 64-bit words one draw reads (fixed by the public parameters)."""
        return -(-(_total_bound(self).bit_length() + _RETRY_BITS) // 64)

    def loss_bound(self, alpha: float) -> float:
        """t such that P(the output's loss >= t) <= ``alpha`` when some candidate has loss 0:
        ln((m − 1)/α)/ln r (at least one candidate carries weight r**0 = 1, the others at most
        r**−t each). Valid while t <= C, which holds for every α >= 2**−64."""
        if not 0 < alpha < 1:
            raise ParameterError(f"`alpha` must lie in (0, 1), not {alpha!r}", parameter="alpha")
        # ln((m − 1)/α) in doubles is within a few ulps; 2**-40 covers it and the division
        t = max(math.log(max(self.candidates - 1, 1) / alpha), 0.0) / self.log_base
        return math.nextafter(t * (1 + 2**-40) + 2**-40, math.inf)


def exponential_parameters(
    epsilon: object, sensitivity: int, candidates: int
) -> ExponentialParameters:
    """The parameters for loss sensitivity Δ = ``sensitivity`` over ``candidates`` candidates.

    The shift s = 16 + bitlen(⌈1/x⌉) (x = ε/(2Δ)) keeps ln r within 2**−16·x of x, so
    ε_used >= ε·(1 − 2**−16). A ParameterError when the m weights would pass
    :data:`MAX_TABLE_BITS` bits (ε too small for the number of candidates).
    """
    eps = check_epsilon("epsilon", epsilon)
    if not isinstance(sensitivity, int) or isinstance(sensitivity, bool) or sensitivity < 1:
        raise ParameterError(
            f"`sensitivity` must be an integer >= 1, not {sensitivity!r}", parameter="sensitivity"
        )
    if not isinstance(candidates, int) or isinstance(candidates, bool) or candidates < 1:
        raise ParameterError(
            f"`candidates` must be an integer >= 1, not {candidates!r}", parameter="candidates"
        )
    x = eps / (2 * sensitivity)
    shift = 16 + math.ceil(1 / x).bit_length()
    with gmpy2.context(precision=shift + 64, round=gmpy2.RoundToZero):
        e = gmpy2.exp(gmpy2.mpq(x.numerator, x.denominator))
        numerator = int(gmpy2.floor(e * (1 << shift)))
    if numerator <= 1 << shift:  # cannot happen (x >= 2**-(shift-16)); kept as a guard
        raise ParameterError(f"`epsilon` {shown_rational(eps)} is too small", parameter="epsilon")
    log_r = math.log(numerator) - shift * math.log(2)
    cap = math.ceil((math.log(candidates) + _TAIL_BITS * math.log(2)) / log_r * (1 + 2**-30)) + 1
    params = ExponentialParameters(eps, sensitivity, candidates, numerator, shift, cap)
    bits = candidates * cap * max(numerator.bit_length(), shift)  # m weights of ~C·s bits
    if bits > MAX_TABLE_BITS:
        raise ParameterError(
            f"`epsilon` {shown_rational(eps)} is too small for the exact exponential mechanism "
            f"over {candidates} candidates at sensitivity {sensitivity} (its weights would need "
            f"{bits // 8 // 2**20} MiB); use a larger ε or the tree (docs/exponential.md)",
            parameter="epsilon",
        )
    return params


def probabilities(params: ExponentialParameters, losses: Sequence[int]) -> list[Fraction]:
    """The exact output distribution: Wⱼ/ΣW for the losses (for tests and analysis)."""
    weights = _weights(params, losses)
    total = sum(weights)
    return [Fraction(int(w), int(total)) for w in weights]


def sample(params: ExponentialParameters, losses: Sequence[int], source: BitSource) -> int:
    """One draw: the index j with probability exactly r**−min(dⱼ, C) / Σ r**−min(dᵢ, C).

    Reads :attr:`ExponentialParameters.draw_words` words from ``source`` (again only on the
    event of probability <= 2**−128 described in the module docstring).
    """
    weights = _weights(params, losses)
    total = gmpy2.mpz(0)
    for w in weights:  # a fixed number of additions
        total += w
    words = params.draw_words
    # as an mpz: each comparison below would otherwise convert the Python int again
    u = gmpy2.mpz(uniform_below(int(total), words, source))
    index, acc = 0, gmpy2.mpz(0)
    for w in weights:  # scan every candidate: the work does not depend on where u falls
        acc += w
        index += int(acc <= u)
    return index


def uniform_below(total: int, words: int, source: BitSource) -> int:
    """A uniform integer on [0, ``total``) from ``words`` 64-bit words per attempt, exactly
    (rejection of the top 2**K mod total values, K = 64·words; total < 2**K required)."""
    k = 64 * words
    if not 0 < total < 1 << k:
        raise ParameterError("`total` must lie in (0, 2**(64·words))", parameter="total")
    limit = ((1 << k) // total) * total
    while True:
        # the words, first one most significant, as one integer: one conversion (a shift per
        # word copied the growing integer each time, quadratic in the thousands of words of a
        # small ε's draw); the work depends on the number of words only
        x = int.from_bytes(np.asarray(source.words(words), dtype=">u8").tobytes(), "big")
        if x < limit:
            return x % total


def _weights(params: ExponentialParameters, losses: Sequence[int]) -> list[gmpy2.mpz]:
    if len(losses) != params.candidates:
        raise ParameterError(
            f"`losses` must have {params.candidates} entries, not {len(losses)}",
            parameter="losses",
        )
    for d in losses:
        if not isinstance(d, int) or d < 0:
            raise ParameterError("every loss must be an integer >= 0", parameter="losses")
    cap, shift = params.cap, params.shift
    if _uses_table(params):
        table = _table(params.numerator, shift, cap)
        return [table[min(d, cap)] for d in losses]
    steps = cap.bit_length()
    excess = shift * ((1 << steps) - 1 - cap)
    low = _split(params)
    if low is not None:  # two half tables: one product of two look-ups per weight
        high, below = _halves(params.numerator, shift, steps, low)
        mask = (1 << low) - 1
        return [(high[(e := cap - min(d, cap)) >> low] * below[e & mask]) >> excess for d in losses]
    # no table: each weight from the same bitlen(C) factors' sizes, whatever its loss
    p, two = gmpy2.mpz(params.numerator), gmpy2.mpz(1) << shift
    return [_ladder(p, two, cap - min(d, cap), steps, excess) for d in losses]


def _uses_table(params: ExponentialParameters) -> bool:
    """Whether the weights come from a table (a choice made from public parameters only)."""
    size = (params.cap + 1) * params.cap * max(params.numerator.bit_length(), params.shift)
    return size <= _TABLE_BITS


def _split(params: ExponentialParameters) -> int | None:
    """The number h of low bits of e = C − v for :func:`_halves`, the smallest whose two tables
    fit in 16 MiB together (their sizes are public), or None when none does."""
    steps, bits = params.cap.bit_length(), max(params.numerator.bit_length(), params.shift + 1)
    for low in range(1, steps):
        size = ((1 << (steps - low)) << steps) * bits + ((1 << low) << low) * bits
        if size <= _TABLE_BITS:
            return low
    return None


@functools.lru_cache(maxsize=2)
def _halves(
    numerator: int, shift: int, steps: int, low: int
) -> tuple[tuple[gmpy2.mpz, ...], tuple[gmpy2.mpz, ...]]:
    """For e < 2**L (L = ``steps``) written e = i·2**h + j (h = ``low``, j < 2**h): H[i] =
    P**(i·2**h)·2**(s·2**h·(2**(L−h) − 1 − i)) and B[j] = P**j·2**(s·(2**h − 1 − j)), so that
    H[i]·B[j] = P**e·2**(s·(2**L − 1 − e)), the ladder's integer, exactly. Every H[i] has
    (nearly) the same size, s·2**L bits, and every B[j] s·2**h bits, whatever e: one product
    of the same sizes per weight. From public parameters only."""
    p, width = gmpy2.mpz(numerator), 1 << low
    high = _powers(p**width, shift * width, 1 << (steps - low))
    return high, _powers(p, shift, width)


def _ladder(p: gmpy2.mpz, two: gmpy2.mpz, exponent: int, steps: int, excess: int) -> gmpy2.mpz:
    """P**e·(2**s)**(2**L − 1 − e) >> ``excess`` for e = ``exponent`` < 2**L, L = ``steps``,
    ``two`` = 2**s: L squarings, each followed by a multiplication by P (bit set) or by 2**s
    (bit clear), two integers of the same bit length s + 1; the accumulator's size after k steps
    is about s·(2**k − 1) whatever e, so the work does not depend on e. The shift is exact when
    ``excess`` <= s·(2**L − 1 − e)."""
    acc = gmpy2.mpz(1)
    for i in range(steps - 1, -1, -1):
        acc = acc * acc
        acc = acc * (p if (exponent >> i) & 1 else two)
    return acc >> excess


@functools.lru_cache(maxsize=2)
def _table(numerator: int, shift: int, cap: int) -> tuple[gmpy2.mpz, ...]:
    """T[v] = P**(C−v)·2**(s·v) for v = 0..C, from public parameters only."""
    return tuple(reversed(_powers(gmpy2.mpz(numerator), shift, cap + 1)))


def _powers(base: gmpy2.mpz, shift: int, count: int) -> tuple[gmpy2.mpz, ...]:
    """base**i·2**(shift·(count − 1 − i)) for i = 0..count − 1, from public parameters: the
    whole table and the two half tables (entries of nearly one size when base has about
    shift bits per unit of i)."""
    out, acc = [], gmpy2.mpz(1)
    for i in range(count):
        out.append(acc << (shift * (count - 1 - i)))
        acc *= base
    return tuple(out)


@functools.lru_cache(maxsize=16)
def _total_bound(params: ExponentialParameters) -> int:
    """m·P**C, at least the total weight (every weight is at most T[0] = P**C)."""
    return int(params.candidates * params.numerator**params.cap)
