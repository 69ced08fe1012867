"""Release plans: one file for a whole workload, and the accuracy-first planner (DESIGN §8.6;
docs/plans.md).

A plan holds the declaration (a :class:`~snapdp.data.schema.Schema`), the source, an optional
``total_epsilon`` and a list of :class:`PlannedQuery`. Each query takes either a fixed
``epsilon``, or a target ``accuracy`` (± at ``confidence``: it gets the smallest ε that meets
it), or a ``weight`` (the weighted queries share what is left of ``total_epsilon`` in
proportion). :meth:`Plan.preview` runs the planner and spends nothing; :meth:`Plan.run` releases
every query as one ledger entry (all or nothing) and can write the results as files.

**The planner.** Each query's ± depends only on its own ε and is non-increasing in it (a
snapping mechanism's accuracy falls as ε grows: λ′ = 1/ε′ falls and Λ, the smallest power of two
≥ λ′, falls with it), so the smallest total that meets every target is the sum of the smallest ε
of each target query. That ε is found by bisection on exact rationals: a bracket [lo, hi] with lo
failing and hi meeting the target (grown around a first guess from ± ≈ c/ε), halved until
hi ≤ lo·(1 + 1/400), then rounded up to the shortest decimal within another factor
(1 + 1/400) (still meeting the target, by monotonicity, and checked). So each planned ε is at
most (1 + 1/400)² < 1.006 times the smallest ε that meets its target, and so is the total.

**Means, variances, quantiles.** Their ± divides by a group's row count, which is private. The
planner states it for a **reference group size** n (``group_size``, in ``[data]`` or per
query; default :data:`DEFAULT_GROUP_SIZE`): the ± the release states when the noisy count of a
cell is n (``AccuracyStatement.at(n)`` of :mod:`snapdp.data.statistics`). The released results
state their ± from the actual noisy counts; a smaller group has a larger ±. This assumption is
printed with every plan that uses it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import ROUND_CEILING, Decimal, localcontext
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from snapdp._validation import check_count, check_epsilon
from snapdp.data._toml import KeyLocator, Path_, PlanFileError, describe_key, load_toml
from snapdp.data.consistency import check_mode
from snapdp.data.engines.base import Engine
from snapdp.data.query import STATISTICS, Query
from snapdp.data.results import QueryResult
from snapdp.data.schema import Column, ContributionBounds, CsvOptions, NullRule, Schema
from snapdp.errors import ParameterError

__all__ = [
    "DEFAULT_CONFIDENCE",
    "DEFAULT_GROUP_SIZE",
    "AccuracyAt",
    "Allocation",
    "Plan",
    "PlanPreview",
    "PlanRun",
    "PlannedQuery",
    "plan_epsilons",
    "smallest_epsilon",
    "statement_accuracy",
    "usefulness_flags",
]

DEFAULT_CONFIDENCE = 0.95
#: The reference group size for the ± of means, variances and quantiles when a plan declares
#: none (docs/plans.md, "The ± of a mean in a plan").
DEFAULT_GROUP_SIZE = 100_000
#: Relative tolerance of the bisection, and of rounding ε up to a short decimal.
TOLERANCE = Fraction(1, 400)
_EPS_MIN = Fraction(1, 1 << 30)
_EPS_MAX = Fraction(1 << 20)


@dataclass(frozen=True)
class PlannedQuery:
    """One query of a plan and how it gets its ε: exactly one of ``epsilon`` (fixed),
    ``accuracy`` (a target ± at ``confidence``) and ``weight`` (a share of what is left).
    ``group_size``: the reference group size its ± is stated for (means, variances, std,
    quantiles)."""

    query: Query
    epsilon: Fraction | None = None
    accuracy: Fraction | None = None
    weight: Fraction | None = None
    confidence: float = DEFAULT_CONFIDENCE
    group_size: int = DEFAULT_GROUP_SIZE

    def __post_init__(self) -> None:
        given = [k for k in ("epsilon", "accuracy", "weight") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ParameterError(
                f"query {self.query.label!r} must give exactly one of `epsilon`, `accuracy` "
                f"and `weight`, not {', '.join(given) or 'none'}",
                parameter="epsilon",
            )
        if self.epsilon is not None:
            object.__setattr__(self, "epsilon", check_epsilon("epsilon", self.epsilon))
        if self.accuracy is not None:
            object.__setattr__(self, "accuracy", _positive("accuracy", self.accuracy))
        if self.weight is not None:
            object.__setattr__(self, "weight", _positive("weight", self.weight))
        c = self.confidence
        if isinstance(c, bool) or not isinstance(c, (int, float, Fraction, Decimal)):
            raise ParameterError(
                f"`confidence` must be a number in (0, 1), not {c!r}", parameter="confidence"
            )
        if not 0 < c < 1:
            raise ParameterError(
                f"`confidence` must be in (0, 1), not {c!r}", parameter="confidence"
            )
        object.__setattr__(self, "confidence", float(c))
        check_count("group_size", self.group_size)

    @property
    def how(self) -> str:
        """ "epsilon", "accuracy" or "weight"."""
        if self.epsilon is not None:
            return "epsilon"
        return "accuracy" if self.accuracy is not None else "weight"

    @property
    def depends_on_group_size(self) -> bool:
        """Whether its ± is stated for a reference group size (ratio statistics, quantiles)."""
        q = self.query
        return q.statistic in ("variance", "std", "quantiles") or (
            q.statistic == "mean" and q.method == "ratio"
        )


#: The accuracy a planned query would have at an exact ε, at its confidence (and, for ratio
#: statistics, its reference group size); must be non-increasing in ε. Never reads data.
AccuracyAt = Callable[[PlannedQuery, Fraction], float]


def statement_accuracy(schema: Schema, *, presume_certified: bool = False) -> AccuracyAt:
    """The planner's accuracy from the statistics module: what a release over ``schema`` states
    before spending (``AccuracyStatement.at(group_size)``); reads no data.

    ``presume_certified``: take each L1 certificate's success for granted (fast: no exact
    verifier run per ε tried) — for the search only; :func:`plan_epsilons` re-checks its choices
    with the certified accuracy."""
    from snapdp.data import statistics

    memo: dict[tuple[PlannedQuery, Fraction], float] = {}

    def accuracy_at(pq: PlannedQuery, epsilon: Fraction) -> float:
        if (pq, epsilon) not in memo:
            memo[pq, epsilon] = _statement(pq, epsilon)
        return memo[pq, epsilon]

    def _statement(pq: PlannedQuery, epsilon: Fraction) -> float:
        compiled = statistics.compile_query(pq.query, schema, epsilon)
        noises = statistics.calibrate(compiled, presume_certified=presume_certified)
        alpha = float(1 - Fraction(repr(pq.confidence)))
        statement = statistics.accuracy_of(compiled, noises, pq.confidence, alpha)
        return float(statement.at(pq.group_size))

    return accuracy_at


def usefulness_flags(schema: Schema, allocation: Allocation) -> list[str]:
    """Warnings about a planned query's usefulness (``snapdp.usefulness.flags`` of each of its
    mechanisms at its planned ε), from public parameters only; one plain sentence each."""
    from snapdp import usefulness
    from snapdp.data import statistics
    from snapdp.mechanism import SnappingMechanism

    pq = allocation.planned
    compiled = statistics.compile_query(pq.query, schema, allocation.epsilon)
    alpha = float(1 - Fraction(repr(pq.confidence)))
    out: list[str] = []
    for noise in statistics.calibrate(compiled):
        mech = SnappingMechanism(
            noise.epsilon, noise.sensitivity, noise.part.lower, noise.part.upper
        )
        for flag in usefulness.flags(mech, alpha):
            text = f"{noise.part.name}: {flag.message}"
            if text not in out:
                out.append(text)
    return out


# -- the planner ------------------------------------------------------------------------------
def smallest_epsilon(
    accuracy_at: Callable[[Fraction], float], target: Fraction, label: str = "query"
) -> Fraction:
    """The smallest ε (to a relative :data:`TOLERANCE`, rounded up to a short decimal) whose
    accuracy is ≤ ``target``, for an accuracy non-increasing in ε; a ParameterError when no ε in
    [2^-30, 2^20] meets it. The result always meets the target (checked)."""

    cache: dict[Fraction, float] = {}

    def acc(eps: Fraction) -> float:
        if eps not in cache:
            cache[eps] = accuracy_at(eps)
        return cache[eps]

    def meets(eps: Fraction) -> bool:
        return Fraction(acc(eps)) <= target

    # A first guess from ± ≈ c/ε (exact for the noise scale, up to the power-of-two grid), then
    # a bracket grown by factors of 1.05, 1.05², … around it: few evaluations, each costly.
    first = acc(Fraction(1))
    guess = Fraction(1) if first <= 0 else _round_up_short(Fraction(first) / target)
    guess = min(max(guess, _EPS_MIN), _EPS_MAX)
    step = Fraction(21, 20)
    if meets(guess):
        hi, lo = guess, guess / step
        while meets(lo):
            hi, step = lo, step * step
            lo = hi / step
            if lo < _EPS_MIN:
                return hi
    else:
        lo, hi = guess, min(guess * step, _EPS_MAX)
        while not meets(hi):
            if hi >= _EPS_MAX:
                raise ParameterError(
                    f"the target accuracy ±{_text(target)} of {label} cannot be met at any ε: "
                    f"even ε = {_EPS_MAX} gives ±{acc(_EPS_MAX):.6g}",
                    parameter="accuracy",
                )
            lo, step = hi, step * step
            hi = min(lo * step, _EPS_MAX)
    while hi > lo * (1 + TOLERANCE):  # invariant: not meets(lo), meets(hi)
        mid = (lo + hi) / 2
        if meets(mid):
            hi = mid
        else:
            lo = mid
    short = _round_up_short(hi)
    return short if meets(short) else hi


def _round_up_short(x: Fraction) -> Fraction:
    """The decimal with the fewest significant digits in [x, x·(1 + TOLERANCE)]."""
    limit = x * (1 + TOLERANCE)
    for digits in range(1, 30):
        with localcontext() as ctx:
            ctx.prec = digits
            ctx.rounding = ROUND_CEILING
            d = Fraction(Decimal(x.numerator) / Decimal(x.denominator))
        if x <= d <= limit:
            return d
    return x


@dataclass(frozen=True)
class Allocation:
    """One query's planned ε and the ± it will have (at its confidence; for ratio statistics,
    for its reference group size)."""

    planned: PlannedQuery
    epsilon: Fraction
    accuracy: float

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        pq = self.planned
        out: dict[str, Any] = {
            "query": pq.query.label,
            "statistic": pq.query.statistic,
            "how": pq.how,
            "epsilon": _text(self.epsilon),
            "accuracy": self.accuracy,
            "confidence": pq.confidence,
        }
        if pq.accuracy is not None:
            out["target"] = float(pq.accuracy)
        if pq.weight is not None:
            out["weight"] = _text(pq.weight)
        if pq.depends_on_group_size:
            out["group_size"] = pq.group_size
        return out


@dataclass(frozen=True)
class PlanPreview:
    """The planner's answer, before anything is spent: per query its ε and ±, the total, and the
    assumptions the ± rest on."""

    allocations: tuple[Allocation, ...]
    total: Fraction
    total_epsilon: Fraction | None
    assumptions: tuple[str, ...] = ()

    @property
    def epsilons(self) -> list[Fraction]:
        """The per-query exact ε, in plan order."""
        return [a.epsilon for a in self.allocations]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (ε as exact decimal or p/q strings)."""
        return {
            "queries": [a.as_dict() for a in self.allocations],
            "total_epsilon_used": _text(self.total),
            "total_epsilon": None if self.total_epsilon is None else _text(self.total_epsilon),
            "assumptions": list(self.assumptions),
        }

    def describe(self) -> str:
        """A plain-text table."""
        rows = [("query", "how", "epsilon", "± (confidence)")]
        for a in self.allocations:
            pq = a.planned
            how = {
                "epsilon": "fixed ε",
                "accuracy": f"target ±{_num(float(pq.accuracy or 0))}",
                "weight": f"weight {_text(pq.weight or Fraction(0))}",
            }[pq.how]
            rows.append(
                (
                    pq.query.label,
                    how,
                    _eps_text(a.epsilon),
                    f"±{_num(a.accuracy)} ({pq.confidence:g})",
                )
            )
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = [
            "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
        ]
        lines.insert(1, "  ".join("-" * w for w in widths))
        total = f"total ε: {_eps_text(self.total)}"
        if self.total_epsilon is not None:
            total += f" of {_eps_text(self.total_epsilon)}"
        lines += ["", total]
        lines += [f"assumes: {a}" for a in self.assumptions]
        return "\n".join(lines)


