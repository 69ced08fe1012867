"""Tables that add up (docs/data.md, "Tables that add up"): nested counts fitted jointly.

* Coverage: many seeded releases of the total, by g and by g × h on small tables (one with empty
  cells, where the clamp at 0 biases the noise), against exact counts from the oracle engine;
  the stated ± of every fitted value must hold at least as often as the confidence says, with a
  binomial threshold at alpha = 1e-6.
* Additivity: margins equal the sums of their cells (exactly for integers), values >= 0 when
  asked.
* The fit shrinks the error (fixed seeds, sum of squared errors over many releases).
* Refusals name ``consistent``; D and D + one row give the same structure and notes.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.stats import binom
from tests.data_oracle import OracleEngine

from snapdp.cli import main
from snapdp.data import Column, NullRule, Plan, PrivateTable, Query, Schema
from snapdp.data.model.predicate import Compare
from snapdp.data.model.workload import check_mode
from snapdp.data.statistics import consistency
from snapdp.data.statistics.consistency_fit import _largest_remainder, _simplex
from snapdp.errors import ParameterError

# Only counts over the same rows are fitted together: each grouping column gives every row a cell
# (bins over all of int64, nulls imputed), so the total, by g and by g × h count the same rows.
_I64 = 1 << 63
G = Column("g", "integer", bins=(-_I64, 1, _I64), nulls=NullRule("impute", 0))
H = Column("h", "integer", bins=(-_I64, 1, 2, _I64), nulls=NullRule("impute", 0))
G_KEYS, H_KEYS = (0, 1), ("x", "y", "z")
SCHEMA = Schema((G, H), max_rows=10_000)
QUERIES = [Query("count"), Query("count", by=("g",)), Query("count", by=("g", "h"))]


def _rows(counts: dict[tuple[int, str], int]) -> list[dict[str, Any]]:
    return [{"g": g, "h": "xyz".index(h)} for (g, h), n in counts.items() for _ in range(n)]


def _truth(rows: list[dict[str, Any]]) -> list[list[int]]:
    cells = Counter((r["g"], "xyz"[r["h"]]) for r in rows)
    by_g = Counter(r["g"] for r in rows)
    return [
        [len(rows)],
        [by_g[g] for g in G_KEYS],
        [cells[(g, h)] for g in G_KEYS for h in H_KEYS],
    ]


def _release(rows: list[dict[str, Any]], seed: int, mode: object, **kw: Any) -> list[Any]:
    table = PrivateTable(
        engine=OracleEngine(rows), schema=SCHEMA, total_epsilon=100, rng=np.random.default_rng(seed)
    )
    return table.release(QUERIES, "1.5", consistent=mode, **kw)


TABLES = {
    "spread": {(0, "x"): 40, (0, "y"): 25, (0, "z"): 9, (1, "x"): 30, (1, "y"): 3, (1, "z"): 12},
    "empty cells": {(0, "x"): 60, (1, "z"): 2},
}


RELEASES = 120


@pytest.mark.parametrize(
    ("name", "mode", "confidence"),
    [("spread", "wls", 0.5), ("empty cells", "wls", 0.5), ("empty cells", "integer", 0.5),
     ("spread", "nonnegative", 0.9)],
)  # fmt: skip
def test_stated_accuracy_covers(name: str, mode: str, confidence: float) -> None:
    rows = _rows(TABLES[name])
    truth = _truth(rows)
    misses = trials = 0
    for seed in range(RELEASES):
        results = _release(rows, seed, mode, confidence=confidence)
        for r, exact in zip(results, truth, strict=True):
            for row, x in zip(r.rows, exact, strict=True):
                trials += 1
                misses += abs(row.value - x) > row.accuracy
    # a miss has probability <= 1 − confidence for each value; misses of one release are
    # dependent, so the threshold counts releases: at most one binomial tail per value position
    per_position = RELEASES
    positions = trials // per_position
    limit = positions * binom.ppf(1 - 1e-6 / positions, per_position, 1 - confidence)
    assert misses <= limit


def test_margins_add_up() -> None:
    rows = _rows(TABLES["spread"])
    for mode in ("wls", "nonnegative", "integer"):
        total, by_g, cells = (np.array([x.value for x in r.rows]) for r in _release(rows, 3, mode))
        grid = cells.reshape(2, 3)
        if mode == "integer":
            assert total[0] == by_g.sum() == cells.sum()
            assert (by_g == grid.sum(axis=1)).all()
            assert (cells == np.rint(cells)).all()
        else:
            assert math.isclose(total[0], by_g.sum(), rel_tol=1e-12)
            assert np.allclose(by_g, grid.sum(axis=1), rtol=1e-12)
        if mode != "wls":
            assert (cells >= 0).all()


def test_independent_values_are_kept_and_noted() -> None:
    rows = _rows(TABLES["spread"])
    fitted = _release(rows, 5, True)
    alone = _release(rows, 5, False)
    for f, a in zip(fitted, alone, strict=True):
        # the same noise draws, snapped to grids of one spacing centred on each release's own
        # bounds (open bounds when fitted; a rescaled grid is not a power of two, so the two
        # lattices need not coincide): every independent value lies within one grid step
        step = a.as_dict()["mechanisms"]["count"]["grid_spacing"]
        assert f.as_dict()["mechanisms"]["count"]["grid_spacing"] == step
        gaps = [abs(r.independent - s.value) for r, s in zip(f.rows, a.rows, strict=True)]
        assert all(g < step for g in gaps), (gaps, step)
        assert "no privacy cost" in f.notes[-1] and "Tables that add up" in f.notes[-1]
        assert "independent_value" in f.as_dict()
        assert all(r.independent is None for r in a.rows)


def test_fit_shrinks_the_error() -> None:
    rows = _rows(TABLES["spread"])
    truth = _truth(rows)
    err = {"fit": [0.0, 0.0, 0.0], "alone": [0.0, 0.0, 0.0]}
    for seed in range(120):
        fitted = _release(rows, seed, True)
        for k, (r, x) in enumerate(zip(fitted, truth, strict=True)):
            err["fit"][k] += sum((row.value - v) ** 2 for row, v in zip(r.rows, x, strict=True))
            err["alone"][k] += sum(
                (row.independent - v) ** 2 for row, v in zip(r.rows, x, strict=True)
            )
    # total and margins gain most (each is also the sum of finer, independent counts)
    assert err["fit"][0] < 0.7 * err["alone"][0]
    assert err["fit"][1] < 0.8 * err["alone"][1]
    assert err["fit"][2] < err["alone"][2]


def test_refusals_name_consistent() -> None:
    rows = _rows(TABLES["spread"])
    with pytest.raises(ParameterError) as e:
        _release(rows, 1, "round")
    assert e.value.parameter == "consistent"
    table = PrivateTable(engine=OracleEngine(rows), schema=SCHEMA, total_epsilon=10)
    with pytest.raises(ParameterError) as e:
        table.release([Query("count", by=("g",)), Query("count", by=("h",)), Query("count")],
                      1, consistent="integer")  # fmt: skip
    assert e.value.parameter == "consistent"
    assert table.spent == 0  # refused before anything was spent


def test_neighbours_look_alike() -> None:
    rows = _rows(TABLES["spread"])
    a = _release(rows, 9, "integer")
    b = _release([*rows, {"g": 1, "h": 1}], 9, "integer")
    for x, y in zip(a, b, strict=True):
        assert x.notes == y.notes and x.key_columns == y.key_columns
        assert [r.keys for r in x.rows] == [r.keys for r in y.rows]


def test_check_mode() -> None:
    assert check_mode(False) is None and check_mode(None) is None
    assert check_mode(True) == "wls" and check_mode("integer") == "integer"
    with pytest.raises(ParameterError):
        check_mode(1)


def test_rounding_helpers() -> None:
    v = np.array([3.4, -1.0, 2.2, 0.4])
    p = _simplex(v, 5.0)
    assert (p >= 0).all() and math.isclose(p.sum(), 5.0)
    r = _largest_remainder(np.array([1.5, 1.25, 2.25]), 5.0)
    assert r.tolist() == [2.0, 1.0, 2.0]
    assert _simplex(v, 0.0).tolist() == [0.0] * 4


PLAN = """[data]
source = "{source}"
total_epsilon = 3
consistent = {consistent}

