"""The data-release API: private counts, sums, means and histograms over a table (DESIGN §8).

>>> from snapdp.data import PrivateTable, Count, Mean          # doctest: +SKIP
>>> t = PrivateTable("PUMS.csv", total_epsilon=1.0, max_rows=1000)   # doctest: +SKIP
>>> t.count(epsilon=0.5).value                               # doctest: +SKIP

Order of a release: check the budget; aggregate (the engine); refuse bad data cleanly; draw the
noise (one ``SnappingMechanism.release_many`` call per statistic); **commit the spend to the
ledger**; only then return the noisy values. A refused release records nothing.

Budget split: a release of several statistics with total ε gives statistic i the share
ε·wᵢ/Σw (equal shares by default); a ratio mean splits its share half to its sum, half to its
count; a grouped statistic gives every group its share / m, where m = min(k, #groups) is the most
groups one unit can touch (m = 1 with one row per unit: parallel composition).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from snapdp._validation import check_epsilon, check_positive_finite, check_probability
from snapdp.data.engine import (
    AggregatePlan,
    Aggregates,
    ColumnPlan,
    Engine,
    ExecutorNoiseEngine,
    NoiseRequest,
    source_array,
)
from snapdp.data.ledger import Ledger, dataset_name_for
from snapdp.data.sensitivity import (
    FixedPoint,
    NoiseSpec,
    count_spec,
    fixed_point,
    groups_touched,
    substitute_mean_spec,
    sum_spec,
)
from snapdp.data.spec import NULL_POLICIES, Count, Mean, NullPolicy, Statistic, Sum
from snapdp.errors import ParameterError
from snapdp.mechanism import SnappingMechanism

__all__ = ["AccuracyPreview", "PrivateTable", "StatisticResult"]

RELATION = "add or remove one privacy unit (at most {k} row(s) each)"
SUBSTITUTE = "substitute one unit's row (one row per unit, n = {n} public)"


@dataclass(frozen=True)
class StatisticResult:
    """One released statistic: values (one per declared key, or one), their accuracy at
    confidence ``1 − alpha`` (each value is within ± its accuracy of the true clamped,
    contribution-bounded statistic with probability >= 1 − alpha), the ε it spent, and the
    parameters of its mechanisms."""

    statistic: str
    keys: tuple[str, ...] | None
    values: tuple[float, ...]
    accuracy: tuple[float, ...]
    alpha: float
    epsilon: float
    delta: float
    relation: str
    mechanisms: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def value(self) -> float:
        """The released value of an ungrouped statistic."""
        if self.keys is not None:
            raise ParameterError(f"{self.statistic} is grouped: use .values or .as_dict()")
        return self.values[0]

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready description."""
        return {
            "statistic": self.statistic,
            "keys": None if self.keys is None else list(self.keys),
            "values": list(self.values),
            "accuracy": list(self.accuracy),
            "confidence": 1 - self.alpha,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "relation": self.relation,
            "mechanisms": self.mechanisms,
        }


@dataclass(frozen=True)
class AccuracyPreview:
    """The accuracy a statistic will have, before anything is spent (DESIGN §4).

    ``accuracy`` is None for a ratio mean, whose accuracy (a_sum + M·a_count)/ñ depends on the
    noisy count ñ; ``sum_accuracy`` and ``count_accuracy`` (each at α/2) then give it.
    """

    statistic: str
    alpha: float
    accuracy: float | None
    sum_accuracy: float | None = None
    count_accuracy: float | None = None
    magnitude: float | None = None

    def describe(self) -> str:
        """The accuracy in words."""
        if self.accuracy is not None:
            return f"±{self.accuracy:.6g}"
        return (
            f"±({self.sum_accuracy:.6g} + {self.magnitude:g}·{self.count_accuracy:.6g})/ñ, "
            "ñ the noisy count"
        )