def plan_epsilons(
    queries: Sequence[PlannedQuery],
    accuracy_at: AccuracyAt,
    total_epsilon: Fraction | None = None,
    search_accuracy_at: AccuracyAt | None = None,
) -> PlanPreview:
    """Plan every query's ε (see the module docstring); spends nothing, reads no data.

    ``search_accuracy_at``: a faster accuracy for the search over ε (e.g. with presumed L1
    certificates); each target query's choice is then checked with ``accuracy_at`` and searched
    again with it when the check fails, so every stated ± is ``accuracy_at``'s.

    Fixed queries keep their ε; target queries get the smallest ε meeting their target; weighted
    queries share ``total_epsilon`` minus the others, in proportion to their weights. A clear
    ParameterError when the fixed and target ε exceed ``total_epsilon`` (or leave nothing for
    the weighted queries), or when weights are given without a total.
    """
    if not queries:
        raise ParameterError("a plan needs at least one query", parameter="query")
    eps: list[Fraction | None] = []
    for pq in queries:
        if pq.epsilon is not None:
            eps.append(pq.epsilon)
        elif pq.accuracy is not None:
            acc = pq.accuracy

            def one(e: Fraction, pq: PlannedQuery = pq) -> float:
                return accuracy_at(pq, e)

            chosen: Fraction | None = None
            if search_accuracy_at is not None:

                def fast(e: Fraction, pq: PlannedQuery = pq) -> float:
                    return search_accuracy_at(pq, e)

                chosen = smallest_epsilon(fast, acc, repr(pq.query.label))
                if Fraction(one(chosen)) > acc:
                    chosen = None
            if chosen is None:
                chosen = smallest_epsilon(one, acc, repr(pq.query.label))
            eps.append(chosen)
        else:
            eps.append(None)
    fixed = sum((e for e in eps if e is not None), Fraction(0))
    weighted = [pq for pq in queries if pq.weight is not None]
    if total_epsilon is not None and fixed > total_epsilon:
        parts = ", ".join(
            f"{pq.query.label} ε = {_eps_text(e)}"
            for pq, e in zip(queries, eps, strict=True)
            if e is not None
        )
        raise ParameterError(
            f"the targets cannot be met within total_epsilon = {_eps_text(total_epsilon)}: the "
            f"fixed and target queries alone need ε = {_eps_text(fixed)} ({parts}); raise "
            "total_epsilon, relax the targets or declare a larger group_size",
            parameter="total_epsilon",
        )
    if weighted:
        if total_epsilon is None:
            raise ParameterError(
                "queries with a `weight` share what is left of `total_epsilon`, which the plan "
                "does not declare",
                parameter="weight",
            )
        left = total_epsilon - fixed
        if left <= 0:
            raise ParameterError(
                f"nothing is left of total_epsilon = {_eps_text(total_epsilon)} for the weighted "
                f"queries: the fixed and target queries need ε = {_eps_text(fixed)}",
                parameter="total_epsilon",
            )
        weights = sum((pq.weight or Fraction(0) for pq in weighted), Fraction(0))
        eps = [
            e if e is not None else left * (pq.weight or Fraction(0)) / weights
            for pq, e in zip(queries, eps, strict=True)
        ]
    final = [e for e in eps if e is not None]
    allocations = tuple(
        Allocation(pq, e, accuracy_at(pq, e)) for pq, e in zip(queries, final, strict=True)
    )
    sizes = sorted({pq.group_size for pq in queries if pq.depends_on_group_size})
    assumptions = tuple(
        f"the ± of means, variances and quantiles is for a group of {n:,} rows "
        "(declare `group_size`; a smaller group has a larger ±)"
        for n in sizes
    )
    return PlanPreview(allocations, sum(final, Fraction(0)), total_epsilon, assumptions)


