"""The Spark engine: the same clamped, contribution-bounded aggregates in Spark SQL (issue 7).

Same contract as :mod:`snapdp.data.engine` and the same SQL semantics as the DuckDB engine (the
value → quanta expression, the null/non-numeric counts, the key matching on the column's text
form, k rows per unit kept in a random order that looks only at the unit's rows), so both engines
compute identical exact aggregates (tested on the PUMS files). The privacy accounting, the ledger
and the accuracy stay in :mod:`snapdp.data.release`.

Noise: for fewer than ``executor_noise_threshold`` groups the exact aggregates are collected and
the driver adds the noise; for more, the noise is drawn in the executors by ``mapInPandas``: each
partition builds its own ``SnappingMechanism`` on the OS CSPRNG of the executor's Python worker and
releases its groups with one ``release_many``; only noisy values reach the driver. Executors need
snapdp installed (``pip install 'snapdp[spark]'`` on the cluster image).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from snapdp.data.engine import (
    AggregatePlan,
    Aggregates,
    ColumnPlan,
    NoiseRequest,
    canonical_int,
    check_plan_columns,
)
from snapdp.errors import ParameterError

__all__ = ["SparkEngine"]

_LIMIT = 1 << 62
_SIGNED_INTS = ("tinyint", "smallint", "int", "bigint")
_NUMERIC = ("tinyint", "smallint", "int", "bigint", "float", "double", "decimal", "boolean")


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


class SparkEngine:
    """An :class:`~snapdp.data.engine.Engine` over a Spark DataFrame, or a CSV/Parquet path
    (any URI Spark reads), or a pandas DataFrame (made into a Spark DataFrame)."""

    def __init__(
        self,
        source: object,
        *,
        spark: Any = None,
        executor_noise_threshold: int = 10_000,
        noise_partitions: int | None = None,
    ) -> None:
        try:
            from pyspark.sql import DataFrame, SparkSession
        except ImportError:  # pragma: no cover - exercised only without pyspark
            raise ParameterError(
                "the Spark engine needs pyspark: pip install 'snapdp[spark]'"
            ) from None
        self.executor_noise_threshold = int(executor_noise_threshold)
        self.noise_partitions = noise_partitions
        self.last_noise_location: str | None = None
        if isinstance(source, DataFrame):
            self._df = source
            self._label = "<spark DataFrame>"
            return
        session = spark or SparkSession.getActiveSession() or SparkSession.builder.getOrCreate()
        if isinstance(source, (str, Path)):
            text = str(source)
            if "://" not in text and not Path(text).exists():
                raise ParameterError(f"`data` file not found: {text!r}")
            lower = text.lower()
            if lower.endswith((".parquet", ".pq", ".parq")) or Path(text).is_dir():
                self._df = session.read.parquet(text)
            elif lower.endswith((".csv", ".tsv", ".txt", ".csv.gz")):
                self._df = session.read.csv(text, header=True, inferSchema=True)
            else:
                raise ParameterError(f"`data` must be a .csv or .parquet path, not {text!r}")
            self._label = text
        elif type(source).__module__.startswith("pandas"):
            self._df = session.createDataFrame(source)
            self._label = "<pandas.DataFrame on Spark>"
        else:
            raise ParameterError(
                "`data` for the Spark engine must be a Spark DataFrame, a path or a pandas "
                f"DataFrame, not {type(source).__name__}"
            )

    # -- Engine ------------------------------------------------------------------------------
    def describe(self) -> str:
        return self._label

    def column_names(self) -> list[str]:
        return list(self._df.columns)

    def aggregate(self, plan: AggregatePlan) -> Aggregates:
        """The exact aggregates, collected to the driver (one row per declared key)."""
        agg = self._aggregate_df(plan)
        rows = agg.collect()
        return self._to_aggregates(plan, rows, with_values=True)

    # -- ExecutorNoiseEngine -----------------------------------------------------------------
    def wants_executor_noise(self, n_groups: int) -> bool:
        return n_groups >= self.executor_noise_threshold

    def noisy_aggregate(
        self,
        plan: AggregatePlan,
        requests: Sequence[NoiseRequest],
        refuse: Callable[[Aggregates], None],
    ) -> tuple[Aggregates, dict[str, npt.NDArray[np.float64]]]:
        """Aggregate, check the data quality on the driver, then noise in the executors."""
        from pyspark.sql import functions as sf

        agg = self._aggregate_df(plan).localCheckpoint(eager=True)
        quality_cols = []
        for j in range(len(plan.columns)):
            quality_cols += [sf.sum(f"n{j}").alias(f"n{j}"), sf.sum(f"b{j}").alias(f"b{j}")]
        quality = self._to_aggregates(
            plan, [agg.agg(*quality_cols).first()] if quality_cols else [], with_values=False
        )
        refuse(quality)
        names = {r.key: f"v{i}" for i, r in enumerate(requests)}
        schema = "g long, " + ", ".join(f"{names[r.key]} double" for r in requests)
        specs = [(names[r.key], r.source, r.spec) for r in requests]
        if self.noise_partitions is not None:
            agg = agg.repartition(self.noise_partitions)
        noisy = agg.mapInPandas(_executor_noise(specs), schema=schema).toPandas()
        noisy = noisy.sort_values("g")
        n_groups = 1 if plan.keys is None else len(plan.keys)
        if len(noisy) != n_groups or not np.array_equal(noisy["g"].to_numpy(), np.arange(n_groups)):
            raise RuntimeError("Spark returned an incomplete set of groups")  # pragma: no cover
        self.last_noise_location = "executors"
        out = {r.key: noisy[names[r.key]].to_numpy(np.float64) for r in requests}
        return quality, out

    # -- internals ---------------------------------------------------------------------------
    def _aggregate_df(self, plan: AggregatePlan) -> Any:
        from pyspark.sql import Window
        from pyspark.sql import functions as sf

        check_plan_columns(plan, list(self._df.columns))
        session = self._df.sparkSession
        df = self._df
        grouped = plan.by is not None and plan.keys is not None
        if grouped:
            assert plan.by is not None and plan.keys is not None
            import pandas as pd

            if dict(df.dtypes)[plan.by].lower() in _SIGNED_INTS:
                key_col = sf.col(_q(plan.by)).cast("long")
                key_values: list[Any] = [canonical_int(k) for k in plan.keys]
                key_type = "long"
            else:
                key_col = sf.col(_q(plan.by)).cast("string")
                key_values, key_type = list(plan.keys), "string"
            keys = session.createDataFrame(
                pd.DataFrame({"__k": pd.Series(key_values, dtype=object),
                              "__g": np.arange(len(plan.keys))}),
                schema=f"__k {key_type}, __g long",
            )  # fmt: skip
        else:
            key_col = sf.lit(0).cast("long")
            keys = session.createDataFrame([(0, 0)], schema="__k long, __g long")
        df = df.withColumn("__k", key_col)
        if plan.privacy_unit is not None:
            if grouped:  # undeclared keys go first, so that k rows are kept among declared ones
                df = df.join(sf.broadcast(keys.select("__k")), "__k", "left_semi")
            order = Window.partitionBy(sf.col(_q(plan.privacy_unit))).orderBy(sf.col("__r"))
            df = (
                df.withColumn("__r", sf.rand())
                .withColumn("__rn", sf.row_number().over(order))
                .where(sf.col("__rn") <= int(plan.max_rows_per_unit))
            )
        # values once per row, then the aggregates by raw key; declared keys joined afterwards
        values = [sf.col("__k")]
        for j, cp in enumerate(plan.columns):
            values += self._value_columns(j, cp)
        exprs = [sf.count(sf.lit(1)).alias("rows")]
        for j, cp in enumerate(plan.columns):
            exprs += self._aggregate_exprs(j, cp)
        agg = df.select(*values).groupBy("__k").agg(*exprs)
        joined = keys.join(sf.broadcast(agg) if not grouped else agg, "__k", "left")
        cols = [sf.col("__g").alias("g"), sf.coalesce(sf.col("rows"), sf.lit(0)).alias("rows")]
        for j in range(len(plan.columns)):
            cols += [sf.coalesce(sf.col(f"{p}{j}"), sf.lit(0)).alias(f"{p}{j}") for p in "scnb"]
        return joined.select(*cols)

    def _value_columns(self, j: int, cp: ColumnPlan) -> list[Any]:
        """__v<j>: the value as a double (NULL for null/NaN/non-numeric); __b<j>: non-numeric."""
        from pyspark.sql import functions as sf

        col = _q(cp.column)
        numeric = dict(self._df.dtypes)[cp.column].lower().startswith(_NUMERIC)
        raw = f"CAST({col} AS DOUBLE)" if numeric else f"TRY_CAST({col} AS DOUBLE)"
        value = f"(CASE WHEN isnan({raw}) THEN NULL ELSE {raw} END)"
        bad = "FALSE" if numeric else f"({col} IS NOT NULL AND {raw} IS NULL)"
        return [sf.expr(value).alias(f"__v{j}"), sf.expr(bad).alias(f"__b{j}")]

    def _aggregate_exprs(self, j: int, cp: ColumnPlan) -> list[Any]:
        from pyspark.sql import functions as sf

        value = f"__v{j}"
        scale = 10**cp.decimals
        lo_d = float(cp.lower_q // scale - 1)
        hi_d = float(-(-cp.upper_q // scale) + 1)
        # Spark's least/greatest skip NULLs, as DuckDB's do: keep a null null explicitly.
        quanta = (
            f"(CASE WHEN {value} IS NULL THEN NULL ELSE "
            f"least(greatest(CAST(rint(least(greatest({value}, {lo_d!r}D), {hi_d!r}D) * "
            f"{float(scale)!r}D) AS BIGINT), {cp.lower_q}L), {cp.upper_q}L) END)"
        )
        if cp.nulls == "lower":
            quanta = f"coalesce({quanta}, {cp.lower_q}L)"
        elif cp.nulls == "upper":
            quanta = f"coalesce({quanta}, {cp.upper_q}L)"
        total = sf.expr(f"sum(CAST({quanta} AS DECIMAL(38, 0)))")
        clipped = sf.greatest(sf.least(total, sf.lit(_LIMIT)), sf.lit(-_LIMIT)).cast("long")
        return [
            clipped.alias(f"s{j}"),
            sf.expr(f"count({quanta})").alias(f"c{j}"),
            sf.expr(f"count(1) - count({value})").alias(f"n{j}"),
            sf.expr(f"count_if(__b{j})").alias(f"b{j}"),
        ]

    def _to_aggregates(
        self, plan: AggregatePlan, rows: list[Any], *, with_values: bool
    ) -> Aggregates:
        n_groups = (1 if plan.keys is None else len(plan.keys)) if with_values else 0
        result = Aggregates.zeros(n_groups, len(plan.columns))
        for row in rows:
            if with_values:
                g = int(row["g"])
                result.rows[g] = int(row["rows"])
            for j, agg in enumerate(result.columns):
                if with_values:
                    agg.sums[g] = int(row[f"s{j}"])
                    agg.counts[g] = int(row[f"c{j}"])
                agg.nulls += int(row[f"n{j}"] or 0)
                agg.non_numeric += int(row[f"b{j}"] or 0)
        for cp, agg in zip(plan.columns, result.columns, strict=True):
            if agg.non_numeric:
                col = _q(cp.column)
                ex = self._df.where(f"{col} IS NOT NULL AND TRY_CAST({col} AS DOUBLE) IS NULL")
                first = ex.select(_as_string(cp.column)).first()
                agg.example = None if first is None else str(first[0])
        if with_values:
            self.last_noise_location = "driver"
        return result


def _aggregate_column(source: str) -> str:
    """The column of the aggregate DataFrame holding a NoiseRequest's source."""
    if source == "rows":
        return "rows"
    if source.startswith("sum"):
        return "s" + source[3:]
    if source.startswith("count"):
        return "c" + source[5:]
    raise ValueError(f"unknown aggregate {source!r}")


def _as_string(column: str) -> Any:
    """The column as a string (for quoting a bad value in an error message)."""
    from pyspark.sql import functions as sf

    return sf.col(_q(column)).cast("string")


def _executor_noise(
    specs: list[tuple[str, str, Any]],
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The mapInPandas function: per partition, one mechanism per request on the OS CSPRNG."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pandas as pd

        from snapdp.mechanism import SnappingMechanism

        mechanisms = {
            name: SnappingMechanism(spec.epsilon, spec.sensitivity, spec.lower, spec.upper)
            for name, _, spec in specs
        }
        for batch in batches:
            out = pd.DataFrame({"g": batch["g"].to_numpy(np.int64)})
            for name, source, _ in specs:
                exact = batch[_aggregate_column(source)].to_numpy(np.int64)
                out[name] = mechanisms[name].release_many(exact)
            yield out

    return run
