"""The work of the exact exponential mechanism's weights does not depend on the losses (DESIGN
§2.7; docs/exponential.md): on the path without a table, every weight is computed by the same
sequence of multiplications and shifts whose operands have (nearly) the same sizes whatever
the loss. Checked by running the weight computation on traced integers (no timing)."""

from __future__ import annotations

import types
from fractions import Fraction
from typing import Any, ClassVar

import gmpy2
import pytest

import snapdp.exponential as mod
from snapdp.exponential import exponential_parameters, probabilities


class _Traced:
    """An integer that records the bit lengths of the operands of every operation on it."""

    log: ClassVar[list[tuple[str, int, int]]] = []

    def __init__(self, value: Any) -> None:
        self.v = int(value)

    @staticmethod
    def _int(x: Any) -> int:
        return x.v if isinstance(x, _Traced) else int(x)

    def _op(self, name: str, other: Any, value: int) -> _Traced:
        _Traced.log.append((name, self.v.bit_length(), _Traced._int(other).bit_length()))
        return _Traced(value)

    def __mul__(self, other: Any) -> _Traced:
        return self._op("*", other, self.v * self._int(other))

    __rmul__ = __mul__

    def __lshift__(self, other: Any) -> _Traced:
        return self._op("<<", other, self.v << self._int(other))

    def __rshift__(self, other: Any) -> _Traced:
        return self._op(">>", other, self.v >> self._int(other))

    def __int__(self) -> int:
        return self.v


def _trace(monkeypatch: pytest.MonkeyPatch, params: Any, loss: int) -> tuple[list[Any], int]:
    shim = types.SimpleNamespace(**{k: getattr(gmpy2, k) for k in dir(gmpy2) if k[0] != "_"})
    shim.mpz = _Traced
    monkeypatch.setattr(mod, "gmpy2", shim)
    monkeypatch.setattr(mod, "_TABLE_BITS", 0)  # the path without a table
    _Traced.log = []
    (w,) = mod._weights(params, [loss])
    monkeypatch.undo()
    return list(_Traced.log), int(w)


@pytest.mark.parametrize("eps", [Fraction(1, 3), Fraction(1, 100)])
def test_the_weights_work_does_not_depend_on_the_loss(
    monkeypatch: pytest.MonkeyPatch, eps: Fraction
) -> None:
    p = exponential_parameters(eps, 1, 1)
    cap = p.cap
    base, w0 = _trace(monkeypatch, p, 0)
    assert w0 == p.numerator**cap  # T[0] = P**C
    for loss in (1, cap // 3, cap - 1, cap, 10**6):
        log, w = _trace(monkeypatch, p, loss)
        v = min(loss, cap)
        assert w == p.numerator ** (cap - v) << (p.shift * v)  # the exact weight
        assert [op for op, _, _ in log] == [op for op, _, _ in base]
        for (_, a0, b0), (_, a, b) in zip(base, log, strict=True):
            # operands within 1% (+ 64 bits) of the loss-0 sizes: P**k and 2**(s·k) differ
            # by k·log2(r) bits, a small share of k·s
            assert abs(a - a0) <= a0 // 100 + 64 and abs(b - b0) <= b0 // 100 + 64


def test_the_paths_agree_after_the_change(monkeypatch: pytest.MonkeyPatch) -> None:
    losses = [0, 5, 1, 10**6, 2]
    p = exponential_parameters(Fraction(1, 5), 1, len(losses))
    table = probabilities(p, losses)
    monkeypatch.setattr(mod, "_TABLE_BITS", 0)
    assert probabilities(p, losses) == table