# -- plans ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PlanRun:
    """What :meth:`Plan.run` released: the results (one per query, plan order), the preview it
    followed, the files written (if any) and the ledger it spent on."""

    results: tuple[QueryResult, ...]
    preview: PlanPreview
    files: tuple[Path, ...] = ()
    ledger: Any = None


@dataclass
class Plan:
    """A release plan: the declaration, the source, the queries and the budget.

    Build it in code (``Plan(schema, queries, source="data.csv", total_epsilon=2)``) or load it
    from a TOML file (:meth:`load`, docs/plans.md). ``source``: a path (relative paths resolve
    against ``base``, the plan file's folder) or any data :class:`PrivateTable` accepts.
    """

    schema: Schema
    queries: Sequence[PlannedQuery]
    source: object = None
    total_epsilon: Fraction | None = None
    base: Path | None = None
    path: Path | None = None
    consistent: bool | str = False
    _locator: KeyLocator | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.queries = tuple(self.queries)
        check_mode(self.consistent)  # docs/data.md, "Tables that add up"
        if not self.queries:
            raise ParameterError("a plan needs at least one query", parameter="query")
        if self.total_epsilon is not None:
            self.total_epsilon = check_epsilon("total_epsilon", self.total_epsilon)
        for i, pq in enumerate(self.queries):
            if not isinstance(pq, PlannedQuery):
                raise ParameterError(
                    f"a plan's queries must be PlannedQuery objects, not {pq!r}",
                    parameter="query",
                )
            self._check_query(i, pq)
        confidences = {pq.confidence for pq in self.queries}
        if len(confidences) > 1:
            raise self._error(
                ("query", 1, "confidence"),
                "every query of a plan states its ± at one confidence (one release); declare "
                f"`confidence` once in [data], not {sorted(confidences)}",
                "confidence",
            )

    # -- loading -----------------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | Path) -> Plan:
        """A plan from a TOML file; errors name the file, the line and the key."""
        p = Path(path)
        data, locator = load_toml(p)
        return _Loader(p, data, locator).plan()

    # -- planning and running ----------------------------------------------------------------
    def preview(self, accuracy_at: AccuracyAt | None = None) -> PlanPreview:
        """Every query's ε and ± before anything is spent (never reads the data)."""
        search = None
        if accuracy_at is None:
            search = statement_accuracy(self.schema, presume_certified=True)
        acc = accuracy_at if accuracy_at is not None else statement_accuracy(self.schema)
        try:
            return plan_epsilons(self.queries, acc, self.total_epsilon, search)
        except PlanFileError:
            raise
        except ParameterError as exc:
            key: Path_ = ("data", "total_epsilon")
            if exc.parameter in ("accuracy", "weight"):
                key = ("query",)
            raise self._error(key, str(exc), exc.parameter) from None

    def source_path(self) -> object:
        """The source, with a relative path resolved against the plan file's folder."""
        if isinstance(self.source, (str, Path)):
            p = Path(self.source)
            if not p.is_absolute() and self.base is not None:
                p = self.base / p
            return str(p)
        return self.source

    def run(
        self,
        *,
        ledger: object = None,
        total_epsilon: object = None,
        output: str | Path | None = None,
        engine: Engine | None = None,
        rng: np.random.Generator | None = None,
        dataset: str | None = None,
        preview: PlanPreview | None = None,
    ) -> PlanRun:
        """Release every query as ONE ledger entry (all or nothing) and, with ``output``, write
        ``results.csv``, ``results.parquet``, ``results.json`` and ``report.html`` there.

        ``ledger``: a path or :class:`~snapdp.data.ledger.Ledger` (None: in memory);
        ``total_epsilon``: the ledger's total when it is created (default: the plan's
        ``total_epsilon``, else the plan's total). The output folder is created and checked
        writable before anything is spent. ``rng``: seeded noise, NOT private (tests only).
        ``preview``: this plan's :meth:`preview`, to skip planning again.
        """
        from snapdp.data.release import PrivateTable
        from snapdp.data.report import write_report
        from snapdp.data.results import write_results

        if preview is None:
            preview = self.preview()
        elif tuple(a.planned for a in preview.allocations) != tuple(self.queries):
            raise ParameterError("`preview` is not this plan's preview", parameter="preview")
        out_dir = None if output is None else _prepare_output(Path(output))
        if engine is None:
            engine = _default_engine(self.source_path(), self.schema)
        given = None if total_epsilon is None else check_epsilon("total_epsilon", total_epsilon)
        default_total = self.total_epsilon if self.total_epsilon is not None else preview.total
        from snapdp.data.ledger import Ledger

        table = PrivateTable(
            None,
            self.schema,
            ledger=Ledger(None, preview.total),
            dataset=dataset,
            engine=engine,
            rng=rng,
        )
        queries = [pq.query for pq in self.queries]
        confidence = self.queries[0].confidence
        table.validate(  # before any ledger file
            queries, preview.epsilons, confidence=confidence, consistent=self.consistent
        )
        if isinstance(ledger, Ledger):
            table.ledger = ledger
        elif ledger is None:
            table.ledger = Ledger(None, given or default_total, dataset=table.dataset)
        else:
            table.ledger = _open_ledger(Path(str(ledger)), given, default_total, table.dataset)
        results = table.release(
            queries, preview.epsilons, confidence=confidence, consistent=self.consistent
        )
        files: tuple[Path, ...] = ()
        if out_dir is not None:
            files = (
                *write_results(results, out_dir),
                write_report(results, out_dir, preview, self.schema),
            )
        return PlanRun(tuple(results), preview, files, table.ledger)

    # -- checks ------------------------------------------------------------------------------
    def _check_query(self, i: int, pq: PlannedQuery) -> None:
        q = pq.query
        overrides = {c for c, _ in q.bins}
        for j, name in enumerate(q.by):
            col = self._column(name, ("query", i, "by"))
            if name not in overrides and not col.is_grouping:
                raise self._error(
                    ("query", i, "by"),
                    f"column {name!r} has no declared `keys` or `bins`: it cannot group a "
                    f"release (by[{j}])",
                    "by",
                )
        if q.column is not None:
            col = self._column(q.column, ("query", i, "column"))
            if col.lower is None:
                raise self._error(
                    ("columns", q.column),
                    f"column {q.column!r} needs `lower` and `upper` bounds for a "
                    f"{q.statistic} (a missing bound)",
                    "lower",
                )

    def _column(self, name: str, key: Path_) -> Column:
        try:
            return self.schema.column(name)
        except ParameterError as exc:
            raise self._error(key, str(exc), "columns") from None

    def _error(self, key: Path_, message: str, parameter: str | None) -> ParameterError:
        if self.path is None:
            return ParameterError(message, parameter=parameter)
        return _located(self.path, self._locator, key, message, parameter)


