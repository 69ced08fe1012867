"""The certifier applied to textbook floating-point Laplace: which outputs an input can produce.

Two textbook samplers are modelled, each as the implementation's own arithmetic evaluated on its
own random grid:

* :class:`snapdp.LaplaceMechanism` (via :func:`snapdp.mechanism.laplace_textbook`): one word gives a
  sign S and m in [1, 2**53]; output = x + λ·(S·np.log(m·2**-53)).
* ``numpy.random.Generator.laplace(loc, scale)``: U = j·2**-53, j in [1, 2**53) (j = 0 redrawn);
  output = loc − λ·log(2 − U − U) if U >= 1/2, else loc + λ·log(U + U), with C's ``log``
  (:func:`math.log` calls the same libm function) — a single non-decreasing function of j.

For each branch the output is monotone in the grid integer (assuming the log implementation is
monotone, which correctly rounded and faithful libms are in practice; it is not proven here). So
"can input x produce the double o?" is decided by bisection over the grid integer: find the first
integer whose output is >= o and test equality. That decision is exact under the monotonicity
assumption, and vectorised over many outputs at once.

The exact δ of a textbook mechanism (the mass of outputs impossible under the neighbour) would need
the 2**53 outputs enumerated; it is *estimated* here by sampling outputs of x and deciding each one
exactly, with a Clopper–Pearson interval. The infinite privacy loss is exact: a single output of x
decided impossible under x′ is a witness.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
from msgspec import Struct

from snapdp.mechanism import LaplaceMechanism, laplace_textbook

__all__ = [
    "Branch",
    "TextbookLeak",
    "can_produce",
    "laplace_mechanism_branches",
    "numpy_laplace_branches",
    "numpy_laplace_from_raw",
    "textbook_leak",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


class Branch(Struct, frozen=True):
    """Outputs ``evaluate(n)`` for integers n in [first, last], non-decreasing in n.

    ``check`` (optional) re-evaluates one integer with the exact scalar arithmetic of the sampler
    when ``evaluate`` is only a vectorised stand-in (np.log for libm's log). ``guess`` (optional)
    estimates the integer giving each output; it only narrows the bisection's first bracket,
    which is verified by evaluation (and widened to the whole range where it fails).
    """

    first: int
    last: int
    evaluate: Callable[[IntArray], FloatArray]
    check: Callable[[int], float] | None = None
    guess: Callable[[FloatArray], FloatArray] | None = None


def laplace_mechanism_branches(value: float, scale: float) -> list[Branch]:
    """The two branches of :class:`LaplaceMechanism` for input ``value``, oriented increasing.

    Sign bit 1 (S = −1): output increases as m decreases, so it is parameterised by
    n = 2**53 + 1 − m.
    """
    top = 1 << 53

    def words(m: IntArray, negative: bool) -> npt.NDArray[np.uint64]:
        w = (m - 1).astype(np.uint64)
        return w | np.uint64(1 << 63) if negative else w

    def plus(n: IntArray) -> FloatArray:
        return laplace_textbook(np.full(n.shape, value), words(n, False), scale)

    def minus(n: IntArray) -> FloatArray:
        return laplace_textbook(np.full(n.shape, value), words(top + 1 - n, True), scale)

    def guess_plus(o: FloatArray) -> FloatArray:
        m: FloatArray = np.exp((o - value) / scale) * 2.0**53
        return m

    def guess_minus(o: FloatArray) -> FloatArray:
        n: FloatArray = top + 1 - np.exp(-(o - value) / scale) * 2.0**53
        return n

    return [
        Branch(1, top, plus, guess=guess_plus),
        Branch(1, top, minus, guess=guess_minus),
    ]


def _numpy_laplace_scalar(loc: float, scale: float, j: int) -> float:
    u = j * 2.0**-53
    if u >= 0.5:
        return loc - scale * math.log(2.0 - u - u)
    return loc + scale * math.log(u + u)


def numpy_laplace_branches(loc: float, scale: float) -> list[Branch]:
    """``Generator.laplace(loc, scale)`` as one non-decreasing branch in j (see module doc)."""

    def evaluate(j: IntArray) -> FloatArray:
        u = j.astype(np.float64) * 2.0**-53
        high = u >= 0.5
        arg = np.where(high, 2.0 - u - u, u + u)
        logs = np.log(arg)  # a stand-in for libm's log: checked by `check`
        out: FloatArray = np.where(high, loc - scale * logs, loc + scale * logs)
        return out

    def guess(o: FloatArray) -> FloatArray:
        t = (o - loc) / scale
        low = np.exp(np.minimum(t, 0.0)) * 2.0**52  # o < loc: log(2u) = t
        high = (1 - np.exp(-np.maximum(t, 0.0)) / 2) * 2.0**53  # o >= loc: −log(2 − 2u) = t
        j: FloatArray = np.where(t < 0, low, high)
        return j

    return [
        Branch(
            1,
            (1 << 53) - 1,
            evaluate,
            check=lambda j: _numpy_laplace_scalar(loc, scale, j),
            guess=guess,
        )
    ]


def numpy_laplace_from_raw(loc: float, scale: float, raw: list[int]) -> list[float]:
    """Replay ``Generator.laplace`` from the raw 64-bit words of its bit generator (for tests)."""
    out = []
    for w in raw:
        j = w >> 11
        if j == 0:
            continue
        out.append(_numpy_laplace_scalar(loc, scale, j))
    return out


def _first_at_least(branch: Branch, outputs: FloatArray) -> IntArray:
    """Per output o, the first n in [first, last + 1] with evaluate(n) >= o (vectorised)."""
    lo = np.full(outputs.shape, branch.first - 1, dtype=np.int64)  # evaluate(lo) < o (virtual)
    hi = np.full(outputs.shape, branch.last + 1, dtype=np.int64)  # evaluate(hi) >= o (virtual)
    if branch.guess is not None:
        _narrow(branch, branch.guess, outputs, lo, hi)
    while True:
        active = hi - lo > 1
        if not active.any():
            return hi
        mid = (lo + hi) // 2
        idx = np.nonzero(active)[0]
        values = branch.evaluate(mid[idx])
        ge = values >= outputs[idx]
        hi[idx[ge]] = mid[idx[ge]]
        lo[idx[~ge]] = mid[idx[~ge]]


_WINDOW = 64


def _narrow(
    branch: Branch,
    guess: Callable[[FloatArray], FloatArray],
    outputs: FloatArray,
    lo: IntArray,
    hi: IntArray,
) -> None:
    """Shrink (lo, hi] to a window around the guess wherever evaluation confirms the bracket."""
    with np.errstate(all="ignore"):
        g = np.nan_to_num(guess(outputs), nan=float(branch.first), posinf=float(branch.last))
    centre = np.clip(np.round(g), branch.first, branch.last).astype(np.int64)
    new_lo = np.maximum(centre - _WINDOW, branch.first - 1)
    new_hi = np.minimum(centre + _WINDOW, branch.last + 1)
    ok = np.ones(outputs.shape, dtype=bool)
    real_lo = new_lo >= branch.first
    ok[real_lo] &= branch.evaluate(new_lo[real_lo]) < outputs[real_lo]
    real_hi = new_hi <= branch.last
    ok[real_hi] &= branch.evaluate(new_hi[real_hi]) >= outputs[real_hi]
    lo[ok] = new_lo[ok]
    hi[ok] = new_hi[ok]


def _scalar_first_at_least(branch: Branch, o: float) -> int:
    assert branch.check is not None
    lo, hi = branch.first - 1, branch.last + 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if branch.check(mid) >= o:
            hi = mid
        else:
            lo = mid
    return hi


def can_produce(branches: list[Branch], outputs: npt.ArrayLike) -> npt.NDArray[np.bool_]:
    """For each double o in ``outputs``: whether some random integer of some branch gives o."""
    outs = np.asarray(outputs, dtype=np.float64).reshape(-1)
    result = np.zeros(outs.shape, dtype=bool)
    for branch in branches:
        n = _first_at_least(branch, outs)
        inside = n <= branch.last
        hit = np.zeros(outs.shape, dtype=bool)
        hit[inside] = branch.evaluate(n[inside]) == outs[inside]
        if branch.check is not None:
            hit = _checked_hits(branch, outs, n)
        result |= hit
    return result


def _checked_hits(branch: Branch, outs: FloatArray, n: IntArray) -> npt.NDArray[np.bool_]:
    """Confirm each bracket (n − 1, n] with the exact scalar arithmetic; bisect where it fails."""
    check = branch.check
    assert check is not None
    inf = math.inf
    above = np.fromiter(
        (check(int(k)) if k <= branch.last else inf for k in n), dtype=np.float64, count=n.size
    )
    below = np.fromiter(
        (check(int(k) - 1) if k - 1 >= branch.first else -inf for k in n),
        dtype=np.float64,
        count=n.size,
    )
    bad = ~((below < outs) & (above >= outs))
    for i in np.nonzero(bad)[0]:
        k = _scalar_first_at_least(branch, float(outs[i]))
        above[i] = check(k) if k <= branch.last else inf
    hit: npt.NDArray[np.bool_] = above == outs
    return hit


class TextbookLeak(Struct, frozen=True):
    """Outputs of ``value`` impossible under ``neighbour``, decided exactly per sampled output.

    ``fraction`` estimates δ = P(output of value impossible under neighbour), with a two-sided
    Clopper–Pearson interval (``delta_low``, ``delta_high``) at ``confidence``; ``witness`` is one
    such output (None if none was sampled): its existence makes the privacy loss infinite.
    """

    value: float
    neighbour: float
    samples: int
    impossible: int
    delta_low: float
    delta_high: float
    confidence: float
    witness: float | None

    @property
    def fraction(self) -> float:
        return self.impossible / self.samples

    @property
    def loss_is_infinite(self) -> bool:
        return self.witness is not None


def textbook_leak(
    mechanism: LaplaceMechanism,
    value: float,
    neighbour: float,
    samples: int = 100_000,
    confidence: float = 0.999,
) -> TextbookLeak:
    """Sample ``mechanism`` at ``value``; decide each output's reachability from ``neighbour``."""
    from snapdp.verify.audit import clopper_pearson

    outputs = mechanism.release_many(np.full(samples, float(value)))
    reachable = can_produce(laplace_mechanism_branches(float(neighbour), mechanism.scale), outputs)
    impossible = int((~reachable).sum())
    low, high = clopper_pearson(impossible, samples, confidence)
    witness = float(outputs[~reachable][0]) if impossible else None
    return TextbookLeak(
        float(value), float(neighbour), samples, impossible, low, high, confidence, witness
    )
