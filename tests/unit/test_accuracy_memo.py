"""accuracy_bound is kept per process for the parameters asked (issue 32: a release states each
mechanism's ± and then judges its usefulness from the same one, and a fresh run paid the
bisection twice): a second call with equal parameters computes nothing, and the kept value is
the one computed afresh, for rounded and unrounded bounds alike."""

from __future__ import annotations

from fractions import Fraction

import pytest

from snapdp import accuracy
from snapdp._exact import mpq
from snapdp.parameters import compute_parameters

CASES = [
    (Fraction(1, 3), Fraction(1), Fraction(0), Fraction(100)),
    (Fraction(1, 1000), Fraction(7, 3), Fraction(-5), Fraction(500000)),
    (Fraction(50), Fraction(1), Fraction(0), Fraction(1, 7)),
]


@pytest.mark.parametrize(("eps", "sens", "lo", "hi"), CASES)
@pytest.mark.parametrize("rounding", [True, False])
def test_a_second_call_is_the_kept_value(
    eps: Fraction, sens: Fraction, lo: Fraction, hi: Fraction, rounding: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    params = compute_parameters(mpq(eps), mpq(sens), mpq(lo), mpq(hi))
    accuracy._accuracy_bound.cache_clear()
    fresh = accuracy._accuracy_bound.__wrapped__(params, 0.05, rounding)
    first = accuracy.accuracy_bound(params, 0.05, rounding=rounding)
    assert first == fresh
    calls: list[int] = []
    tail_of = accuracy._tail_of
    monkeypatch.setattr(accuracy, "_tail_of", lambda p: calls.append(1) or tail_of(p))
    same = compute_parameters(mpq(eps), mpq(sens), mpq(lo), mpq(hi))  # equal, not the same
    assert accuracy.accuracy_bound(same, Fraction(1, 20), rounding=rounding) == fresh
    assert calls == []  # nothing recomputed


def test_unhashable_parameters_are_computed_uncached() -> None:
    params = compute_parameters(mpq(1), mpq(1), mpq(0), mpq(10))

    class Unhashable:
        __hash__ = None  # type: ignore[assignment]

        def __getattr__(self, name: str) -> object:
            return getattr(params, name)

    assert accuracy.accuracy_bound(Unhashable(), 0.05) == accuracy.accuracy_bound(params, 0.05)  # type: ignore[arg-type]


def test_equal_parameters_share_one_tail_function_and_its_values() -> None:
    """The rounded and unrounded bounds at one α bisect through the same points: the second
    reads the first's tail values, which are the ones computed afresh."""
    params = compute_parameters(mpq(1, 3), mpq(1), mpq(0), mpq(100))
    same = compute_parameters(mpq(1, 3), mpq(1), mpq(0), mpq(100))
    accuracy._shared_tail.cache_clear()
    tail = accuracy._tail_of(params)
    assert accuracy._tail_of(same) is tail
    fresh = accuracy._shared_tail.__wrapped__(params)
    points = [mpq(-1), mpq(0), mpq(1, 7), mpq(3), mpq(40, 3), mpq(100)]
    assert [tail(s) for s in points] == [fresh(s) for s in points]
    assert [tail(s) for s in points] == [fresh(s) for s in points]  # now read back
    accuracy._accuracy_bound.cache_clear()
    rounded = accuracy.accuracy_bound(params, 0.05)
    calls: list[int] = []
    round_down = accuracy._exact.round_down

    def counted(*args: object) -> object:
        calls.append(1)
        return round_down(*args)  # type: ignore[arg-type]  # passed on as given

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(accuracy._exact, "round_down", counted)
        unrounded = accuracy.accuracy_bound(params, 0.05, rounding=False)
    assert calls == []  # every tail value read back
    assert unrounded <= rounded
    assert unrounded == accuracy._accuracy_bound.__wrapped__(params, 0.05, False)