def _located(
    path: Path, locator: KeyLocator | None, key: Path_, message: str, parameter: str | None
) -> PlanFileError:
    line = None if locator is None else locator.line(key)
    where = str(path) + ("" if line is None else f", line {line}")
    return PlanFileError(f"{where}, key `{describe_key(key)}`: {message}", parameter=parameter)


def _open_ledger(path: Path, given: Fraction | None, default: Fraction, dataset: str) -> Any:
    """The ledger at ``path`` for ``dataset``: with the total given, or the one it already keeps
    for the dataset, or else (a new budget) the plan's total."""
    from snapdp.data.ledger import Ledger

    if given is not None:
        return Ledger(path, given, dataset=dataset)
    try:
        return Ledger(path, None, dataset=dataset)
    except ParameterError as exc:
        if exc.parameter != "total_epsilon":
            raise
    return Ledger(path, default, dataset=dataset)


def _prepare_output(out: Path) -> Path:
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".snapdp-write-check"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ParameterError(
            f"`output` folder {str(out)!r} cannot be written ({exc.strerror or 'error'}); "
            "nothing was spent",
            parameter="output",
        ) from None
    return out


def _default_engine(source: object, schema: Schema) -> Engine:
    """The release's default engine for ``source`` (DuckDB; Spark for a Spark DataFrame)."""
    from snapdp.data.release import default_engine

    if source is None:
        raise ParameterError("the plan declares no `source`", parameter="source")
    return default_engine(source, schema)


