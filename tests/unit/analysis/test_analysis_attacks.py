"""Mironov's distinguisher at the user's parameters: textbook leaks, the other two do not."""

from __future__ import annotations

import pytest

from snapdp.analysis.attacks import distinguisher_rates
from snapdp.analysis.discrete_laplace import discrete_laplace
from snapdp.parameters import compute_parameters


@pytest.mark.parametrize(("epsilon", "lower", "upper"), [(1, 0, 100), (0.1, -50, 50), (2, 3, 9)])
def test_only_the_textbook_mechanism_leaks(epsilon, lower, upper):
    rows = distinguisher_rates(
        compute_parameters(epsilon, 1, lower, upper),
        discrete_laplace(epsilon, 1, lower, upper),
        samples=4000,
    )
    by_name = {r.mechanism: r for r in rows}
    assert set(by_name) == {"textbook Laplace", "snapping", "discrete Laplace"}
    for r in rows:
        assert r.rate0 == 1.0  # x0's own outputs are always possible under x0
        assert r.input0 == min(max(0, lower), upper)
        assert abs(r.input1 - r.input0) == 1
    assert by_name["textbook Laplace"].leaks
    assert by_name["textbook Laplace"].rate1 < 0.95  # measured 0.40 at 0 vs 1, 0.88 at 3 vs 4
    assert not by_name["snapping"].leaks and by_name["snapping"].rate1 == 1.0
    assert not by_name["discrete Laplace"].leaks and by_name["discrete Laplace"].rate1 == 1.0


@pytest.mark.parametrize(("epsilon", "quantum"), [(1, 0.1), (0.5, 0.3), (1e-10, 1e-9)])
def test_discrete_laplace_on_a_non_dyadic_or_tiny_quantum_does_not_leak(epsilon, quantum):
    rows = distinguisher_rates(
        compute_parameters(epsilon, 1, 0, 100),
        discrete_laplace(epsilon, 1, 0, 100, quantum),
        samples=2000,
    )
    disc = next(r for r in rows if r.mechanism == "discrete Laplace")
    assert disc.rate0 == disc.rate1 == 1.0