[columns]
sex = {{ type = "integer", bins = [-1e19, 1, 1e19], nulls = 0 }}
educ = {{ type = "integer", bins = [-1e19, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
                                   1e19], nulls = 1 }}

[[query]]
statistic = "count"
epsilon = 1

[[query]]
statistic = "count"
by = ["sex"]
epsilon = 1

[[query]]
statistic = "count"
by = ["sex", "educ"]
epsilon = 1
"""


def _pums(tmp_path: Path) -> Path:
    rows = _rows(TABLES["spread"])
    path = tmp_path / "t.csv"
    path.write_text("sex,educ\n" + "".join(f"{r['g']},{r['h'] + 1}\n" for r in rows))
    return path


def test_plan_key_consistent(tmp_path: Path) -> None:
    source = _pums(tmp_path)
    plan_file = tmp_path / "plan.toml"
    plan_file.write_text(PLAN.format(source=source, consistent='"integer"'))
    results = Plan.load(plan_file).run(rng=np.random.default_rng(2)).results
    total, by_sex, cells = (np.array([r.value for r in q.rows]) for q in results)
    assert total[0] == by_sex.sum() == cells.sum()
    assert (by_sex == cells.reshape(2, 16).sum(axis=1)).all()
    plan_file.write_text(PLAN.format(source=source, consistent='"yes"'))
    with pytest.raises(ParameterError) as e:
        Plan.load(plan_file)
    assert "line 4, key `data.consistent`" in str(e.value)


def test_cli_flag_consistent(tmp_path: Path) -> None:
    source = _pums(tmp_path)
    keys = ["--bins", "sex=-1e309,1,1e309", "--bins", "educ=-1e309,2,3,1e309"]  # decimal columns
    keys += ["--nulls", "sex=0", "--nulls", "educ=1"]
    args = ["release", str(source), "--epsilon", "1", "--count", "--by", "sex,educ", *keys]
    out = CliRunner().invoke(main, [*args, "--consistent", "--json"])
    assert out.exit_code == 0, out.output
    queries = json.loads(out.output)["results"]
    assert [q["by"] for q in queries] == [[], ["sex"], ["sex", "educ"]]
    assert all("independent_value" in q for q in queries)
    assert math.isclose(sum(queries[1]["value"]), queries[0]["value"][0], rel_tol=1e-12)
    bad = CliRunner().invoke(main, [*args[:4], "--sum", "sex:0:1", "--consistent", "integer"])
    assert bad.exit_code != 0 and "--consistent" in bad.output and "--count" in bad.output


def test_lattice_without_the_finest_count() -> None:
    """The total, by g and by h (no g × h): a rank-deficient fit; every margin still adds up."""
    rows = _rows(TABLES["spread"])
    table = PrivateTable(
        engine=OracleEngine(rows), schema=SCHEMA, total_epsilon=10, rng=np.random.default_rng(4)
    )
    queries = [Query("count"), Query("count", by=("g",)), Query("count", by=("h",))]
    total, by_g, by_h = (
        np.array([r.value for r in q.rows]) for q in table.release(queries, 1, consistent=True)
    )
    assert math.isclose(total[0], by_g.sum(), rel_tol=1e-12)
    assert math.isclose(total[0], by_h.sum(), rel_tol=1e-12)


def test_a_large_family_states_the_triangle_bound() -> None:
    """Beyond MAX_FIT_BOUND released counts: ± = |v − z| + a(α), the count's own ± at α."""
    big = Column("b", "integer", bins=(-_I64, *range(1, 300), _I64), nulls=NullRule("impute", 0))
    schema = Schema((G, big), max_rows=10_000)
    rows = [{"g": i % 2, "b": i % 300} for i in range(900)]
    table = PrivateTable(
        engine=OracleEngine(rows), schema=schema, total_epsilon=10, rng=np.random.default_rng(8)
    )
    queries = [Query("count", by=("g",)), Query("count", by=("g", "b"))]
    by_g, cells = table.release(queries, 1, consistent=True)
    assert math.isclose(sum(r.value for r in by_g.rows), sum(r.value for r in cells.rows))
    # the count's own ± on the grid (a count released on its own is an integer, ± ⌊a + 1/2⌋)
    grid = Query("count", by=("g", "b"), grid_counts=True)
    own = table.accuracy([grid], Fraction(1, 2))[0].accuracy
    assert own is not None
    for r in cells.rows:
        assert r.independent is not None
        assert r.accuracy == pytest.approx(own + abs(r.value - r.independent), rel=1e-6)