# -- the TOML loader --------------------------------------------------------------------------
_DATA_KEYS: Mapping[str, tuple[str, ...]] = {
    "source": ("path", "file"),
    "privacy_unit": ("unit", "privacy_id"),
    "max_rows_per_unit": ("max_contributions", "k"),
    "max_groups_per_unit": ("max_partitions_contributed", "l0"),
    "max_rows_per_group": ("max_contributions_per_partition", "linf"),
    "total_epsilon": ("epsilon",),
    "confidence": (),
    "group_size": ("reference_group_size",),
    "max_rows": (),
    "rows": ("row_count",),
    "null_units": (),
    "encoding": (),
    "delimiter": (),
    "header": (),
    "dataset": ("name",),
    "consistent": (),
}
_COLUMN_KEYS: Mapping[str, tuple[str, ...]] = {
    "type": (),
    "lower": ("min",),
    "upper": ("max",),
    "keys": ("values", "domain"),
    "bins": ("edges",),
    "nulls": ("null", "on_null"),
}
_QUERY_KEYS: Mapping[str, tuple[str, ...]] = {
    "statistic": ("stat",),
    "column": (),
    "by": ("group_by",),
    "bins": ("edges",),
    "quantiles": ("probabilities",),
    "resolution": (),
    "method": (),
    "name": ("label",),
    "epsilon": (),
    "accuracy": ("target", "target_accuracy"),
    "confidence": (),
    "weight": (),
    "group_size": ("reference_group_size",),
}