@dataclass
class _Job:
    """One statistic inside a release: its ε share and the plan columns it reads."""

    statistic: Statistic
    epsilon: Fraction
    fixed: FixedPoint | None = None
    column_index: int | None = None


class PrivateTable:
    """A table behind a privacy budget.

    ``data``: a CSV/Parquet path, a pandas DataFrame or an Arrow table (DuckDB engine), or a
    Spark DataFrame (Spark engine); or pass ``engine`` (e.g. ``SparkEngine(path, spark=...)``).
    ``total_epsilon`` and ``ledger`` (a path, a :class:`Ledger`, or None for an in-memory one):
    the budget. ``max_rows``: a public upper bound on the number of rows (after contribution
    bounding); it sets the mechanisms' bounds. ``privacy_unit``/``max_rows_per_unit``: the unit
    whose addition or removal the guarantee covers (default: one row), and k. ``nulls``: what to do
    with a null (or NaN) in a value column: "error" (refuse), "drop", "lower"/"upper" (impute the
    bound). ``dataset``: the name of the budget in the ledger (default: the source's resolved
    path). ``rng``: a seeded numpy Generator makes the noise reproducible and NOT private (tests).
    """

    def __init__(
        self,
        data: object = None,
        *,
        max_rows: int,
        total_epsilon: float | None = None,
        ledger: Ledger | str | Path | None = None,
        privacy_unit: str | None = None,
        max_rows_per_unit: int = 1,
        nulls: NullPolicy = "error",
        engine: Engine | None = None,
        rng: np.random.Generator | None = None,
        dataset: str | None = None,
    ) -> None:
        self.max_rows = _positive_int("max_rows", max_rows)
        self.max_rows_per_unit = _positive_int("max_rows_per_unit", max_rows_per_unit)
        if privacy_unit is not None and (not isinstance(privacy_unit, str) or not privacy_unit):
            raise ParameterError(f"`privacy_unit` must be a column name, not {privacy_unit!r}")
        if privacy_unit is None and self.max_rows_per_unit != 1:
            raise ParameterError(
                "`max_rows_per_unit` > 1 needs a `privacy_unit` column (without one, each row is "
                f"a unit), not max_rows_per_unit={max_rows_per_unit!r}"
            )
        if nulls not in NULL_POLICIES:
            raise ParameterError(f"`nulls` must be one of {NULL_POLICIES}, not {nulls!r}")
        self.privacy_unit = privacy_unit
        self.nulls: NullPolicy = nulls
        if engine is None and type(data).__module__.startswith("pyspark"):
            from snapdp.data.spark_engine import SparkEngine

            engine = SparkEngine(data)
        if engine is None:
            from snapdp.data.duckdb_engine import DuckDBEngine

            if data is None:
                raise ParameterError("`data` is required (a path, a DataFrame or an Arrow table)")
            engine = DuckDBEngine(data)
        self.engine: Engine = engine
        if privacy_unit is not None and privacy_unit not in engine.column_names():
            raise ParameterError(
                f"privacy-unit column {privacy_unit!r} is not in the data; its columns are "
                + ", ".join(repr(c) for c in engine.column_names())
            )
        name = dataset or dataset_name_for(data, engine.describe())
        self.ledger = (
            ledger if isinstance(ledger, Ledger) else Ledger(ledger, total_epsilon, dataset=name)
        )
        self._rng = rng

    # -- budget ------------------------------------------------------------------------------
    @property
    def spent(self) -> float:
        """ε spent so far on this ledger (by every process)."""
        return float(self.ledger.spent())

    @property
    def remaining(self) -> float:
        """ε left on this ledger, rounded down."""
        r = self.ledger.remaining()
        f = float(r)
        return math.nextafter(f, 0.0) if Fraction(f) > r else f

    # -- one-statistic shortcuts ------------------------------------------------------------
    def count(self, epsilon: float, **kw: Any) -> StatisticResult:
        """A private row count (``by=``/``keys=`` for a histogram)."""
        return self.release([Count()], epsilon, **kw)[0]

    def sum(
        self, column: str, lower: float, upper: float, epsilon: float, **kw: Any
    ) -> StatisticResult:
        """A private sum of ``column`` clamped to [lower, upper]."""
        return self.release([Sum(column, lower, upper)], epsilon, **kw)[0]

    def mean(
        self, column: str, lower: float, upper: float, epsilon: float, *, method: str = "ratio",
        **kw: Any,
    ) -> StatisticResult:  # fmt: skip
        """A private mean of ``column`` clamped to [lower, upper] (see :class:`Mean`)."""
        return self.release([Mean(column, lower, upper, method)], epsilon, **kw)[0]  # type: ignore[arg-type]

    # -- accuracy before spending -----------------------------------------------------------
    def accuracy(
        self,
        statistics: Sequence[Statistic],
        epsilon: float,
        *,
        alpha: float = 0.05,
        split: Sequence[float] | None = None,
        by: str | None = None,
        keys: Sequence[object] | None = None,
    ) -> list[AccuracyPreview]:
        """The accuracy each statistic of :meth:`release` would have; spends nothing."""
        a = check_probability("alpha", alpha)
        jobs, _, key_tuple = self._jobs(statistics, epsilon, split, by, keys)
        m = groups_touched(self.max_rows_per_unit, None if key_tuple is None else len(key_tuple))
        return [self._preview(job, a, m) for job in jobs]

    def _preview(self, job: _Job, alpha: float, m: int) -> AccuracyPreview:
        stat = job.statistic
        specs = self._specs(job, m)
        if isinstance(stat, Mean) and stat.method == "ratio":
            assert job.fixed is not None
            a_s = _scaled_accuracy(specs["sum"], alpha / 2)
            a_c = _scaled_accuracy(specs["count"], alpha / 2)
            return AccuracyPreview(
                stat.label, alpha, None, a_s, a_c, float(job.fixed.magnitude * job.fixed.quantum)
            )
        (spec,) = specs.values()
        return AccuracyPreview(stat.label, alpha, _scaled_accuracy(spec, alpha))

    # -- release ------------------------------------------------------------------------------
    def release(
        self,
        statistics: Sequence[Statistic],
        epsilon: float,
        *,
        alpha: float = 0.05,
        split: Sequence[float] | None = None,
        by: str | None = None,
        keys: Sequence[object] | None = None,
    ) -> list[StatisticResult]:
        """Release ``statistics`` with total ``epsilon`` (split by ``split``, equal by default),
        grouped by column ``by`` over the declared ``keys`` if given. Spends ε on the ledger
        (committed) before returning; refuses, recording nothing, if the budget cannot pay."""
        a = check_probability("alpha", alpha)
        jobs, plan, key_tuple = self._jobs(statistics, epsilon, split, by, keys)
        total = check_epsilon("epsilon", epsilon)
        self.ledger.check(total)
        m = groups_touched(self.max_rows_per_unit, None if key_tuple is None else len(key_tuple))
        requests = [
            NoiseRequest(f"{i}.{name}", _SOURCES[name](job), spec)
            for i, job in enumerate(jobs)
            if not _is_substitute(job.statistic)
            for name, spec in self._specs(job, m).items()
        ]
        aggregates, noisy = self._aggregate_and_noise(plan, requests, jobs, key_tuple)
        results = [
            self._release_one(i, job, aggregates, noisy, key_tuple, a, m)
            for i, job in enumerate(jobs)
        ]
        delta = math.fsum(r.delta for r in results)
        query = {
            "statistics": [r.statistic for r in results],
            "epsilon_split": [r.epsilon for r in results],
            "by": by,
            "keys": None if key_tuple is None else list(key_tuple)[:50],
            "n_keys": None if key_tuple is None else len(key_tuple),
            "privacy_unit": self.privacy_unit,
            "max_rows_per_unit": self.max_rows_per_unit,
            "max_rows": self.max_rows,
            "nulls": self.nulls,
            "bounds": {
                j.statistic.label: [j.statistic.lower, j.statistic.upper]
                for j in jobs
                if not isinstance(j.statistic, Count)
            },
            "relation": sorted({r.relation for r in results}),
        }
        self.ledger.spend(
            total,
            math.nextafter(delta, math.inf) if delta > 0 else 0.0,
            ", ".join(r.statistic for r in results) + (f" by {by}" if by else ""),
            self.engine.describe(),
            query,
        )
        return results

    # -- internals ----------------------------------------------------------------------------
    def _jobs(
        self,
        statistics: Sequence[Statistic],
        epsilon: float,
        split: Sequence[float] | None,
        by: str | None,
        keys: Sequence[object] | None,
    ) -> tuple[list[_Job], AggregatePlan, tuple[str, ...] | None]:
        if isinstance(statistics, (Count, Sum, Mean)):
            statistics = [statistics]
        stats = list(statistics)
        if not stats:
            raise ParameterError("`statistics` must name at least one statistic")
        for s in stats:
            if not isinstance(s, (Count, Sum, Mean)):
                raise ParameterError(f"`statistics` must hold Count, Sum or Mean, not {s!r}")
        total = Fraction(float(check_positive_finite("epsilon", epsilon)))
        weights = [1.0] * len(stats) if split is None else list(split)
        if len(weights) != len(stats):
            raise ParameterError(
                f"`split` must have one weight per statistic ({len(stats)}), not {len(weights)}"
            )
        fw = [Fraction(float(check_positive_finite("split", w))) for w in weights]
        shares = [total * w / sum(fw) for w in fw]
        key_tuple: tuple[str, ...] | None = None
        if by is not None or keys is not None:
            if by is None or keys is None:
                raise ParameterError(
                    "a grouped release needs both `by` (the column) and `keys` (declared in "
                    "advance, public); got " + ("no keys" if keys is None else "no `by` column")
                )
            key_tuple = tuple(str(k) for k in keys)
            if not key_tuple:
                raise ParameterError("`keys` must declare at least one key")
            if len(set(key_tuple)) != len(key_tuple):
                raise ParameterError("`keys` must not repeat a key")
        columns: list[ColumnPlan] = []
        index: dict[tuple[str, int, int, int], int] = {}
        jobs: list[_Job] = []
        for stat, share in zip(stats, shares, strict=True):
            job = _Job(stat, share)
            if isinstance(stat, (Sum, Mean)):
                if isinstance(stat, Mean) and stat.method == "substitute":
                    self._check_substitute(key_tuple)
                fp = fixed_point(stat.column, stat.lower, stat.upper, self.max_rows)
                ident = (stat.column, fp.decimals, fp.lower_q, fp.upper_q)
                if ident not in index:
                    index[ident] = len(columns)
                    columns.append(
                        ColumnPlan(stat.column, fp.decimals, fp.lower_q, fp.upper_q, self.nulls)
                    )
                job.fixed, job.column_index = fp, index[ident]
            jobs.append(job)
        plan = AggregatePlan(
            columns=tuple(columns),
            privacy_unit=self.privacy_unit,
            max_rows_per_unit=self.max_rows_per_unit,
            by=by,
            keys=key_tuple,
        )
        return jobs, plan, key_tuple

    def _check_substitute(self, keys: tuple[str, ...] | None) -> None:
        if keys is not None:
            raise ParameterError("a substitute mean cannot be grouped (group sizes are not public)")
        if self.max_rows_per_unit != 1:
            raise ParameterError("a substitute mean needs one row per unit (max_rows_per_unit=1)")

    def _specs(self, job: _Job, m: int) -> dict[str, NoiseSpec]:
        stat, k, n = job.statistic, self.max_rows_per_unit, self.max_rows
        eps = job.epsilon / m
        if isinstance(stat, Count):
            return {"count": count_spec(eps, k, n)}
        assert job.fixed is not None
        if isinstance(stat, Sum):
            return {"sum": sum_spec(eps, k, job.fixed, n)}
        if stat.method == "substitute":
            return {"mean": substitute_mean_spec(job.epsilon, job.fixed, n)}
        return {"sum": sum_spec(eps / 2, k, job.fixed, n), "count": count_spec(eps / 2, k, n)}

    def _refuse_bad_data(self, plan: AggregatePlan, aggregates: Aggregates) -> None:
        for cp, agg in zip(plan.columns, aggregates.columns, strict=True):
            if agg.non_numeric:
                raise ParameterError(
                    f"column {cp.column!r} must be numeric but holds {agg.non_numeric} "
                    f"non-numeric value(s), e.g. {agg.example!r}; nothing was released"
                )
            if agg.nulls and self.nulls == "error":
                raise ParameterError(
                    f"column {cp.column!r} holds {agg.nulls} null/NaN value(s) among the rows "
                    "used; declare a null policy: nulls='drop', 'lower' or 'upper' (impute that "
                    "bound) — CLI: --nulls; nothing was released"
                )

    def _aggregate_and_noise(
        self,
        plan: AggregatePlan,
        requests: list[NoiseRequest],
        jobs: list[_Job],
        keys: tuple[str, ...] | None,
    ) -> tuple[Aggregates, dict[str, npt.NDArray[np.float64]]]:
        """The exact aggregates (refused if the data is bad) and the noisy arrays, in quanta.

        The noise is drawn in the engine (e.g. Spark executors) when the engine offers it, the
        release is grouped and large, no seeded rng was asked for and no substitute mean (which
        needs the exact sum on the driver) is among the statistics; else here, one vectorized
        ``release_many`` per request.
        """

        def refuse(agg: Aggregates) -> None:
            self._refuse_bad_data(plan, agg)

        engine = self.engine
        if (
            isinstance(engine, ExecutorNoiseEngine)
            and keys is not None
            and self._rng is None
            and not any(_is_substitute(j.statistic) for j in jobs)
            and engine.wants_executor_noise(len(keys))
        ):
            return engine.noisy_aggregate(plan, requests, refuse)
        aggregates = engine.aggregate(plan)
        refuse(aggregates)
        noisy = {
            r.key: self._mechanism(r.spec).release_many(source_array(aggregates, r.source))
            for r in requests
        }
        return aggregates, noisy

    def _release_one(
        self,
        index: int,
        job: _Job,
        aggregates: Aggregates,
        noisy: dict[str, npt.NDArray[np.float64]],
        keys: tuple[str, ...] | None,
        alpha: float,
        m: int,
    ) -> StatisticResult:
        stat = job.statistic
        specs = self._specs(job, m)
        # Driver-side mechanisms with the same parameters: for accuracy and the record only.
        mechanisms = {name: self._mechanism(spec) for name, spec in specs.items()}

        def scaled(name: str, a: float) -> tuple[tuple[float, ...], tuple[float, ...]]:
            return _scaled(noisy[f"{index}.{name}"], specs[name], mechanisms[name], a)

        relation = RELATION.format(k=self.max_rows_per_unit)
        params = {name: _describe(mech, specs[name]) for name, mech in mechanisms.items()}
        delta = m * math.fsum(mech.privacy.delta for mech in mechanisms.values())
        common = {
            "statistic": stat.label,
            "keys": keys,
            "alpha": alpha,
            "epsilon": float(job.epsilon),
            "delta": delta,
            "mechanisms": params,
        }
        if isinstance(stat, Count):
            values, acc = scaled("count", alpha)
            return StatisticResult(
                values=values,
                accuracy=acc,
                relation=relation,
                **common,  # type: ignore[arg-type]
            )
        assert job.fixed is not None and job.column_index is not None
        if isinstance(stat, Sum):
            values, acc = scaled("sum", alpha)
            return StatisticResult(
                values=values,
                accuracy=acc,
                relation=relation,
                **common,  # type: ignore[arg-type]
            )
        if stat.method == "substitute":
            col = aggregates.columns[job.column_index]
            n = int(col.counts[0])
            if n != self.max_rows or int(aggregates.rows[0]) != self.max_rows:
                raise ParameterError(
                    "a substitute mean needs the public row count n = max_rows to be the exact "
                    f"number of non-null values; max_rows={self.max_rows} does not match"
                )
            exact = Fraction(int(col.sums[0]), n)
            mech, spec = mechanisms["mean"], specs["mean"]
            out = mech.release(exact)
            a = _scaled_accuracy(spec, alpha, mech)
            return StatisticResult(
                values=(float(out) / float(spec.unit.denominator),),
                accuracy=(a,),
                relation=SUBSTITUTE.format(n=n),
                **common,  # type: ignore[arg-type]
            )
        sums, a_s = scaled("sum", alpha / 2)
        counts, a_c = scaled("count", alpha / 2)
        lo, hi = (
            float(job.fixed.lower_q * job.fixed.quantum),
            float(job.fixed.upper_q * job.fixed.quantum),
        )
        magnitude = float(job.fixed.magnitude * job.fixed.quantum)
        means, accs = [], []
        for s, c, es, ec in zip(sums, counts, a_s, a_c, strict=True):
            if c > 0:
                means.append(min(max(s / c, lo), hi))
                accs.append(min(hi - lo, _round_up((es + magnitude * ec) / c)))
            else:
                means.append((lo + hi) / 2)
                accs.append(hi - lo)
        return StatisticResult(
            values=tuple(means),
            accuracy=tuple(accs),
            relation=relation,
            **common,  # type: ignore[arg-type]
        )

    def _mechanism(self, spec: NoiseSpec) -> SnappingMechanism:
        return SnappingMechanism(
            spec.epsilon, spec.sensitivity, spec.lower, spec.upper, rng=self._rng
        )