def test_the_statement_is_chosen_without_the_released_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The rule that picks the ± of each fitted value (fit bound, triangle bound, or both) reads
    public figures only: two families with the same public noise but released values 3 and 3·10⁸
    apart state the same kind of bound (a pick that moves with the noise would break the ±'s
    coverage). The fit bound is set just below the triangle bound's typical size, so the
    1e-12·|W|·|z| float margin of the fit bound, were it read by the rule, flips the pick."""
    from snapdp.data.statistics import consistency_fit as consistency

    var = 100.0

    def fake(weights: Any, a: Any, b: Any, sym: Any, per_noise: Any, alpha: float) -> Any:
        shift = 0.8 * np.sqrt(((weights - np.eye(len(weights))) ** 2) @ np.full(len(weights), var))
        return 10.0 + shift - 1e-6 if alpha == 0.05 else np.full(len(weights), 1e9)

    monkeypatch.setattr(consistency, "_fit_accuracy", fake)

    def member(columns: tuple[Column, ...], values: list[float]) -> Any:
        return consistency.Member(
            columns, np.array(values), var, (1.0, 1.0), lambda a: 10.0, False, None
        )

    stated = []
    for scale in (1.0, 1e8):
        fam = [member((), [3 * scale]), member((G,), [1 * scale, 2 * scale])]
        out = consistency.fit(fam, 0.05, "wls", 0)
        stated.append(np.concatenate(out.accuracy))
    assert stated[0].min() > 10.5  # the fit bound was stated (the values add up: ŷ = z)
    np.testing.assert_allclose(stated[1], stated[0], rtol=0, atol=1e-3)


# -- which counts are fitted together: only counts over the same rows -------------------------
AGE = Column("age", "integer", lower=0, upper=120)


def _ages() -> list[dict[str, Any]]:
    return [{"age": a % 100, "g": a % 2, "h": a % 3} for a in range(1000)]


def _age_release(queries: list[Query], seed: int, consistent: object) -> list[Any]:
    table = PrivateTable(
        engine=OracleEngine(_ages()),
        schema=Schema((AGE, G, H), max_rows=10_000),
        total_epsilon=100,
        rng=np.random.default_rng(seed),
    )
    return table.release(queries, 2, consistent=consistent)


def test_a_filtered_count_is_not_fitted_with_the_total() -> None:
    """`count where age >= 90` with the total (consistent): not one family, so the filtered count
    is its own estimate (the same value as released without `consistent`), and says why."""
    old = Compare("age", ">=", 90)
    queries = [Query("count"), Query("count", where=old)]
    truth = sum(1 for r in _ages() if r["age"] >= 90)
    for seed in range(5):
        total, filtered = _age_release(queries, seed, True)
        _, alone = _age_release(queries, seed, False)
        assert [r.value for r in filtered.rows] == [r.value for r in alone.rows]
        assert all(r.independent is None for r in filtered.rows)
        assert abs(filtered.rows[0].value - truth) <= filtered.rows[0].accuracy
        for r in (total, filtered):
            assert any("not fitted with" in n and "different rows" in n for n in r.notes)


def test_families_split_by_row_filter() -> None:
    young, old = Compare("age", "<", 50), Compare("age", ">=", 50)
    queries = [Query("count", where=young), Query("count", by=("g",), where=young),
               Query("count", where=old), Query("count", by=("g",), where=old)]  # fmt: skip
    a, b, c, d = _age_release(queries, 1, True)
    assert math.isclose(a.rows[0].value, sum(r.value for r in b.rows), rel_tol=1e-12)
    assert math.isclose(c.rows[0].value, sum(r.value for r in d.rows), rel_tol=1e-12)
    assert all(r.independent is not None for q in (a, b, c, d) for r in q.rows)
    counted = consistency.Counted
    fam = consistency.families(
        [counted((), young), counted((G,), young), counted((), old), counted((G,), old)]
    )
    assert fam == [[0, 1], [2, 3]]
    # a filter written as the same tree is the same rows
    assert consistency.same_rows(
        consistency.Counted((), Compare("age", "<", 50)), consistency.Counted((G,), young)
    )


def test_families_split_by_keys_that_can_miss_a_row() -> None:
    """A grouping column whose declaration can leave a row without a cell (keys that are not
    every value, bins short of the type's range, nulls dropped) does not nest under a coarser
    count: it counts fewer rows."""
    keyed = Column("k", "integer", keys=(0, 1))
    short = Column("s", "integer", bins=(0, 50, 100), nulls=NullRule("impute", 0))
    dropped = Column("d", "integer", bins=(-_I64, 1, _I64))
    text = Column("t", "text", keys=("a", "b"), nulls=NullRule("impute", "a"))
    both = Column("b", "boolean", keys=(True, False), nulls=NullRule("impute", False))
    wide = Column("w", "decimal", bins=("-1e309", 0, "1e309"), nulls=NullRule("impute", 0))
    assert not any(consistency.holds_every_row(c) for c in (keyed, short, dropped, text))
    assert all(consistency.holds_every_row(c) for c in (G, H, both, wide))
    for c in (keyed, short, dropped, text):
        assert consistency.families([consistency.Counted(()), consistency.Counted((c,))]) == []
    assert consistency.families([consistency.Counted(()), consistency.Counted((both,))]) == [[0, 1]]
    table = PrivateTable(
        engine=OracleEngine([{"age": a % 100, "k": a % 3} for a in range(300)]),
        schema=Schema((AGE, keyed), max_rows=10_000),
        total_epsilon=100,
        rng=np.random.default_rng(3),
    )
    total, by_k = table.release([Query("count"), Query("count", by=("k",))], 2, consistent=True)
    assert all(r.independent is None for q in (total, by_k) for r in q.rows)
    assert any("not fitted with" in n for n in by_k.notes)