class _Loader:
    """Turns the parsed TOML into a :class:`Plan`, naming file, line and key on every error."""

    def __init__(self, path: Path, data: dict[str, Any], locator: KeyLocator) -> None:
        self.path = path
        self.data = data
        self.locator = locator

    def error(self, key: Path_, message: str, parameter: str | None = None) -> PlanFileError:
        return _located(self.path, self.locator, key, message, parameter)

    def table(self, key: Path_, value: object) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.error(key, f"must be a table, not {_kind(value)}")
        return value

    def canonical(
        self, key: Path_, table: dict[str, Any], known: Mapping[str, tuple[str, ...]]
    ) -> dict[str, tuple[Any, Path_]]:
        """The table's entries under their canonical names, with each one's own key path."""
        alias = {a: name for name, aliases in known.items() for a in (name, *aliases)}
        out: dict[str, tuple[Any, Path_]] = {}
        for k, v in table.items():
            if k not in alias:
                raise self.error(
                    (*key, k), f"unknown key {k!r}; known: {', '.join(known)}", parameter=k
                )
            name = alias[k]
            if name in out:
                raise self.error((*key, k), f"{k!r} repeats {name!r} (an alias)", parameter=k)
            out[name] = (v, (*key, k))
        return out

    def plan(self) -> Plan:
        for k in self.data:
            if k not in ("data", "columns", "query"):
                raise self.error(
                    (k,), f"unknown table {k!r}; a plan has [data], [columns] and [[query]]"
                )
        if "data" not in self.data:
            raise self.error((), "the plan has no [data] table (the source and the budget)")
        data = self.canonical(("data",), self.table(("data",), self.data["data"]), _DATA_KEYS)
        columns = self.columns()
        schema = self.schema(data, columns)
        if "query" not in self.data:
            raise self.error((), "the plan has no [[query]]")
        raw_queries = self.data["query"]
        if not isinstance(raw_queries, list):
            raise self.error(("query",), "must be an array of tables: write [[query]]")
        conf_default = DEFAULT_CONFIDENCE
        if "confidence" in data:
            conf_default = self.number(data["confidence"], float)
        size_default = DEFAULT_GROUP_SIZE
        if "group_size" in data:
            size_default = self.integer(data["group_size"])
        queries = [self.query(i, q, conf_default, size_default) for i, q in enumerate(raw_queries)]
        total = None
        if "total_epsilon" in data:
            value, key = data["total_epsilon"]
            total = self.wrap(key, lambda: check_epsilon("total_epsilon", value))
        source: object = None
        if "source" in data:
            value, key = data["source"]
            if not isinstance(value, str) or not value:
                raise self.error(key, f"must be a path (a string), not {_kind(value)}")
            source = value
        else:
            raise self.error(("data",), "[data] needs a `source` (a path relative to the plan)")
        consistent: bool | str = False
        if "consistent" in data:
            value, key = data["consistent"]
            self.wrap(key, lambda: check_mode(value))
            consistent = value
        plan: Plan = self.wrap(
            ("query",),
            lambda: Plan(
                schema,
                queries,
                source=source,
                total_epsilon=total,
                base=self.path.parent,
                path=self.path,
                consistent=consistent,
                _locator=self.locator,
            ),
        )
        return plan

    def wrap(self, key: Path_, build: Callable[[], Any]) -> Any:
        try:
            return build()
        except PlanFileError:
            raise
        except ParameterError as exc:
            raise self.error(key, str(exc), exc.parameter) from None

    def number(self, entry: tuple[Any, Path_], kind: type) -> Any:
        value, key = entry
        if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
            raise self.error(key, f"must be a number, not {_kind(value)}")
        return kind(value)

    def integer(self, entry: tuple[Any, Path_]) -> int:
        value, key = entry
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise self.error(key, f"must be an integer >= 1, not {value!r}")
        return value

    def columns(self) -> list[Column]:
        raw = self.data.get("columns")
        if raw is None:
            return []
        table = self.table(("columns",), raw)
        out = []
        for name, spec in table.items():
            key: Path_ = ("columns", name)
            if isinstance(spec, str):
                spec = {"type": spec}
            entries = self.canonical(key, self.table(key, spec), _COLUMN_KEYS)
            if "type" not in entries:
                raise self.error(key, f"column {name!r} needs a `type`", "type")
            kw: dict[str, Any] = {k: v for k, (v, _) in entries.items() if k != "nulls"}
            for k in ("keys", "bins"):
                if k in kw:
                    if not isinstance(kw[k], list):
                        raise self.error(entries[k][1], f"must be a list, not {_kind(kw[k])}", k)
                    kw[k] = tuple(kw[k])
            if "nulls" in entries:
                v, _ = entries["nulls"]
                kw["nulls"] = NullRule() if v == "drop" else NullRule("impute", v)

            def build(name: str = name, kw: dict[str, Any] = kw) -> Column:
                return Column(name, **kw)

            try:
                out.append(build())
            except ParameterError as exc:
                sub = entries.get(exc.parameter or "", (None, key))[1]
                raise self.error(sub, str(exc), exc.parameter) from None
        return out

    def schema(self, data: dict[str, tuple[Any, Path_]], columns: list[Column]) -> Schema:
        bounds: dict[str, Any] = {}
        for k in ("max_rows_per_unit", "max_groups_per_unit", "max_rows_per_group"):
            if k in data:
                bounds[k] = self.integer(data[k])
        kw: dict[str, Any] = {}
        if "privacy_unit" in data:
            v, key = data["privacy_unit"]
            if not isinstance(v, str) or not v:
                raise self.error(key, f"must be a column name, not {_kind(v)}", "privacy_unit")
            kw["privacy_unit"] = v
        for k in ("max_rows", "rows"):
            if k in data:
                kw[k] = self.integer(data[k])
        if "null_units" in data:
            kw["null_units"] = data["null_units"][0]
        csv: dict[str, Any] = {
            k: data[k][0] for k in ("encoding", "delimiter", "header") if k in data
        }
        try:
            opts = CsvOptions(**csv)
        except (ParameterError, TypeError) as exc:
            key = data.get("delimiter", (None, ("data",)))[1]
            raise self.error(key, str(exc), "delimiter") from None
        if bounds and "privacy_unit" not in kw:
            first = next(iter(bounds))
            raise self.error(
                data[first][1],
                "contribution bounds need a `privacy_unit` column (without one, each row is a "
                "unit)",
                "privacy_unit",
            )
        try:
            return Schema(tuple(columns), bounds=ContributionBounds(**bounds), csv=opts, **kw)
        except ParameterError as exc:
            key = data.get(exc.parameter or "", (None, ("data",)))[1]
            raise self.error(key, str(exc), exc.parameter) from None

    def query(self, i: int, raw: object, conf: float, size: int) -> PlannedQuery:
        key: Path_ = ("query", i)
        entries = self.canonical(key, self.table(key, raw), _QUERY_KEYS)
        if "statistic" not in entries:
            raise self.error(key, f"a query needs a `statistic` ({', '.join(STATISTICS)})")
        kw: dict[str, Any] = {}
        for k in ("statistic", "column", "method", "name"):
            if k in entries:
                kw[k] = entries[k][0]
        if "by" in entries:
            by, bkey = entries["by"]
            by = [by] if isinstance(by, str) else by
            if not isinstance(by, list) or not all(isinstance(b, str) for b in by):
                raise self.error(bkey, "must be a column name or a list of them", "by")
            kw["by"] = tuple(by)
        if "bins" in entries:
            bins, bkey = entries["bins"]
            if isinstance(bins, list):
                by = kw.get("by", ())
                if len(by) != 1:
                    raise self.error(
                        bkey,
                        "a list of edges needs exactly one `by` column; with several, write "
                        "bins = { column = [edges] }",
                        "bins",
                    )
                bins = {by[0]: bins}
            if not isinstance(bins, dict) or not all(isinstance(e, list) for e in bins.values()):
                raise self.error(bkey, "must be a list of edges or a table of them", "bins")
            kw["bins"] = tuple((c, tuple(self.edges(bkey, c, e))) for c, e in bins.items())
        if "quantiles" in entries:
            qs, qkey = entries["quantiles"]
            if not isinstance(qs, list) or not all(
                isinstance(x, (int, Decimal)) and not isinstance(x, bool) for x in qs
            ):
                raise self.error(qkey, "must be a list of probabilities", "quantiles")
            kw["quantiles"] = tuple(Fraction(x) for x in qs)
        if "resolution" in entries:
            kw["resolution"] = Fraction(self.number(entries["resolution"], Decimal))
        query = self.build_query(key, entries, kw)
        how: dict[str, Any] = {}
        for k in ("epsilon", "accuracy", "weight"):
            if k in entries:
                how[k] = Fraction(self.number(entries[k], Decimal))
        if len(how) != 1:
            raise self.error(
                key,
                "a query gives exactly one of `epsilon`, `accuracy` and `weight`, not "
                + (", ".join(how) or "none"),
                "epsilon",
            )
        if "confidence" in entries:
            conf = self.number(entries["confidence"], float)
        if "group_size" in entries:
            size = self.integer(entries["group_size"])
        try:
            return PlannedQuery(query, confidence=conf, group_size=size, **how)
        except ParameterError as exc:
            sub = entries.get(exc.parameter or "", (None, key))[1]
            raise self.error(sub, str(exc), exc.parameter) from None

    def edges(self, key: Path_, column: str, edges: list[Any]) -> list[Fraction]:
        if not all(isinstance(e, (int, Decimal)) and not isinstance(e, bool) for e in edges):
            raise self.error(key, f"bins of {column!r} must be numbers", "bins")
        return [Fraction(e) for e in edges]

    def build_query(
        self, key: Path_, entries: dict[str, tuple[Any, Path_]], kw: dict[str, Any]
    ) -> Query:
        try:
            return Query(**kw)
        except ParameterError as exc:
            sub = entries.get(exc.parameter or "", (None, key))[1]
            raise self.error(sub, str(exc), exc.parameter) from None
        except TypeError as exc:
            raise self.error(key, f"invalid query: {exc}") from None


