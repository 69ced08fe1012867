"""The Spark engine: the engine contract of :mod:`snapdp.data.engines.base` in Spark SQL.

The source is read here (:mod:`.reading`); every later step of the contract (cast, cells, units,
keyed-hash bounding, quanta, exact aggregates) is the shared query tree of
:mod:`snapdp.data.engines.relational.plan`, rendered by ``SnapSpark`` and run by ONE ``spark.sql``
over the source as a temporary view, so that, for the same plan and ``hash_key``, this engine
returns exactly the aggregates of the pure-Python reference engine and of the DuckDB engine
(tested bit for bit; docs/data.md, "Running on a cluster"):

* CSV is read one record per line, every cell as text (base step 1; docs/data.md, "CSV input"):
  Spark's CSV reader only reads the lines (ISO-8859-1, LF as line separator, separator and
  quote), the fields are split by array functions (no Java regex loop, which recurses per
  repetition); paths are literal (glob characters escaped) unless ``glob=True``. Each file is
  read by its own header's names (declared names without a header); Hadoop's line reader reads
  past a line over ``max_line_bytes``.
* Spark's own casts differ from the contract ("1e3", " 5", "Infinity", "1.0E10", "00", …), so
  every cast from text is gated by the contract's regular expressions (``rlike``) and done with
  ``try_cast`` (nothing raises under ANSI mode).
* Keys are matched as typed values (a join on an inline typed key table,
  which Spark broadcasts as a small relation), bins by a
  comparison tree of fixed depth (every row makes the same comparisons, docs/data.md, "Run
  time"), nulls by each column's rule; ``least``/``greatest`` (which skip NULLs) are only
  applied to non-null values.
* Ranks are :func:`~snapdp.data.engines.base.mix_rank` in long arithmetic (every product below
  2^63, so ANSI mode never raises), one projection per lane; a text unit's lanes come from the
  hex digits of its ``md5``. Tested equal to ``row_rank`` and ``group_rank``.
* Row bounds of 1 (k, L∞) are ``min_by`` aggregates over the row packed into a long (no sort of
  each unit's rows); larger row bounds use ``row_number`` windows; L0 keeps each unit's
  lowest-ranked distinct cells the same way, then a semi-join.
* Sums are exact: longs for quanta below 2^19 in magnitude (for cells of fewer than 2^44
  non-null values), else DECIMAL(38, 0); sums of squares are split into 31-bit limbs and
  recombined in Python, so nothing is rounded.

Internal columns are projected under fresh names (``_snapdp_c<i>``, ``_snapdp_q<j>``, …) in the
query's first step, so no user column name can collide with them. Nothing here raises, warns or logs
about what the data holds (DESIGN §8.1): the only errors name the source or the plan.

Executor noise (:class:`~snapdp.data.engines.base.ExecutorNoiseEngine`): for many cells the exact
aggregates stay on the executors; ``mapInPandas`` builds one ``SnappingMechanism`` per request on
each executor's default CSPRNG (an AES-256-CTR DRBG keyed from its OS) and returns only the noisy
value per cell.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlglot import exp

from snapdp.data.engines._cells import declared_columns, frame_to_arrow
from snapdp.data.engines.base import (
    AggregatePlan,
    Aggregates,
    NoiseRequest,
)
from snapdp.data.engines.relational.dialects import spark_sql
from snapdp.data.engines.relational.plan import aggregate_query
from snapdp.data.engines.spark import executor
from snapdp.data.engines.spark.reading import from_pandas, read_path, session_settings
from snapdp.data.model.schema import CsvOptions
from snapdp.errors import ParameterError, not_in_source

__all__ = ["SparkEngine"]

_Q_LIMIT = 1 << 61  # quanta bounds must fit here: q, 2q − L − U and the limbs stay in a long
_VIEWS = itertools.count()  # the source's temporary view, one name per plan
_INTEGRAL = ("tinyint", "smallint", "int", "bigint")
_FLOATING = ("float", "double")


class SparkEngine:
    """An :class:`~snapdp.data.engines.base.ExecutorNoiseEngine` over a CSV or Parquet path (a
    file, or a folder with hive partitioning), a Spark DataFrame or a pandas DataFrame.

    ``spark``: the session (default: the active one, or a new local one). ``csv``: how a CSV is
    read. ``glob``: treat the path as a glob pattern (default: literal). Noise is drawn on the
    executors for at least ``executor_noise_threshold`` cells, in ``noise_partitions`` partitions
    (default: Spark's). See docs/data.md, "Running on a cluster".
    """

    def __init__(
        self,
        source: object,
        *,
        spark: Any = None,
        csv: CsvOptions = CsvOptions(),  # noqa: B008 - frozen, immutable default
        glob: bool = False,
        executor_noise_threshold: int = 10_000,
        noise_partitions: int | None = None,
    ) -> None:
        try:
            from pyspark.sql import DataFrame, SparkSession
        except ImportError:  # pragma: no cover - exercised only without pyspark
            raise ParameterError(
                "the Spark engine needs pyspark: pip install 'snapdp[spark]'", parameter="engine"
            ) from None
        self.executor_noise_threshold = int(executor_noise_threshold)
        self.noise_partitions = noise_partitions
        self.last_noise_location: str | None = None
        self._pandas: Any = None
        if isinstance(source, DataFrame):
            self._df: Any = source
            self._label = "<pyspark.sql.DataFrame>"
            return
        session = spark or SparkSession.getActiveSession() or _new_session(SparkSession)
        if isinstance(source, (str, Path)):
            self._df, self._label = read_path(session, str(source), csv, glob)
        elif type(source).__module__.startswith("pandas"):
            self._pandas = source
            self._session = session
            self._df = None  # made per plan from the used columns (see _source_df)
            self._label = "<pandas.DataFrame>"
        else:
            raise ParameterError(
                "`data` for the Spark engine must be a CSV/Parquet path, a Spark DataFrame or a "
                f"pandas DataFrame, not {type(source).__name__}",
                parameter="data",
            )

    # -- Engine ----------------------------------------------------------------------------
    def describe(self) -> str:
        """The resolved path, or the frame's type."""
        return self._label

    def column_names(self) -> list[str]:
        """The source's column names (header or schema)."""
        if self._pandas is not None:
            return [str(c) for c in self._pandas.columns]
        return [str(c) for c in self._df.columns]

    def _source_df(self, plan: AggregatePlan) -> Any:
        """The Spark DataFrame a plan reads: the source's, or for a pandas DataFrame its used
        columns converted by the contract (object columns cell by cell for their declared type:
        no cell can make the conversion fail; docs/data.md, "What does not fit")."""
        if self._pandas is None:
            return self._df
        return from_pandas(self._session, frame_to_arrow(self._pandas, declared_columns(plan)))

    def aggregate(self, plan: AggregatePlan) -> Aggregates:
        """The exact aggregates (one row per non-empty cell collected to the driver)."""
        agg, limbs = self._aggregate_df(plan)
        try:
            with blind_to_the_data(agg.sparkSession):
                collected = agg.collect()
        except Exception as exc:  # the source could not be read as a whole; quote nothing
            raise ParameterError(
                f"`data` {self._label!r} cannot be read by Spark ({type(exc).__name__})",
                parameter="data",
            ) from None
        out = Aggregates.zeros(plan)
        # Every declared cell is unpacked the same way, an absent one as a row of zeros, so the
        # driver's work does not show which cells occur (docs/data.md, "Run time").
        present = {int(row["_cell"]): row.asDict() for row in collected}
        zero = dict.fromkeys(agg.columns, 0)
        for cell in range(plan.n_cells):
            row = present.get(cell, zero)
            out.rows[cell] = int(row["_rows"])
            for j, vc in enumerate(plan.values):
                out.sums[j][cell] = int(row[f"_sum{j}"])
                out.counts[j][cell] = int(row[f"_cnt{j}"])
                sq = out.squares[j]
                if sq is not None and vc.squares:
                    sq[cell] = executor.squares_from_limbs(
                        *(int(row[f"_sq{j}_{n}"]) for n in limbs)
                    )
        self.last_noise_location = "driver"
        return out

    # -- ExecutorNoiseEngine ---------------------------------------------------------------
    def wants_executor_noise(self, n_cells: int) -> bool:
        """Whether to draw the noise on the executors: at least ``executor_noise_threshold``."""
        return n_cells >= self.executor_noise_threshold

    def noisy_aggregate(
        self, plan: AggregatePlan, requests: Sequence[NoiseRequest]
    ) -> dict[str, npt.NDArray[np.float64]]:
        """The noisy arrays (cell order), drawn on the executors' CSPRNG by ``mapInPandas``.

        One Spark job: aggregate, complete the cell set with zeros, release per partition. A
        task that fails is retried by Spark from the source; its noise never reaches the driver
        (only a finished task's output is collected, once). If the job fails, a RuntimeError
        names no data and nothing is returned (docs/data.md, "Running on a cluster").
        """
        from pyspark.sql import functions as sf

        agg, limbs = self._aggregate_df(plan)
        session = agg.sparkSession
        cells = session.range(plan.n_cells).withColumnRenamed("id", "_cell")
        full = cells.join(agg, "_cell", "left")
        cols = [sf.col("_cell")]
        for name in agg.columns:
            if name != "_cell":
                cols.append(sf.coalesce(sf.col(name), sf.lit(0)).cast("decimal(38,0)").alias(name))
        full = full.select(*cols)
        if self.noise_partitions is not None:
            full = full.repartition(self.noise_partitions)
        specs = [
            (f"_v{i}", executor.source_columns(r.source, limbs), r.mechanism)
            for i, r in enumerate(requests)
        ]
        schema = "_cell long" + "".join(f", {name} double" for name, _, _ in specs)
        try:
            with blind_to_the_data(full.sparkSession):
                noisy = full.mapInPandas(executor.executor_noise(specs), schema=schema).toPandas()
        except Exception as exc:  # a lost executor or a failed job: no partial result
            raise RuntimeError(
                f"the Spark job failed ({type(exc).__name__}); no noisy value was returned "
                "(see docs/data.md, 'Running on a cluster')"
            ) from None
        noisy = noisy.sort_values("_cell")
        if not np.array_equal(noisy["_cell"].to_numpy(), np.arange(plan.n_cells)):
            raise RuntimeError("the Spark job returned an incomplete set of cells")
        self.last_noise_location = "executors"
        return {
            r.key: noisy[name].to_numpy(np.float64)
            for r, (name, _, _) in zip(requests, specs, strict=True)
        }

    # -- the plan as one Spark SQL query -----------------------------------------------------
    def _aggregate_df(self, plan: AggregatePlan) -> tuple[Any, tuple[str, ...]]:
        """Per non-empty cell: ``_cell``, ``_rows``, ``_sum<j>``, ``_cnt<j>``, ``_sq<j>_<limb>``:
        the shared query tree, rendered for Spark, run by one ``spark.sql`` over the source."""
        names = plan.used_columns()
        present = set(self.column_names())
        for name in names:
            if name not in present:
                raise ParameterError(not_in_source(name), parameter="columns")
        for vc in plan.values:
            if max(abs(vc.lower_q), abs(vc.upper_q)) >= _Q_LIMIT:
                raise ParameterError(
                    f"column {vc.column.name!r}: the bounds in quanta must lie within ±2^61 for "
                    "the Spark engine (fewer decimals)",
                    parameter="decimals",
                )
        source = self._source_df(plan)
        families = {name: _family(dtype) for name, dtype in source.dtypes if name in names}
        view = f"_snapdp_source_{next(_VIEWS)}"
        query = aggregate_query(plan, exp.to_table(view), families, wide=False)
        return _run(source, view, spark_sql(query.tree)), ("hh", "hl", "ll")


# -- the contract's expressions, rendered from the shared tree ----------------------------
def _family(dtype: str) -> str:
    """The family of a Spark type (:func:`~snapdp.data.engines.relational.exprs.cast_native`)."""
    d = dtype.lower()
    if d == "string":
        return "text"
    if d in _INTEGRAL:
        return "int"
    if d in _FLOATING:
        return "float"
    if d.startswith("decimal"):
        return "fixed"
    return {"boolean": "bool", "date": "date"}.get(d, "other")


#: Spark settings while a release's query runs, none of them reading the data to change the work
#: (docs/data.md, "Run time"): Parquet filters are not pushed into the scan (Spark would skip a
#: row group whose min/max shows no row can fall in a bin or pass a ``where``); adaptive execution
#: is off (it re-plans from the sizes of finished stages: an empty stage becomes an empty
#: relation, partitions are merged or split and joins changed by their measured size); so are
#: the runtime Bloom filters and dynamic partition pruning, which are chosen by sizes too.
_BLIND = {
    "spark.sql.parquet.filterPushdown": "false",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.optimizer.runtime.bloomFilter.enabled": "false",
    "spark.sql.optimizer.dynamicPartitionPruning.enabled": "false",
}


def _new_session(session_class: Any) -> Any:
    """The session snapdp starts when none is given or active: Spark's console progress bar off.
    It prints ``[Stage n: (a + b) / c]`` on standard error for a stage that runs longer than half
    a second, so whether it appears, and its task counts (the input's splits, which step with
    the file's size), follow the data (docs/data.md, "Running on a cluster"). A session the
    caller made keeps its own settings: the bar is a setting of its SparkContext, fixed when it
    starts."""
    builder = session_class.builder.config("spark.ui.showConsoleProgress", "false")
    return builder.getOrCreate()


def blind_to_the_data(session: Any) -> contextlib.AbstractContextManager[None]:
    """The ``with`` block runs with the settings of ``_BLIND``, and with as many shuffle
    partitions as the cluster's default parallelism unless the session set its own number (with
    adaptive execution off, Spark's default of 200 would be 200 tasks for every aggregate); the
    session's own settings are restored after. All of it public: the cluster, never the data."""
    settings = dict(_BLIND)
    if session.conf.get("spark.sql.shuffle.partitions", None) in (None, "200"):
        try:  # a Spark Connect session has no SparkContext: it keeps its own number
            cores = int(session.sparkContext.defaultParallelism)
        except Exception:
            cores = 0
        if cores > 0:
            settings["spark.sql.shuffle.partitions"] = str(cores)
    return session_settings(session, settings)


def _run(source: Any, view: str, sql: str) -> Any:
    """``sql`` over ``source`` as the temporary view ``view``: one ``spark.sql`` per plan. The
    view lives only while Spark analyses the query (the analysed plan holds the source's plan)."""
    session = source.sparkSession
    source.createOrReplaceTempView(view)
    try:
        return session.sql(sql)
    finally:
        session.catalog.dropTempView(view)