_SOURCES: dict[str, Callable[[_Job], str]] = {
    "count": lambda job: "rows" if isinstance(job.statistic, Count) else f"count{job.column_index}",
    "sum": lambda job: f"sum{job.column_index}",
}


def _is_substitute(stat: Statistic) -> bool:
    return isinstance(stat, Mean) and stat.method == "substitute"


def _scaled(
    out: npt.NDArray[np.float64], spec: NoiseSpec, mech: SnappingMechanism, alpha: float
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Noisy values in quanta → data units, with the accuracy at ``alpha``."""
    if spec.unit != 1:  # unit = 10**-decimals: one correctly rounded division per value
        out = out / float(spec.unit.denominator)
    a = _scaled_accuracy(spec, alpha, mech)
    return tuple(float(v) for v in out), (a,) * len(out)


def _scaled_accuracy(spec: NoiseSpec, alpha: float, mech: SnappingMechanism | None = None) -> float:
    """The mechanism's accuracy (in quanta) in data units, rounded up."""
    if mech is None:
        mech = SnappingMechanism(spec.epsilon, spec.sensitivity, spec.lower, spec.upper)
    a = mech.accuracy(alpha)
    if spec.unit == 1:
        return a
    return _round_up(a / spec.unit.denominator)


def _round_up(x: float) -> float:
    return math.nextafter(x, math.inf)


def _describe(mech: SnappingMechanism, spec: NoiseSpec) -> dict[str, Any]:
    unit = spec.unit
    return {
        "epsilon": float(spec.epsilon),
        "sensitivity": float(Fraction(spec.sensitivity) * unit),
        "lower": float(spec.lower * unit),
        "upper": float(spec.upper * unit),
        "grid_spacing": float(Fraction(mech.grid_spacing) * unit),
        "precision": mech.precision,
        "delta": mech.privacy.delta,
    }


def _positive_int(name: str, x: object) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or int(x) < 1:
        raise ParameterError(f"`{name}` must be an integer >= 1, not {x!r}")
    return int(x)
