"""The planner against brute force over splits (docs/plans.md, "The planner")."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest

from snapdp.accuracy import accuracy_bound
from snapdp.data.model.query import Query
from snapdp.data.model.schema import Column, ContributionBounds, Schema
from snapdp.data.model.workload import PlannedQuery
from snapdp.data.planner.epsilons import plan_epsilons, statement_accuracy
from snapdp.data.planner.search import smallest_epsilon
from snapdp.errors import ParameterError
from snapdp.parameters import compute_parameters

# Three queries whose ± is the snapping mechanism's own accuracy at (Δ, bounds): monotone in ε.
_SENS = {"a": 1, "b": 5, "c": 40}


def _snap_accuracy(pq: PlannedQuery, eps: Fraction) -> float:
    delta = _SENS[pq.query.name or "a"]
    params = compute_parameters(eps, delta, 0, 10**6)
    return accuracy_bound(params, 1 - pq.confidence)


def _target(name: str, accuracy: int, confidence: float = 0.95) -> PlannedQuery:
    return PlannedQuery(
        Query("count", name=name), accuracy=Fraction(accuracy), confidence=confidence
    )


GRID = [Fraction(i, 20) for i in range(1, 81)]  # 0.05 … 4 in steps of 0.05


@pytest.mark.parametrize(
    "targets",
    [
        [("a", 10), ("b", 30)],
        [("a", 4), ("c", 200)],
        [("b", 12), ("c", 500)],
    ],
)
def test_total_is_within_1_01_of_brute_force_over_splits(targets: list[tuple[str, int]]) -> None:
    queries = [_target(n, a) for n, a in targets]
    cache: dict[tuple[int, Fraction], float] = {}

    def acc(i: int, e: Fraction) -> float:
        if (i, e) not in cache:
            cache[i, e] = _snap_accuracy(queries[i], e)
        return cache[i, e]

    best = None
    for split in itertools.product(GRID, repeat=len(queries)):  # every split on the grid
        if all(acc(i, e) <= float(queries[i].accuracy or 0) for i, e in enumerate(split)):
            total = sum(split, Fraction(0))
            best = total if best is None or total < best else best
    assert best is not None
    preview = plan_epsilons(queries, _snap_accuracy)
    assert preview.total <= best * Fraction(101, 100)
    for a in preview.allocations:  # every target met, by the planner's own statement
        assert a.accuracy <= float(a.planned.accuracy or 0)
        assert _snap_accuracy(a.planned, a.epsilon) <= float(a.planned.accuracy or 0)


def test_smallest_epsilon_is_within_tolerance_of_the_exact_threshold() -> None:
    # ± = 12/ε meets ± <= 3 exactly from ε = 4 on: the planner returns 4 (a short decimal)
    eps = smallest_epsilon(lambda e: float(Fraction(12) / e), Fraction(3))
    assert Fraction(4) <= eps <= Fraction(4) * Fraction(1006, 1000)
    # a threshold that is not a short decimal: 1/3 → within 0.6 % above it
    eps = smallest_epsilon(lambda e: 1.0 if e < Fraction(1, 3) else 0.5, Fraction(1, 2))
    assert Fraction(1, 3) <= eps <= Fraction(1, 3) * Fraction(1006, 1000)


def test_unreachable_target_is_a_clear_error() -> None:
    with pytest.raises(ParameterError, match="cannot be met at any ε"):
        smallest_epsilon(lambda e: 5.0, Fraction(1), "'q'")


def test_weights_share_what_is_left_exactly() -> None:
    qs = [
        PlannedQuery(Query("count", name="a"), epsilon=Fraction(1, 2)),
        PlannedQuery(Query("count", name="b"), weight=Fraction(1)),
        PlannedQuery(Query("count", name="c"), weight=Fraction(2)),
    ]
    preview = plan_epsilons(qs, _snap_accuracy, Fraction(2))
    assert preview.epsilons == [Fraction(1, 2), Fraction(1, 2), Fraction(1)]
    assert preview.total == 2


def test_targets_beyond_the_total_are_refused_clearly() -> None:
    qs = [_target("a", 2), PlannedQuery(Query("count", name="b"), weight=Fraction(1))]
    with pytest.raises(ParameterError, match=r"cannot be met within total_epsilon = 0\.5"):
        plan_epsilons(qs, _snap_accuracy, Fraction(1, 2))


def test_weights_need_a_total() -> None:
    qs = [PlannedQuery(Query("count"), weight=Fraction(1))]
    with pytest.raises(ParameterError, match="total_epsilon"):
        plan_epsilons(qs, _snap_accuracy)


def test_a_query_takes_exactly_one_way_to_its_epsilon() -> None:
    with pytest.raises(ParameterError, match="exactly one of"):
        PlannedQuery(Query("count"), epsilon=Fraction(1), weight=Fraction(1))
    with pytest.raises(ParameterError, match="exactly one of"):
        PlannedQuery(Query("count"))


def test_planned_accuracy_is_what_the_release_states() -> None:
    """The planner's ± is the statistics module's statement before spending, for a count and a
    ratio mean at its reference group size."""
    from snapdp.data import statistics

    schema = Schema((Column("x", "integer", 0, 100),))
    acc = statement_accuracy(schema)
    for q, n in ((Query("count"), 1), (Query("mean", "x"), 500)):
        pq = PlannedQuery(q, epsilon=Fraction(1), group_size=n)
        compiled = statistics.compile_query(q, schema, Fraction(1))
        st = statistics.accuracy_of(compiled, statistics.calibrate(compiled), 0.95, 0.05)
        assert acc(pq, Fraction(1)) == st.at(n)
    # the mean's ± shrinks as the reference group grows (it divides by n)
    small = acc(PlannedQuery(Query("mean", "x"), epsilon=Fraction(1), group_size=100), Fraction(1))
    large = acc(PlannedQuery(Query("mean", "x"), epsilon=Fraction(1), group_size=1000), Fraction(1))
    assert large < small


def test_a_fast_search_accuracy_is_checked_and_never_trusted() -> None:
    """The planner searches with the fast (presumed-certificate) accuracy, then checks its choice
    with the real one; an optimistic search accuracy must not let a target be missed."""
    queries = [_target("a", 10), _target("b", 30)]

    def optimistic(pq: PlannedQuery, eps: Fraction) -> float:
        return _snap_accuracy(pq, eps) / 2  # claims twice the accuracy it has

    exact = plan_epsilons(queries, _snap_accuracy)
    checked = plan_epsilons(queries, _snap_accuracy, search_accuracy_at=optimistic)
    assert [a.epsilon for a in checked.allocations] == [a.epsilon for a in exact.allocations]
    same = plan_epsilons(queries, _snap_accuracy, search_accuracy_at=_snap_accuracy)
    assert [a.epsilon for a in same.allocations] == [a.epsilon for a in exact.allocations]


def test_presumed_and_certified_accuracies_agree_on_a_grouped_count() -> None:
    """On a grouped count (an L1-calibrated part) the presumed certificate gives the ± the
    certified one gives, when the certificate holds (docs/plans.md)."""
    schema = Schema((Column("g", "integer", keys=(0, 1, 2)),), privacy_unit="u",
                    bounds=ContributionBounds(max_rows_per_unit=3))  # fmt: skip
    pq = PlannedQuery(Query("count", by=("g",)), accuracy=Fraction(50))
    fast = statement_accuracy(schema, presume_certified=True)
    slow = statement_accuracy(schema)
    for eps in (Fraction(1, 2), Fraction(1)):
        assert fast(pq, eps) == slow(pq, eps)
