"""Plans keep their promises (docs/plans.md, "Two-phase targets", "The ledger", "Refused before
the data is read"): two-phase targets under a cap, the reservation, target met or missed, and
parameter-only refusals before any data is read."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import snapdp
from snapdp.cli import main
from snapdp.data import statistics
from snapdp.data.api import Plan
from snapdp.data.budget.ledger import Ledger, read_ledger
from snapdp.data.model.query import Query
from snapdp.data.model.schema import Column, Schema
from snapdp.data.model.workload import PlannedQuery
from snapdp.data.planner.two_phase import (
    GRID,
    grid_up,
    grid_values,
    phase_one_epsilon,
    phase_two_epsilon,
)

SCHEMA = Schema(
    (
        Column("age", "integer", lower=Fraction(0), upper=Fraction(100)),
        Column("sex", "integer", keys=(0, 1)),
    )
)
MEAN = PlannedQuery(Query("mean", "age", ("sex",)), accuracy=Fraction(1, 2))


def _table(path: Path, rows: int, seed: int, extra: str = "") -> Path:
    """A synthetic table the plan has never seen: two groups of unequal size."""
    gen = np.random.default_rng(seed)
    sex = (gen.random(rows) < 0.4).astype(int)
    age = np.clip(np.round(gen.normal(40 + 8 * sex, 15)), 0, 100).astype(int)
    text = "age,sex\n" + "".join(f"{a},{s}\n" for a, s in zip(age, sex, strict=True)) + extra
    path.write_text(text, encoding="utf-8")
    return path


def _plan(source: Path, total: int = 4) -> Plan:
    return Plan(SCHEMA, [MEAN], source=str(source), total_epsilon=Fraction(total))


# -- the promise --------------------------------------------------------------------------------
def test_a_mean_target_is_met_without_group_size_on_an_unseen_table(tmp_path: Path) -> None:
    """≥ 80% of runs (fixed seeds) say `target met` and are within the target of the truth."""
    source = _table(tmp_path / "d.csv", 30_000, seed=1)
    data = np.loadtxt(source, delimiter=",", skiprows=1, dtype=int)
    truth = {s: data[data[:, 1] == s, 0].mean() for s in (0, 1)}
    plan = _plan(source)
    preview = plan.preview()
    runs, met, within = 20, 0, 0
    for seed in range(runs):
        done = plan.run(rng=np.random.default_rng(seed), preview=preview)
        [r] = done.results
        assert done.spent <= preview.total
        met += bool(r.target_met)
        within += all(abs(row.value - truth[row.keys[0]]) <= 0.5 for row in r.rows)
    assert met >= 0.8 * runs and within >= 0.8 * runs


def test_the_plan_states_a_cap_and_an_example_and_at_most() -> None:
    text = Plan(SCHEMA, [MEAN], source="x.csv", total_epsilon=Fraction(4)).preview().describe()
    assert re.search(r"≤ 4 \(cap\); ε for groups of ≥ [\d,]+ rows: [\d.]+", text), text
    assert "total ε: at most 4 of 4" in text


def test_a_declared_group_size_plans_as_before() -> None:
    sized = PlannedQuery(MEAN.query, accuracy=Fraction(1, 2), group_size=10_000)
    preview = Plan(SCHEMA, [sized], source="x.csv").preview()
    [a] = preview.allocations
    assert a.two_phase is None and a.accuracy is not None and a.accuracy <= 0.5
    assert "at most" not in preview.describe()


def test_two_phase_without_a_total_names_group_size() -> None:
    with pytest.raises(ValueError, match=r"declare `group_size`.*`total_epsilon`"):
        Plan(SCHEMA, [MEAN], source="x.csv").preview()


@settings(max_examples=40, deadline=None)
@given(
    cap=st.fractions(min_value=Fraction(1, 100), max_value=50).filter(lambda x: x > 0),
    n=st.floats(min_value=-100, max_value=1e7),
    target=st.fractions(min_value=Fraction(1, 10), max_value=40).filter(lambda x: x > 0),
)
def test_phase_two_never_exceeds_the_cap(cap: Fraction, n: float, target: Fraction) -> None:
    """For any cap, target and released count, ε₁ + ε₂ ≤ cap; ε₂ meets the target when
    reported as enough. The search is the same with certificates presumed (each certificate
    takes seconds; the certified path runs in the test below)."""
    _check_phase_two(cap, n, target, presume=True)


@pytest.mark.parametrize(
    ("cap", "n", "target"),
    [(Fraction(4), 3000.0, Fraction(1, 2)), (Fraction(1, 3), -5.0, Fraction(2)),
     (Fraction(7, 2), 150.0, Fraction(1, 10))],
)  # fmt: skip
def test_certified_phase_two_never_exceeds_the_cap(
    cap: Fraction, n: float, target: Fraction
) -> None:
    """The property above with real certificates: a target met, no count, a target missed."""
    _check_phase_two(cap, n, target, presume=False)


def _check_phase_two(cap: Fraction, n: float, target: Fraction, *, presume: bool) -> None:
    pq = PlannedQuery(MEAN.query, accuracy=target)
    compiled = statistics.compile_query(pq.query, SCHEMA, cap)
    eps1 = phase_one_epsilon(compiled, cap)
    eps2, needed = phase_two_epsilon(SCHEMA, pq, eps1, cap - eps1, n, presume_certified=presume)
    assert eps1 > 0 and eps2 > 0 and eps1 + eps2 <= cap
    if needed is not None and needed <= cap - eps1:
        assert eps2 == needed


def _on_grid(eps: Fraction) -> bool:
    return grid_up(eps) == eps


def test_phase_two_epsilon_is_on_the_public_grid() -> None:
    """ε₂ takes a value of the public grid (or the plan's whole remainder), whatever the count,
    so its certificates are few and reusable; the target is still met."""
    cap = Fraction(4)
    pq = PlannedQuery(MEAN.query, accuracy=Fraction(1, 2))
    compiled = statistics.compile_query(pq.query, SCHEMA, cap)
    eps1 = phase_one_epsilon(compiled, cap)
    chosen = set()
    for n in (400.0, 1523.7, 2800.0, 5999.5, 20000.0):
        eps2, needed = phase_two_epsilon(SCHEMA, pq, eps1, cap - eps1, n, presume_certified=True)
        assert _on_grid(eps2) or eps2 == cap - eps1, eps2
        assert needed is None or needed == eps2
        chosen.add(eps2)
    assert len(chosen) >= 3


def test_the_grid_rounds_up_to_round_values() -> None:
    assert [grid_up(Fraction(x)) for x in ("0.5", "1.05", "9.2", "0.0123", "123.4")] == [
        Fraction(1, 2), Fraction(11, 10), Fraction(10), Fraction(13, 1000), Fraction(130)
    ]  # fmt: skip
    values = grid_values(Fraction(1), Fraction(10))
    assert values[0] == 1 and values[-1] == 10 and len(values) == len(GRID) + 1
    assert all(b / a <= Fraction(8, 7) for a, b in itertools.pairwise(values))


def _recorder(calls: list[tuple[int, int, str]]) -> Callable[[int, int, str], None]:
    return lambda done, total, label: calls.append((done, total, label))


def test_a_run_reports_public_progress(tmp_path: Path) -> None:
    """Plan.run's progress callback: the same steps, labels and totals on neighbouring tables
    (nothing about the data), ending at done == total."""
    a = _table(tmp_path / "a.csv", 600, seed=5)
    b = _table(tmp_path / "b.csv", 600, seed=5, extra="99,1\n")
    seen: list[list[tuple[int, int, str]]] = []
    for source in (a, b):
        calls: list[tuple[int, int, str]] = []
        _plan(source).run(rng=np.random.default_rng(1), progress=_recorder(calls))
        seen.append(calls)
    assert seen[0] == seen[1]
    assert seen[0][-1][0] == seen[0][-1][1] and seen[0][-1][2] == "done"
    assert [d for d, _, _ in seen[0]] == sorted(d for d, _, _ in seen[0])
    assert any(label.startswith("phase two of") for _, _, label in seen[0])


_POOL = (
    PlannedQuery(Query("count", by=("sex",)), epsilon=Fraction(1, 2)),
    MEAN,
    PlannedQuery(Query("variance", "age"), accuracy=Fraction(30)),
    PlannedQuery(Query("mean", "age"), accuracy=Fraction(5), group_size=200),
    PlannedQuery(Query("sum", "age"), weight=Fraction(2)),
    PlannedQuery(Query("quantiles", "age", quantiles=(Fraction(1, 2),)), accuracy=Fraction(10)),
)


# Each new (total, queries) pair certifies its mechanisms afresh (seconds each), so the plans are
# a fixed list with one case per path through Plan.run's ledger (a fixed ε spent whole; a
# two-phase cap reserved and settled, beside a fixed query, a weighted one, the quantiles'
# phase one and the variance's), over tables of 1 to 400 rows and fixed seeds. Until
# 2026-11-27 hypothesis drew plans, tables and seeds (6 examples, 93 s in the suite: four were
# the same fixed count, and each of the two others certified new ε's).
CASES = [
    pytest.param(3, [0], 1, 0, id="fixed count, one row"),
    pytest.param(8, [0, 1], 400, 716, id="fixed count, two-phase mean"),
    pytest.param(8, [1, 4], 26, 293091, id="two-phase mean, weighted sum"),
    pytest.param(8, [5], 55, 191, id="two-phase quantile"),
    pytest.param(1, [2], 192, 586802447, id="two-phase variance"),
]


@pytest.mark.parametrize(("total", "picks", "rows", "seed"), CASES)
def test_a_run_spends_at_most_what_it_reserved(
    total: int, picks: list[int], rows: int, seed: int
) -> None:
    """Every kind of plan over random tables and noise: the one ledger entry reserves the plan's
    total (spends it, without a two-phase query) and its spend never exceeds it; each query
    spends at most its planned ε (a two-phase query's cap)."""
    import tempfile

    queries = [_POOL[i] for i in sorted(picks)]
    with tempfile.TemporaryDirectory() as d:
        source = _table(Path(d) / "d.csv", rows, seed)
        plan = Plan(SCHEMA, queries, source=str(source), total_epsilon=Fraction(total))
        try:
            preview = plan.preview()
        except ValueError as exc:  # a plan over its budget is refused before anything else
            assert "cannot be met within total_epsilon" in str(exc)
            return
        book = Ledger(None, 100)
        done = plan.run(ledger=book, rng=np.random.default_rng(seed), preview=preview)
        [entry] = book.entries()
        if preview.at_most:  # a two-phase query: the cap reserved, the spend settled in it
            assert entry.reserved == preview.total <= total
            assert entry.settled and entry.epsilon == done.spent <= preview.total
        else:  # fixed ε only: one plain spend of the total
            assert entry.reserved is None and entry.epsilon == done.spent == preview.total
        for r, a in zip(done.results, preview.allocations, strict=True):
            assert r.epsilon <= a.epsilon
            assert r.epsilon == a.epsilon or a.two_phase is not None
        assert done.spent == sum((r.epsilon for r in done.results), Fraction(0))


def test_a_fixed_ratio_query_without_group_size_states_its_per_count_form() -> None:
    fixed = PlannedQuery(Query("mean", "age"), epsilon=Fraction(1))
    [a] = Plan(SCHEMA, [fixed], source="x.csv").preview().allocations
    assert a.accuracy is None and re.fullmatch(r"±[\d,.]+/ñ, ñ the noisy count of the cell", a.text)


def test_neighbours_show_the_same_structure(tmp_path: Path) -> None:
    """D and D plus one row: identical but for the noisy numbers (and what they imply)."""
    a = _table(tmp_path / "a.csv", 800, seed=5)
    b = _table(tmp_path / "b.csv", 800, seed=5, extra="99,1\n")
    shapes = []
    for source in (a, b):
        [r] = _plan(source).run(rng=np.random.default_rng(11)).results
        note = re.sub(r"[\d.,]+", "#", r.target_note or "")
        shapes.append((r.label, r.key_columns, [x.keys for x in r.rows], r.notes, note))
    assert shapes[0] == shapes[1]


def test_a_missed_target_says_what_it_would_need(tmp_path: Path) -> None:
    source = _table(tmp_path / "d.csv", 300, seed=2)
    [r] = _plan(source, total=1).run(rng=np.random.default_rng(0)).results
    assert r.target_met is False
    assert re.fullmatch(
        r"target missed: ±[\d.,]+; a group of ~[\d,]+ rows would need ε [\d.]+, only 1 was left",
        r.target_note or "",
    ), r.target_note
    assert r.as_dict()["target_met"] is False
    # the two figures are both totals of the query's two phases: what it needed exceeds the cap
    need = re.search(r"would need ε ([\d.]+)", r.target_note or "")
    assert need is not None and float(need.group(1)) > 1


# -- the ledger -----------------------------------------------------------------------------------
def test_a_killed_run_leaves_the_whole_cap_spent(tmp_path: Path) -> None:
    """The process dies between the reservation and the settlement: the cap stays spent."""
    source = _table(tmp_path / "d.csv", 500, seed=3)
    script = f"""
import os
from fractions import Fraction
from snapdp.data import statistics
from snapdp.data.api import Plan
from snapdp.data.model.workload import PlannedQuery
from snapdp.data.model.query import Query
from snapdp.data.model.schema import Column, Schema
statistics.assemble = lambda *a, **k: os._exit(9)
schema = Schema((Column("age", "integer", lower=Fraction(0), upper=Fraction(100)),
                 Column("sex", "integer", keys=(0, 1))))
q = PlannedQuery(Query("mean", "age", ("sex",)), accuracy=Fraction(1, 2))
Plan(schema, [q], source={str(source)!r}, total_epsilon=Fraction(4)).run(
    ledger={str(tmp_path / "b.sqlite")!r}, total_epsilon=10)
"""
    env = {**os.environ, "PYTHONPATH": str(Path(snapdp.__file__).parents[1])}
    done = subprocess.run([sys.executable, "-c", script], env=env, check=False)
    assert done.returncode == 9
    report = read_ledger(tmp_path / "b.sqlite")
    [entry] = report.entries
    assert (entry.reserved, entry.settled, entry.epsilon) == (4, False, 4)
    assert report.datasets[0].spent == 4
    r = CliRunner().invoke(main, ["budget", "--ledger", str(tmp_path / "b.sqlite"), "--json"])
    doc = json.loads(r.output)
    assert doc["spent"] == 4 and doc["releases"][0]["reserved"] == "4"


def test_a_settlement_is_checked(tmp_path: Path) -> None:
    book = Ledger(tmp_path / "b.sqlite", 10)
    entry = book.reserve(Fraction(3), 0.0, "plan", "d", {})
    with pytest.raises(ValueError, match="between 0 and its cap 3"):
        book.settle(entry, Fraction(4), 0.0)
    book.settle(entry, Fraction(1, 3), 0.0)
    assert book.spent() == Fraction(1, 3) and book.remaining() == Fraction(29, 3)
    with pytest.raises(Exception, match="not an open reservation"):
        book.settle(entry, Fraction(1, 3), 0.0)
    import sqlite3

    con = sqlite3.connect(tmp_path / "b.sqlite")
    con.execute("UPDATE settlements SET epsilon = '1/30'")
    con.commit()
    con.close()
    with pytest.raises(Exception, match="does not match its reservation"):
        Ledger(tmp_path / "b.sqlite").spent()
    con = sqlite3.connect(tmp_path / "b.sqlite")
    con.execute("DELETE FROM settlements")
    con.commit()
    con.close()
    assert Ledger(tmp_path / "b.sqlite").spent() == 3  # a deleted settlement: the cap, never less


# -- refusals before the data is read ---------------------------------------------------------
def _unreadable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A source no engine can read (a folder named like a CSV file), and every engine
    constructor of the CLI and the plans replaced by one that fails the test."""
    from snapdp.data.engines import factory
    from snapdp.data.release import run as run_module

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the data was opened")

    monkeypatch.setattr(factory, "make_engine", never)
    monkeypatch.setattr(run_module, "_default_engine", never)
    folder = tmp_path / "data.csv"
    folder.mkdir()
    return folder


@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        (["--epsilon", "710", "--count"], r"`--epsilon` = 710 is too large"),
        (
            ["--epsilon", "1000", "--max-rows-per-unit", "5", "--privacy-unit", "pid", "--count"],
            r"`--epsilon` = 1000 is too large",
        ),
        (["--epsilon", "1", "--mean", "x:0:1e285"], r"bounds \[0, 1e285\] are too wide"),
    ],
)
def test_release_refuses_parameters_before_the_data_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], pattern: str
) -> None:
    _unreadable(tmp_path, monkeypatch)
    source = str(tmp_path / "d.csv")
    (tmp_path / "d.csv").write_bytes(b"\xff\xfe not a table")
    for extra in ([], ["--dry-run"]):
        r = CliRunner().invoke(main, ["release", source, *args, *extra])
        assert r.exit_code == 2 and re.search(pattern, r.output), r.output


@pytest.mark.parametrize(
    ("query", "column", "pattern"),
    [
        (
            "epsilon = 710",
            "",
            r"key `query\[1\]\.epsilon`: `query\[1\]\.epsilon` = 710 is too large",
        ),
        (
            "epsilon = 1e-30",
            "",
            r"key `query\[1\]\.epsilon`: `query\[1\]\.epsilon` = 1e-30 is too small",
        ),
        (
            'statistic = "sum"\ncolumn = "x"\nepsilon = 1',
            'x = { type = "decimal", lower = 0, upper = 1e285 }',
            r"key `columns\.x\.upper`: column 'x': bounds \[0, 1e285\] are too wide",
        ),
    ],
)
def test_plan_and_run_refuse_parameters_before_the_data_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, query: str, column: str, pattern: str
) -> None:
    _unreadable(tmp_path, monkeypatch)
    body = query if "statistic" in query else f'statistic = "count"\n{query}'
    text = f'[data]\nsource = "data.csv"\n\n[columns]\n{column}\n\n[[query]]\n{body}\n'
    (tmp_path / "p.toml").write_text(text, encoding="utf-8")
    for command in (["plan"], ["run", "--ledger", str(tmp_path / "b.sqlite")]):
        r = CliRunner().invoke(main, [*command, str(tmp_path / "p.toml")])
        assert r.exit_code == 2 and re.search(pattern, r.output), r.output
    assert not (tmp_path / "b.sqlite").exists()


def test_the_outputs_say_whether_each_target_was_met(tmp_path: Path) -> None:
    import csv

    source = _table(tmp_path / "d.csv", 3000, seed=4)
    fixed = PlannedQuery(Query("count", by=("sex",)), epsilon=Fraction(1))
    plan = Plan(SCHEMA, [fixed, MEAN], source=str(source), total_epsilon=Fraction(5))
    done = plan.run(output=tmp_path / "out", rng=np.random.default_rng(1))
    assert [r.target_met for r in done.results] == [None, True]
    with open(tmp_path / "out" / "results.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [r["target_met"] for r in rows] == ["", "", "True", "True"]
    data = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert "target_met" not in data["queries"][0]
    assert (data["queries"][1]["target_met"], data["queries"][1]["target"]) == (True, "target met")
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert html.count("target met") == 1
    assert Fraction(data["epsilon"]) == done.spent < 5


def test_a_quantile_target_is_two_phase_too(tmp_path: Path) -> None:
    """Quartiles without group_size: the tree's top level first (its nodes add up to the rows),
    the other levels from a lower confidence bound of them; met on a large table, within the
    cap, and said to be missed on a small one."""
    quartiles = PlannedQuery(
        Query("quantiles", "age", quantiles=(Fraction(1, 4), Fraction(1, 2), Fraction(3, 4))),
        accuracy=Fraction(5),
    )
    big = _table(tmp_path / "big.csv", 30_000, seed=6)
    plan = Plan(SCHEMA, [quartiles], source=str(big), total_epsilon=Fraction(2))
    preview = plan.preview()
    [a] = preview.allocations
    assert a.two_phase is not None and a.two_phase.floor is not None
    assert a.two_phase.floor < 30_000
    data = np.loadtxt(big, delimiter=",", skiprows=1, dtype=int)
    truth = np.quantile(data[:, 0], [0.25, 0.5, 0.75])
    for seed in range(3):
        done = plan.run(rng=np.random.default_rng(seed), preview=preview)
        [r] = done.results
        assert r.target_met is True and done.spent <= 2
        assert all(abs(row.value - t) <= 5 for row, t in zip(r.rows, truth, strict=True))
    small = _table(tmp_path / "small.csv", 60, seed=6)  # 200 rows now meet ±5 (tighter rank ±)
    tiny = Plan(SCHEMA, [quartiles], source=str(small), total_epsilon=Fraction(2))
    [r] = tiny.run(rng=np.random.default_rng(0)).results
    assert r.target_met is False and (r.target_note or "").startswith("target missed: ±")
