"""Statistics by kind: one registry, and the parts' ε composing to the query's allocation
(src/snapdp/data/statistics/; docs/architecture.md)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from msgspec.structs import replace

from snapdp.data import Column, ContributionBounds, Query, Schema, statistics
from snapdp.data.model.query import STATISTICS
from snapdp.data.statistics import pipeline
from snapdp.data.statistics.kinds import KINDS, kind_name
from snapdp.data.statistics.types import Compiled, Noise, Part

COLUMNS = (
    Column("pid", "integer"),
    Column("x", "decimal", lower=Fraction(0), upper=Fraction(100)),
    Column("g", "integer", keys=(1, 2, 3)),
    Column("h", "integer", keys=(1, 2)),
)
#: k = 2 rows per unit over 6 cells: the grouped parts try the certified L1 calibration.
BOUNDED = Schema(COLUMNS, "pid", bounds=ContributionBounds(max_rows_per_unit=2))
ONE_ROW = Schema(COLUMNS, rows=1000)
HALVES = (Fraction(1, 2), Fraction(9, 10))


def _queries() -> list[tuple[Query, Schema]]:
    out: list[tuple[Query, Schema]] = []
    for stat in STATISTICS:
        column = None if stat == "count" else "x"
        probs = HALVES if stat == "quantiles" else ()
        for by in ((), ("g",), ("g", "h")):
            out.append((Query(stat, column, by=by, quantiles=probs), BOUNDED))
    out.append((Query("mean", "x", method="substitute"), ONE_ROW))
    for by in ((), ("g", "h")):
        for method in ("exponential", "tree"):
            out.append((Query("quantiles", "x", by=by, quantiles=HALVES, method=method), BOUNDED))
    return out


def test_every_statistic_and_method_has_one_kind() -> None:
    names = {kind_name(q) for q, _ in _queries()}
    assert names == set(KINDS)
    assert kind_name(Query("sum", "x", method="substitute")) == "sum"  # only a mean substitutes


@pytest.mark.parametrize("epsilon", [Fraction(1), Fraction(1, 3), Fraction(7, 2)])
@pytest.mark.parametrize("presume", [False, True])
def test_the_parts_compose_to_the_allocation_for_every_statistic(
    epsilon: Fraction, presume: bool
) -> None:
    certified = 0
    for query, schema in _queries():
        compiled = statistics.compile_query(query, schema, epsilon)
        noises = statistics.calibrate(compiled, presume_certified=presume)
        assert sum((n.spent for n in noises), Fraction(0)) == epsilon, query.label
        certified += sum(n.calibrated for n in noises)
    assert certified > 0  # the L1-calibrated branch (ε_cal + m·s) is covered too


def test_a_broken_calibration_trips_the_composition_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = pipeline._calibrate_part

    def generous(compiled: Compiled, part: Part, presume: bool = False) -> Noise:
        noise = real(compiled, part, presume)
        return replace(noise, epsilon=noise.epsilon * 2)  # spends twice the part's share

    monkeypatch.setattr(pipeline, "_calibrate_part", generous)
    compiled = statistics.compile_query(Query("mean", "x"), BOUNDED, Fraction(1))
    with pytest.raises(AssertionError, match="add up to 2, not the query's 1"):
        statistics.calibrate(compiled)


def test_a_certified_part_without_its_slack_trips_the_check() -> None:
    compiled = statistics.compile_query(Query("count", by=("g", "h")), BOUNDED, Fraction(1))
    (noise,) = statistics.calibrate(compiled)
    assert noise.calibrated and noise.slack > 0
    statistics.check_composition(compiled, (noise,))
    with pytest.raises(AssertionError):
        statistics.check_composition(compiled, (replace(noise, slack=Fraction(0)),))


def test_patching_the_package_reaches_its_callers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The session and core call through the package: a patched ``_compile`` is what runs."""
    statistics._compiled.cache_clear()
    seen: list[str] = []
    real = statistics._compile

    def counting(query: Query, schema: Schema, epsilon: Fraction) -> Compiled:
        seen.append(query.label)
        return real(query, schema, epsilon)

    monkeypatch.setattr(statistics, "_compile", counting)
    statistics.compile_query(Query("count", by=("g",)), BOUNDED, Fraction(5, 7))
    assert seen == ["count by g"]
    statistics._compiled.cache_clear()
