"""Sample variance and std (src/snapdp/data/statistics/math/sample_variance.py; docs/sql.md,
"Sample variance").

* Coverage: many seeded releases on the reference engine; the truth is the exact sample variance
  of the clamped values (rationals, computed from the rows, not from any engine); the stated ±
  must hold at least as often as the confidence says (binomial threshold at alpha = 1e-6).
* Post-processing: a var_samp and a variance released with one seed draw the same noise, and the
  sample value is the population value times ñ/(ñ − 1) for the noisy count ñ (the ± too is a
  function of ñ and public parameters only).
* n ≤ 1: no error, the documented fallback; D and D plus one row (which makes a cell of one row
  a cell of two) look the same but for the noisy numbers.
* Every front end writes it: SQL VAR_SAMP/STDDEV_SAMP, TOML ``statistic = "var_samp"``, flags
  ``--var-samp``/``--std-samp``.
"""

from __future__ import annotations

import json
import math
import statistics as pystats
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.stats import binom
from tests.data_oracle import OracleEngine
from tests.differential import mask_doc

from snapdp.cli import main
from snapdp.data import Column, PrivateTable, Query, Schema
from snapdp.data.frontends.flags import workload_from_flags
from snapdp.data.frontends.sql import parse_sql
from snapdp.data.frontends.toml import load_plan
from snapdp.data.model.workload import Declaration
from snapdp.data.statistics.math.sample_variance import sample_accuracy, sample_value

G = Column("g", "integer", keys=(0, 1, 2, 3))
V = Column("v", "integer", lower=Fraction(0), upper=Fraction(10))
SCHEMA = Schema((G, V), max_rows=1_000)
#: cell 0: 40 spread values; cell 1: 3 values; cell 2: one value; cell 3: empty
VALUES = {0: [i % 11 for i in range(40)], 1: [0, 10, 4], 2: [7], 3: []}
ROWS = [{"g": g, "v": x} for g, xs in VALUES.items() for x in xs]
RELEASES = 150


def _truth(xs: list[int]) -> Fraction | None:
    clamped = [Fraction(min(max(x, 0), 10)) for x in xs]
    return pystats.variance(clamped) if len(clamped) >= 2 else None


def _release(rows: list[dict[str, Any]], seed: int, queries: list[Query], eps: str = "3",
             confidence: float = 0.95) -> list[Any]:  # fmt: skip
    table = PrivateTable(
        engine=OracleEngine(rows), schema=SCHEMA, total_epsilon=10**6,
        rng=np.random.default_rng(seed),
    )  # fmt: skip
    return table.release(queries, eps, confidence=confidence)


@pytest.mark.parametrize("confidence", [0.5, 0.9])
def test_stated_accuracy_covers_the_exact_sample_variance_and_std(confidence: float) -> None:
    queries = [Query("var_samp", "v", by=("g",)), Query("std_samp", "v", by=("g",))]
    truth = [_truth(VALUES[g]) for g in (0, 1, 2, 3)]
    misses = trials = 0
    for seed in range(RELEASES):
        var, std = _release(ROWS, seed, queries, confidence=confidence)
        for g, exact in enumerate(truth):
            if exact is None:  # no sample variance: nothing to cover
                continue
            trials += 2
            misses += abs(Fraction(var.rows[g].value) - exact) > Fraction(var.rows[g].accuracy)
            root = math.sqrt(exact)
            misses += abs(std.rows[g].value - root) > std.rows[g].accuracy
    per_position = RELEASES
    positions = trials // per_position
    limit = positions * binom.ppf(1 - 1e-6 / positions, per_position, 1 - confidence)
    assert trials == 4 * RELEASES
    assert misses <= limit


def test_the_bound_is_not_vacuous_on_a_large_cell() -> None:
    """With a large ε the ± of the 40-row cell is far below the whole range (2V = 50)."""
    var, std = _release(ROWS, 1, [Query("var_samp", "v", by=("g",)),
                                  Query("std_samp", "v", by=("g",))], eps="200")  # fmt: skip
    assert var.rows[0].accuracy < 5
    assert abs(var.rows[0].value - float(_truth(VALUES[0]) or 0)) <= var.rows[0].accuracy
    assert std.rows[0].accuracy < math.sqrt(5)


def test_the_sample_value_is_post_processing_of_the_population_parts() -> None:
    """One seed, one ε: the same three parts and the same noise; only the division differs."""
    for seed in range(5):
        (pop,) = _release(ROWS, seed, [Query("variance", "v", by=("g",))])
        (samp,) = _release(ROWS, seed, [Query("var_samp", "v", by=("g",))])
        assert pop.as_dict()["mechanisms"] == samp.as_dict()["mechanisms"]
        for p, s in zip(pop.rows, samp.rows, strict=True):
            if p.value == 25 / 2 and s.value == 25.0:  # both fallbacks (ñ <= 0 and ñ <= 1)
                continue
            # ñ from the ratio: s = p·ñ/(ñ − 1) ⇒ ñ = s/(s − p) when neither is clamped (p into
            # [0, V] = [0, 25], s into [0, 2V]: each from the unclamped spread)
            if s.value in (0.0, 50.0) or p.value in (0.0, 25.0) or s.value == 25.0:
                continue
            n = s.value / (s.value - p.value)
            assert n > 1
            assert math.isclose(s.value, p.value * n / (n - 1), rel_tol=1e-9)
            # the row's ± is the combination iterated from the released parts: at most its
            # first step, the public-weights figure (t + s/ñ)/(ñ − 1) (docs/utility.md)
            t, sq = _statement()
            assert s.accuracy <= (t + sq / n) / (n - 1) * (1 + 1e-6) or s.accuracy == 50.0