def _kind(value: object) -> str:
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "a list"
    return repr(value)


def _positive(name: str, x: object) -> Fraction:
    if isinstance(x, bool) or not isinstance(x, (int, Fraction, Decimal, float)):
        raise ParameterError(f"`{name}` must be a number > 0, not {x!r}", parameter=name)
    if isinstance(x, float) and not math.isfinite(x):
        raise ParameterError(f"`{name}` must be finite, not {x!r}", parameter=name)
    value = Fraction(x)
    if not value > 0:
        raise ParameterError(f"`{name}` must be > 0, not {x!r}", parameter=name)
    return value


def _text(x: Fraction) -> str:
    """A Fraction as an exact decimal when it is one, else p/q."""
    from snapdp.data.results import _fraction_text

    return _fraction_text(x)


def _eps_text(x: Fraction) -> str:
    exact = _text(x)
    return exact if "/" not in exact and len(exact) <= 12 else f"{float(x):.6g} ({exact})"


def _num(x: float) -> str:
    return f"{x:,.6g}" if abs(x) < 1e6 else f"{x:,.0f}"


def with_group_size(pq: PlannedQuery, n: int) -> PlannedQuery:
    """A copy of ``pq`` stated for groups of ``n`` rows."""
    return replace(pq, group_size=n)
