"""Caches and held sources return bit-identical results to the uncached path (docs/performance.md,
"Latency"): the fast path's plan per parameter set, a small CSV read once per session."""

from __future__ import annotations

import dataclasses
import os
import shutil
from fractions import Fraction
from pathlib import Path
from typing import Any

import gmpy2
import numpy as np
import pytest

from snapdp import fast_plan
from snapdp.data import Plan
from snapdp.data.engines.duckdb.engine import DuckDBEngine
from snapdp.errors import ParameterError
from snapdp.mechanism import SnappingMechanism

DATA = Path(os.environ.get("SNAPDP_SHARED_DATA", "/work/shared/data")) / "PUMS.csv"
needs_pums = pytest.mark.skipif(not DATA.exists(), reason="SNAPDP_SHARED_DATA not set")

PLAN = """[data]
source = "{source}"
total_epsilon = 100

[columns]
age = {{ type = "integer", lower = 0, upper = 100 }}
income = {{ type = "decimal", lower = 0, upper = 500000 }}
sex = {{ type = "integer", keys = [0, 1] }}
educ = {{ type = "integer", keys = [{educ}] }}

[[query]]
statistic = "count"
by = ["sex", "educ"]
epsilon = 0.333

[[query]]
statistic = "mean"
column = "income"
by = ["sex"]
epsilon = 0.333

[[query]]
statistic = "quantiles"
column = "age"
quantiles = [0.5]
epsilon = 0.333
"""


def _values(run: Any) -> list[list[Any]]:
    return [[(row.keys, row.value, row.accuracy) for row in r.rows] for r in run.results]


def _plan(folder: Path) -> Plan:
    shutil.copy(DATA, folder / "PUMS.csv")
    text = PLAN.format(
        source=(folder / "PUMS.csv").as_posix(), educ=", ".join(map(str, range(1, 17)))
    )
    (folder / "plan.toml").write_text(text, encoding="utf-8")
    return Plan.load(folder / "plan.toml")


# -- the fast path's plan per parameter set ---------------------------------------------------
def test_cached_fast_plan_equals_a_fresh_one() -> None:
    for eps, sens, lower, upper in [(1.0, 1, 0, 100), (Fraction(1, 3), 2, -5, 7), (0.25, 1, 0, 1)]:
        params = SnappingMechanism(eps, sens, lower, upper).parameters
        cached = fast_plan.plan_for(params)
        assert cached is not None
        assert cached == fast_plan._plan_of.__wrapped__(params)  # the uncached computation
        assert fast_plan.plan_for(params) is cached  # one plan per parameter set


def test_fast_plan_cache_key_holds_every_parameter() -> None:
    params = SnappingMechanism(1.0, 1, 0, 100).parameters
    for f in dataclasses.fields(params):
        value = getattr(params, f.name)
        other = value + 1 if isinstance(value, int) else value * gmpy2.mpq(3, 2) + 1
        changed = dataclasses.replace(params, **{f.name: other})
        assert changed != params, f.name  # the key (the frozen dataclass) sees the field
        assert hash(changed) != hash(params) or changed != params, f.name


def test_releases_are_bit_identical_with_a_cold_or_warm_plan_cache() -> None:
    def draw() -> list[float]:
        mech = SnappingMechanism(Fraction(1, 3), 1, 0, 100, rng=np.random.default_rng(5))
        return [float(x) for x in mech.release_many(np.arange(40, dtype=np.float64))]

    fast_plan._plan_of.cache_clear()
    cold = draw()
    warm = draw()
    assert cold == warm


# -- a mechanism's parameters per exact parameter set ------------------------------------------
@pytest.mark.parametrize("rescale", [True, False])
def test_kept_mechanism_parameters_equal_fresh_ones(rescale: bool) -> None:
    from snapdp import mechanism
    from snapdp.parameters import compute_parameters

    sets = [(1.0, 1, 0, 100), (Fraction(1, 3), 2, -5, 7), (0.25, 0.5, 0, 1), (2, 1, -1e6, 1e6)]
    for eps, sens, lower, upper in sets:
        mechanism._parameters.cache_clear()
        cold = SnappingMechanism(eps, sens, lower, upper, rescale=rescale)
        # the same exact values, other Python types: the kept rescaling and parameters
        warm = SnappingMechanism(
            Fraction(eps), Fraction(sens), Fraction(lower), Fraction(upper), rescale=rescale
        )
        assert warm.parameters is cold.parameters and warm.rescaling is cold.rescaling
        r = cold.rescaling
        assert cold.parameters == compute_parameters(
            r.mechanism_epsilon, r.mechanism_sensitivity, lower, upper
        )  # what the constructor computed before the parameters were kept
        assert mechanism._parameters.cache_info().hits >= 1


def test_a_refused_epsilon_is_refused_every_time() -> None:
    for _ in range(2):  # nothing is kept for a refusal
        with pytest.raises(ParameterError, match="too small"):
            SnappingMechanism(2.0**-60, 1, 0, 1)


# -- a CSV is read for every scan, whatever its size ---------------------------------------------
def test_the_queries_of_neighbouring_csvs_do_not_depend_on_their_size(tmp_path: Path) -> None:
    # A CSV of at most 8 MiB on disk used to be held in a table after its first scan, so one row
    # that took the file past 8 MiB changed the work (found by review; docs/data.md, "Run time").
    # Two files on either side of that size, one row apart, get the same queries, scan by scan.
    from snapdp.data.engines.base import AggregatePlan, ValueColumn
    from snapdp.data.model.schema import Column

    row = "30,1000,0\n"
    body = row * ((8 << 20) // len(row))
    small, large = tmp_path / "small.csv", tmp_path / "large.csv"
    small.write_text("age,income,sex\n" + body[: -len(row) * 2], encoding="utf-8")
    large.write_text("age,income,sex\n" + body + row, encoding="utf-8")
    assert small.stat().st_size <= 8 << 20 < large.stat().st_size
    sex = Column("sex", "integer", keys=(0, 1))
    age = Column("age", "integer", lower=Fraction(0), upper=Fraction(100))
    plans = [AggregatePlan(groupings=(sex,)), AggregatePlan(values=(ValueColumn(age, 0, 0, 100),))]
    issued: dict[Path, list[str]] = {}
    for path in (small, large):
        engine = DuckDBEngine(str(path))
        sent = issued.setdefault(path, [])
        for plan in [*plans, *plans]:  # two scans of each plan on one engine
            sent.append(engine.sql(plan)[0])
            engine.aggregate(plan)
        sent.append(engine.sql(plans[0])[0])  # after every scan
    names = (str(small), str(large))
    assert [q.replace(names[0], "F") for q in issued[small]] == [
        q.replace(names[1], "F") for q in issued[large]
    ]


@needs_pums
def test_sql_of_a_plan_reads_nothing(tmp_path: Path) -> None:
    from snapdp.data.engines.base import AggregatePlan

    plan = _plan(tmp_path)
    engine = DuckDBEngine(str(tmp_path / "PUMS.csv"), csv=plan.schema.csv)
    engine.sql(AggregatePlan(groupings=(plan.schema.column("sex"),)))
    assert engine.progress() == 0  # nothing read: the table is made by the first aggregate
    engine.aggregate(AggregatePlan(groupings=(plan.schema.column("sex"),)))
    assert engine.progress() == 100