def _statement() -> tuple[float, float]:
    table = PrivateTable(engine=OracleEngine(ROWS), schema=SCHEMA, total_epsilon=10**6)
    (st,) = table.accuracy([Query("var_samp", "v", by=("g",))], "3")
    assert st.per_count is not None and st.square > 0
    return st.per_count, st.square


def test_sample_accuracy_and_value_at_small_noisy_counts() -> None:
    for n in (-3.0, 0.0, 0.5, 1.0):
        assert sample_value(0.7, n, 25.0, root=False) == 25.0
        assert sample_value(0.7, n, 25.0, root=True) == 5.0
        assert sample_accuracy(3.0, 2.0, 25.0, n, root=False) == 50.0
        assert sample_accuracy(3.0, 2.0, 25.0, n, root=True) >= math.sqrt(50.0)
    # just above 1: large but finite, at most the range
    assert sample_accuracy(3.0, 2.0, 25.0, 1.01, root=False) == 50.0
    big = sample_accuracy(3.0, 2.0, 25.0, 10_000.0, root=False)
    assert 3.0 / 9_999 < big < 3.0 / 9_999 + 25.0 * 2.0 / (9_999 * 9_996) * 1.001
    assert sample_value(24.0, 2.0, 25.0, root=False) == 48.0
    assert sample_value(25.0, 1.5, 25.0, root=False) == 50.0  # clamped to 2V


def test_cells_of_one_and_no_rows_release_without_error_and_say_the_rule() -> None:
    for seed in range(20):
        (r,) = _release(ROWS, seed, [Query("var_samp", "v", by=("g",))], eps="0.5")
        for row in r.rows:
            assert 0 <= row.value <= 50 and 0 < row.accuracy <= 50 * (1 + 1e-12)
        assert any("ñ − 1" in n for n in r.notes)


def test_d_and_d_plus_one_row_look_the_same_but_for_noisy_values() -> None:
    """The added row turns the one-row cell into a two-row cell (sample variance defined)."""
    d2 = [*ROWS, {"g": 2, "v": 3}]
    queries = [Query("var_samp", "v", by=("g",)), Query("std_samp", "v")]
    for seed in range(5):
        a = [mask_doc(r.as_dict()) for r in _release(ROWS, seed, queries, eps="0.3")]
        b = [mask_doc(r.as_dict()) for r in _release(d2, seed, queries, eps="0.3")]
        assert a == b


def test_every_front_end_writes_the_same_workload(tmp_path: Path) -> None:
    decl = Declaration(SCHEMA, "data.csv", confidence=0.95)
    sql = parse_sql(
        "SELECT g, VAR_SAMP(v), STDDEV_SAMP(v) FROM data GROUP BY g", decl, epsilon=2
    ).workload
    flags = workload_from_flags(
        source="data.csv", epsilon=Fraction(2), declaration={
            "columns": ("g:integer", "v:integer:0:10"), "keys": ("g=0,1,2,3",),
            "max_rows": 1000,
        }, var_samps=["v"], std_samps=["v"], by=["g"],
    )  # fmt: skip
    (tmp_path / "plan.toml").write_text(
        '[data]\nsource = "data.csv"\nmax_rows = 1000\n'
        '[columns.g]\ntype = "integer"\nkeys = [0, 1, 2, 3]\n'
        '[columns.v]\ntype = "integer"\nlower = 0\nupper = 10\n'
        '[[query]]\nstatistic = "var_samp"\ncolumn = "v"\nby = "g"\nepsilon = 1\n'
        '[[query]]\nstatistic = "std_samp"\ncolumn = "v"\nby = "g"\nepsilon = 1\n'
    )
    toml = load_plan(tmp_path / "plan.toml")
    expected = [Query("var_samp", "v", ("g",)), Query("std_samp", "v", ("g",))]
    assert [pq.query for pq in sql.queries] == expected
    assert [pq.query for pq in flags.queries] == expected
    assert [pq.query for pq in toml.queries] == expected
    assert [pq.epsilon for pq in sql.queries] == [pq.epsilon for pq in toml.queries]


def test_cli_flags_release_a_sample_variance(tmp_path: Path) -> None:
    data = tmp_path / "d.csv"
    data.write_text("g,v\n" + "".join(f"{r['g']},{r['v']}\n" for r in ROWS))
    out = CliRunner().invoke(main, [
        "release", str(data), "--epsilon", "2", "--var-samp", "v:0:10", "--std-samp", "v:0:10",
        "--json",
    ])  # fmt: skip
    assert out.exit_code == 0, out.output
    results = json.loads(out.output)["results"]
    assert [r["statistic"] for r in results] == ["var_samp", "std_samp"]
    assert all(any("ñ − 1" in n for n in r["notes"]) for r in results)
