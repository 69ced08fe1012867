"""The Spark engine: the engine contract of :mod:`snapdp.data.engines.base` in Spark SQL.

Every step of the contract (read, cast, cells, units, keyed-hash bounding, quanta, exact
aggregates) is written here as Spark column expressions so that, for the same plan and
``hash_key``, this engine returns exactly the aggregates of the pure-Python reference engine
and of the DuckDB engine (tested bit for bit; docs/data.md, "Running on a cluster"):

* CSV is read one record per line, every cell as text (base step 1; docs/data.md, "CSV input"):
  Spark's CSV reader only reads the lines (ISO-8859-1, LF as line separator, separator and
  quote), the fields are split by array functions (no Java regex loop, which recurses per
  repetition); paths are literal (glob characters escaped) unless ``glob=True``. Each file is
  read by its own header's names (declared names without a header); Hadoop's line reader reads
  past a line over ``max_line_bytes``.
* Spark's own casts differ from the contract ("1e3", " 5", "Infinity", "1.0E10", "00", …), so
  every cast from text is gated by the contract's regular expressions (``rlike``) and done with
  ``try_cast`` (nothing raises under ANSI mode).
* Keys are matched as typed values (a broadcast join on a typed key table), bins by a
  comparison tree of fixed depth (every row makes the same comparisons, docs/data.md, "Run
  time"), nulls by each column's rule; ``least``/``greatest`` (which skip NULLs) are only
  applied to non-null values.
* Ranks are :func:`~snapdp.data.engines.base.mix_rank` in long arithmetic (every product below
  2^63, so ANSI mode never raises), one projection per lane; a text unit's lanes come from the
  hex digits of its ``md5``. Tested equal to ``row_rank`` and ``group_rank``.
* Row bounds of 1 (k, L∞) are ``min_by`` aggregates over the row packed into a long (no sort of
  each unit's rows); larger row bounds and L0 use ``row_number``/``dense_rank`` windows.
* Sums are exact: longs for quanta below 2^19 in magnitude (for cells of fewer than 2^44
  non-null values), else DECIMAL(38, 0); sums of squares are split into 31-bit limbs and
  recombined in Python, so nothing is rounded.

Internal columns are projected under fresh names (``_s<i>``, ``_q<j>``, …) after selecting only the
declared columns, so no user column name can collide with them. Nothing here raises, warns or logs
about what the data holds (DESIGN §8.1): the only errors name the source or the plan.

Executor noise (:class:`~snapdp.data.engines.base.ExecutorNoiseEngine`): for many cells the exact
aggregates stay on the executors; ``mapInPandas`` builds one ``SnappingMechanism`` per request on
each executor's default CSPRNG (an AES-256-CTR DRBG keyed from its OS) and returns only the noisy
value per cell.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any
from urllib.parse import unquote as uri_unquote

import numpy as np
import numpy.typing as npt
from sqlglot import exp

from snapdp.data.engines._cells import declared_columns, frame_to_arrow
from snapdp.data.engines.base import (
    GROUP_TAG,
    RANK_MASK,
    RANK_MULTIPLIERS,
    ROW_TAG,
    UNIT_MULTIPLIER,
    AggregatePlan,
    Aggregates,
    NoiseRequest,
    chunk_width,
    key_words,
    lane_count,
    row_chunks,
    row_radices,
)
from snapdp.data.engines.csv.lines import (
    check_delimiter,
    column_names,
    csv_encoding,
    unquote,
)
from snapdp.data.engines.relational import exprs
from snapdp.data.engines.relational.dialects import spark_sql
from snapdp.data.model.schema import Column, CsvOptions
from snapdp.errors import ParameterError

__all__ = ["SparkEngine"]

_Q_LIMIT = 1 << 61  # quanta bounds must fit here: q, 2q − L − U and the limbs stay in a long
_LIMB = 31
# Quanta below 2^19 in magnitude are summed as longs, exact for cells of fewer than 2^44 non-null
# values (1.7·10^13; beyond, Spark's long sum overflows); wider quanta as DECIMAL(38, 0), slower.
_LONG_SUM_LIMIT = 1 << 19
_GLOB_CHARS = "\\*?[]{}"
_INTEGRAL = ("tinyint", "smallint", "int", "bigint")
_FLOATING = ("float", "double")


def _escape_glob(path: str) -> str:
    """A path with Hadoop's glob characters escaped, so that Spark reads it literally."""
    return "".join("\\" + ch if ch in _GLOB_CHARS else ch for ch in path)


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
        session = spark or SparkSession.getActiveSession() or SparkSession.builder.getOrCreate()
        if isinstance(source, (str, Path)):
            self._df, self._label = _read_path(session, str(source), csv, glob)
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
        return _from_pandas(self._session, frame_to_arrow(self._pandas, declared_columns(plan)))

    def aggregate(self, plan: AggregatePlan) -> Aggregates:
        """The exact aggregates (one row per non-empty cell collected to the driver)."""
        agg, limbs = self._aggregate_df(plan)
        try:
            collected = agg.collect()
        except Exception as exc:  # the source could not be read as a whole; quote nothing
            raise ParameterError(
                f"`data` {self._label!r} cannot be read by Spark ({type(exc).__name__})",
                parameter="data",
            ) from None
        out = Aggregates.zeros(plan)
        for row in collected:
            cell = int(row["_cell"])
            out.rows[cell] = int(row["_rows"])
            for j, vc in enumerate(plan.values):
                out.sums[j][cell] = int(row[f"_sum{j}"])
                out.counts[j][cell] = int(row[f"_cnt{j}"])
                sq = out.squares[j]
                if sq is not None and vc.squares:
                    sq[cell] = _squares_from_limbs(*(int(row[f"_sq{j}_{n}"]) for n in limbs))
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
            (f"_v{i}", _source_columns(r.source, limbs), r.mechanism)
            for i, r in enumerate(requests)
        ]
        schema = "_cell long" + "".join(f", {name} double" for name, _, _ in specs)
        try:
            noisy = full.mapInPandas(_executor_noise(specs), schema=schema).toPandas()
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

    # -- the plan as Spark expressions -----------------------------------------------------
    def _aggregate_df(self, plan: AggregatePlan) -> tuple[Any, tuple[str, ...]]:
        """Per non-empty cell: ``_cell``, ``_rows``, ``_sum<j>``, ``_cnt<j>``, ``_sq<j>_<limb>``."""
        from pyspark.sql import functions as sf

        names = plan.used_columns()
        present = set(self.column_names())
        for name in names:
            if name not in present:
                raise ParameterError(
                    f"declared column {name!r} is not in the data", parameter="columns"
                )
        for vc in plan.values:
            if max(abs(vc.lower_q), abs(vc.upper_q)) >= _Q_LIMIT:
                raise ParameterError(
                    f"column {vc.column.name!r}: the bounds in quanta must lie within ±2^61 for "
                    "the Spark engine (fewer decimals)",
                    parameter="decimals",
                )
        src = {name: f"_s{i}" for i, name in enumerate(names)}
        source = self._source_df(plan)
        dtypes = dict(source.dtypes)
        df = source.select(*[sf.col(_quote(n)).alias(src[n]) for n in names])
        session = source.sparkSession

        # step 3: the row filter (on the cast values), then cells
        if plan.where is not None:
            where_cols = {c.name: c for c in plan.where_columns}
            cast_values = {
                name: _cast(c, src[name], dtypes[name]) for name, c in where_cols.items()
            }
            df = df.where(_expr(exprs.predicate(plan.where, cast_values, where_cols)))
        df = df.withColumn("_cell", sf.lit(0).cast("long"))
        stride = 1
        for g in reversed(plan.groupings):
            value = exprs.with_null_rule(g, _cast(g, src[g.name], dtypes[g.name]))
            idx_name = f"_i{len(df.columns)}"
            if g.keys is not None:  # a hash join: no key is found later than another
                keys = _key_table(session, g, idx_name)
                if keys is None:  # no cell can equal any key
                    df = df.where(sf.lit(False)).withColumn(idx_name, sf.lit(0))
                else:
                    df = df.withColumn("_kv", _expr(value))
                    df = df.join(sf.broadcast(keys), "_kv", "inner").drop("_kv")
            else:
                df = df.withColumn(idx_name, _expr(exprs.bin_index(g, value)))
                df = df.where(sf.col(idx_name).isNotNull())
            df = df.withColumn("_cell", sf.col("_cell") + sf.col(idx_name).cast("long") * stride)
            stride *= g.n_cells

        # step 6: quanta
        for j, vc in enumerate(plan.values):
            value = _cast(vc.column, src[vc.column.name], dtypes[vc.column.name])
            df = df.withColumn(f"_q{j}", _expr(exprs.quanta(vc, value, "BIGINT")))

        # steps 4 and 5: units and bounding
        if plan.unit is not None:
            unit = _expr(_cast(plan.unit, src[plan.unit.name], dtypes[plan.unit.name]))
            qcols = [f"_q{j}" for j in range(len(plan.values))]
            # the unit keeps its type (a long groups faster than its text); ranks use its text
            df = df.select(unit.alias("_u"), "_cell", *qcols)  # no source columns
            own = df.where(sf.col("_u").isNull()) if plan.null_units == "own" else None
            df = df.where(sf.col("_u").isNotNull())
            b = plan.bounds
            if b.is_bounded:
                df = _with_rank(df, plan, ROW_TAG, True, "_rr")
                if b.max_rows_per_group is not None:
                    df = _top_rows(df, plan, ["_u", "_cell"], b.max_rows_per_group)
                if b.max_groups_per_unit is not None:
                    df = _top_cells(df, plan, b.max_groups_per_unit)
                if b.max_rows_per_unit is not None:
                    df = _top_rows(df, plan, ["_u"], b.max_rows_per_unit)
                df = df.drop("_rr")
            if own is not None:
                df = df.unionByName(own)

        # step 7: exact aggregates
        limbs: tuple[str, ...] = ("hh", "hl", "ll")
        aggs = [sf.count(sf.lit(1)).alias("_rows")]
        for j, vc in enumerate(plan.values):
            q = sf.col(f"_q{j}")
            if max(abs(vc.lower_q), abs(vc.upper_q)) < _LONG_SUM_LIMIT:
                aggs.append(sf.sum(q).alias(f"_sum{j}"))  # a long: exact below 2^44 values
            else:
                aggs.append(sf.sum(q.cast("decimal(38,0)")).alias(f"_sum{j}"))
            aggs.append(sf.count(q).alias(f"_cnt{j}"))
            if vc.squares:
                t = sf.abs(q * 2 - sf.lit(vc.lower_q + vc.upper_q))
                hi = sf.shiftright(t, _LIMB)
                lo = t.bitwiseAND(sf.lit((1 << _LIMB) - 1))
                for n, term in zip(limbs, (hi * hi, hi * lo, lo * lo), strict=True):
                    aggs.append(sf.sum(term.cast("decimal(38,0)")).alias(f"_sq{j}_{n}"))
        agg = df.groupBy("_cell").agg(*aggs)
        cols = [sf.col("_cell"), sf.col("_rows")]
        for j, vc in enumerate(plan.values):
            cols += [
                sf.coalesce(sf.col(f"_sum{j}"), sf.lit(0)).alias(f"_sum{j}"),
                sf.col(f"_cnt{j}"),
            ]
            if vc.squares:
                cols += [
                    sf.coalesce(sf.col(f"_sq{j}_{n}"), sf.lit(0)).alias(f"_sq{j}_{n}")
                    for n in limbs
                ]
        return agg.select(*cols), limbs


# -- contribution bounding (step 5) ----------------------------------------------------------
def _top_rows(df: Any, plan: AggregatePlan, by: list[str], n: int) -> Any:
    """The ``n`` lowest-ranked rows (rank ``_rr``) of each ``by`` group.

    For n = 1 one ``min_by`` aggregate (no sort of each unit's rows; it spills like any
    aggregate), whose state is the row packed into one long when the declared domain allows
    (:func:`_radices`; a fixed-width state keeps Spark's hash aggregate) or else a struct (a
    sort aggregate); for n > 1 a ``row_number`` window. Either keeps exactly ``n`` rows. Rows of
    equal rank text are the same row for the plan; rows whose ranks collide otherwise (about
    2^-61 per pair) are ordered arbitrarily, as the contract allows."""
    from pyspark.sql import Window
    from pyspark.sql import functions as sf

    if n > 1:
        w = Window.partitionBy(*by).orderBy("_rr")
        df = df.withColumn("_n", sf.row_number().over(w))
        return df.where(sf.col("_n") <= n).drop("_n")
    qnames = [f"_q{j}" for j in range(len(plan.values))]
    radices = _radices(plan)
    if radices is None:
        rest = ["_cell", *qnames, "_rr"]
        picked = df.groupBy(*by).agg(sf.min_by(sf.struct(*rest), sf.col("_rr")).alias("_t"))
        return picked.select("_u", *[sf.col("_t").getField(c).alias(c) for c in rest])
    packed = sf.col("_cell").cast("bigint")
    for q, vc, radix in zip(qnames, plan.values, radices[1:], strict=True):
        digit = sf.coalesce(sf.col(q) - sf.lit(vc.lower_q - 1), sf.lit(0))
        packed = packed * sf.lit(radix) + digit
    picked = df.groupBy(*by).agg(
        sf.min_by(packed, sf.col("_rr")).alias("_t"), sf.min("_rr").alias("_rr")
    )
    items = []
    divisor = 1
    for q, vc, radix in reversed(list(zip(qnames, plan.values, radices[1:], strict=True))):
        digit = sf.expr(f"(_t div {divisor}) % {radix}")
        value = sf.when(digit != 0, digit + sf.lit(vc.lower_q - 1)).cast("bigint")
        items.append(value.alias(q))
        divisor *= radix
    items.append(sf.expr(f"_t div {divisor}").cast("bigint").alias("_cell"))
    return picked.select("_u", *items[::-1], "_rr")


def _radices(plan: AggregatePlan) -> list[int] | None:
    """The digits of a packed row: n_cells, then U_q − L_q + 2 per value column (0 for a null
    quantum, q − L_q + 1 otherwise); None when their product reaches 2^63."""
    radices = [plan.n_cells, *(vc.upper_q - vc.lower_q + 2 for vc in plan.values)]
    return radices if math.prod(radices) < 1 << 63 else None


def _top_cells(df: Any, plan: AggregatePlan, n: int) -> Any:
    """The rows of each unit's ``n`` lowest-ranked cells (L0; :func:`group_rank`).

    A window over each unit's rows, ordered by (rank, cell): rows of one cell share a dense rank
    and two cells never do, even if their ranks collide, so exactly ``n`` cells are kept."""
    from pyspark.sql import Window
    from pyspark.sql import functions as sf

    w = Window.partitionBy("_u").orderBy("_gr", "_cell")
    df = _with_rank(df, plan, GROUP_TAG, False, "_gr")
    df = df.withColumn("_n", sf.dense_rank().over(w))
    return df.where(sf.col("_n") <= n).drop("_n", "_gr")


# -- reading -------------------------------------------------------------------------------
def _read_path(session: Any, text: str, csv: CsvOptions, glob: bool) -> tuple[Any, str]:
    is_uri = "://" in text
    path = Path(text)
    if not is_uri and not glob and not path.exists():
        raise ParameterError(f"`data` file not found: {text!r}", parameter="data")
    label = text if is_uri or glob else str(path.resolve())
    target = text if glob else _escape_glob(label)
    lower = text.lower()
    try:
        if lower.endswith((".parquet", ".pq", ".parq")) or (not is_uri and path.is_dir()):
            key = "spark.sql.sources.partitionColumnTypeInference.enabled"
            before = session.conf.get(key)
            session.conf.set(key, "false")  # partition values as text, cast by the declaration
            try:
                df = session.read.parquet(target)
            finally:
                session.conf.set(key, before)
        elif lower.endswith((".csv", ".tsv", ".txt", ".csv.gz")):
            df = _read_csv(session, target, label, csv)
        else:
            raise ParameterError(
                f"`data` must be a .csv or .parquet path, not {text!r}", parameter="data"
            )
    except ParameterError:
        raise
    except Exception as exc:
        raise ParameterError(
            f"`data` {label!r} cannot be read by Spark ({type(exc).__name__})", parameter="data"
        ) from None
    return df, label


_RAW = "_raw"  # the one column of a CSV file read as lines
_MAX_LENGTH = "mapreduce.input.linerecordreader.line.maxlength"  # Hadoop's line reader
_MAX_LINE_LIMIT = (1 << 31) - 3  # a header is read whole: Hadoop's most


def _raw_lines(
    session: Any, target: str | list[str], header: bool, max_line: int, name: str = _RAW
) -> Any:
    """The CSV files' lines, one string per line, as Spark reads them: split at LF only
    (``lineSep``), every byte one character (ISO-8859-1, so the line's bytes come back exactly by
    ``encode``), no field splitting and no quoting (the separator and the quote are LF, which a
    line never holds), nothing trimmed. Spark leaves out the lines with no character above
    U+0020 (blank lines), and with ``header`` the first non-blank line of each file. Hadoop's
    line reader reads past a line of ``max_line`` + 1 bytes or more without keeping more than
    that of it (``mapreduce.input.linerecordreader.line.maxlength``), and leaves it out.
    ``name``: the column's name while reading (the header line itself, so that Spark's header
    check finds what it expects and logs nothing); the result's column is ``_raw``."""
    from pyspark.sql.types import StringType, StructField, StructType

    return (
        session.read.schema(StructType([StructField(name, StringType())]))
        .option("header", header)
        .option("lineSep", "\n")
        .option("sep", "\n")
        .option("quote", "\n")
        .option("escape", "\n")
        .option("encoding", "ISO-8859-1")
        .option("multiLine", False)
        .option("mode", "PERMISSIVE")
        .option("ignoreLeadingWhiteSpace", False)
        .option("ignoreTrailingWhiteSpace", False)
        .option(_MAX_LENGTH, str(max_line + 2))  # the LF counts, and a line of max+2 goes
        .csv(target)
        .toDF(_RAW)
    )


def _line_text(raw: Any, encoding: str) -> Any:
    """A raw line (bytes as ISO-8859-1 characters) as text by the CSV rule (docs/data.md, "CSV
    input"): one trailing CR removed; NULL when blank (no byte above 0x20); in UTF-8 a leading
    byte-order mark removed and NULL when the bytes are not UTF-8."""
    from pyspark.sql import functions as sf

    line = sf.when(raw.endswith("\r"), raw.substr(sf.lit(1), sf.length(raw) - 1)).otherwise(raw)
    line = sf.when(~line.rlike("^[\\x00-\\x20]*\\z"), line)
    if encoding == "latin-1":
        return line
    bom = "\u00ef\u00bb\u00bf"
    line = sf.when(line.startswith(bom), line.substr(sf.lit(4), sf.length(line) - 3)).otherwise(
        line
    )
    text = sf.encode(line, "ISO-8859-1").cast("string")  # the line's bytes, as UTF-8 text
    return sf.when(sf.is_valid_utf8(text), text)


def _java_char(ch: str) -> str:
    """``ch`` as a literal in a Java regular expression."""
    return ch if ch.isalnum() else "\\" + ch


def _fields(text: Any, delimiter: str) -> Any:
    """The fields of a CSV line (an array; a quoted field keeps its quotes: :func:`_unquote`),
    or NULL when the line does not split by the CSV rule (docs/data.md, "CSV input"). Without
    regular-expression loops (Java's recurse per repetition and can overflow the stack on a long
    line): a line without ``"`` is split at every delimiter; a line with ``"`` is cut at each
    ``"`` into segments t0, t1, …, tm; it splits iff m is even and every even segment (outside
    the quotes) is empty (a doubled quote) or touches the delimiter on each side where a quoted
    field ends or starts (t0 ends with it, tm starts with it, the others both). Then the
    delimiters of the even segments are the field separators: they become LF (never in a line),
    and the line is split at LF."""
    from pyspark.sql import functions as sf

    d = delimiter
    segments = sf.split(text, '"', -1)
    m = sf.size(segments) - 1

    def bad(s: Any, i: Any) -> Any:
        ok = (s == sf.lit("")) | (
            sf.when((i == 0) & (i == m), sf.lit(True))
            .when(i == 0, s.endswith(d))
            .when(i == m, s.startswith(d))
            .otherwise(s.startswith(d) & s.endswith(d))
        )
        return ((i % 2) == 0) & ~ok

    splits = ((m % 2) == 0) & (sf.size(sf.filter(segments, bad)) == 0)
    separated = sf.array_join(
        sf.transform(
            segments,
            lambda s, i: sf.when((i % 2) == 0, sf.replace(s, sf.lit(d), sf.lit("\n"))).otherwise(s),
        ),
        '"',
    )
    quoted = sf.when(splits, sf.split(separated, "\n", -1))
    return sf.when(~text.contains('"'), sf.split(text, _java_char(d), -1)).otherwise(quoted)


def _unquote(field: Any) -> Any:
    """A field of :func:`_fields` as text: a quoted field without its quotes, ``""`` as ``"``."""
    from pyspark.sql import functions as sf

    inner = field.substr(sf.lit(2), sf.length(field) - 2)
    return sf.when(field.startswith('"'), sf.replace(inner, sf.lit('""'), sf.lit('"'))).otherwise(
        field
    )


def _read_csv(session: Any, target: str, label: str, csv: CsvOptions) -> Any:
    """A CSV path as a DataFrame of text columns, one record per line by the CSV rule
    (docs/data.md, "CSV input"): the same records as the DuckDB engine and the reference
    engine. The columns are declared (no header), or each file's own header: the files of a
    pattern are read by name, in groups of one header, and a file whose header lacks a column
    gives nulls in it."""
    from pyspark.sql import functions as sf

    encoding = csv_encoding(csv.encoding)
    check_delimiter(csv.delimiter, encoding)
    limit = csv.max_line_bytes
    _quiet_line_reader(session)
    if not csv.header:
        assert csv.column_names is not None  # CsvOptions refuses a header-less CSV without
        names = list(csv.column_names)
        return _records(session, target, csv, encoding, names, "", names)
    # inputFiles() gives URIs with reserved characters percent-encoded ('[' as %5B): decode
    # them back to the path, which _escape_glob then makes literal for Hadoop.
    files = sorted(uri_unquote(f) for f in _raw_lines(session, target, False, limit).inputFiles())
    if not files:
        raise ParameterError(f"`data` {label!r} matches no file", parameter="data")
    groups: dict[tuple[str, ...], list[str]] = {}
    lines: dict[tuple[str, ...], str] = {}
    for file in files:
        where = label if len(files) == 1 else file
        found = _header(session, _escape_glob(file), where, csv, encoding, len(files) == 1)
        if found is None:  # a file of a pattern with no non-blank line: no header, no record
            continue
        line, names = found
        groups.setdefault(tuple(names), []).append(_escape_glob(file))
        lines.setdefault(tuple(names), line)
    if not groups:
        raise ParameterError(f"`data` {label!r}: no file holds a CSV header", parameter="data")
    columns = list(dict.fromkeys(name for names in groups for name in names))
    frames = [
        _records(session, paths, csv, encoding, list(names), lines[names], columns)
        for names, paths in groups.items()
    ]
    out = frames[0]
    for frame in frames[1:]:
        out = out.unionByName(frame)
    return out.select(*[sf.col(_quote(c)) for c in columns])


_LINE_READER = "org.apache.hadoop.mapreduce.lib.input.LineRecordReader"


def _quiet_line_reader(session: Any) -> None:
    """Hadoop's line reader logs the size and position of each line it reads past at INFO (data
    that no log may show): set its logger to WARN in this JVM (the driver, and the executors of
    a local session). On a cluster, set it in the executors' log4j2 configuration
    (docs/data.md, "Running on a cluster")."""
    try:
        jvm = session._jvm
        level = jvm.org.apache.logging.log4j.Level.WARN
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(_LINE_READER, level)
    except Exception:  # Spark Connect (no JVM), or another logging backend
        pass


def _header(
    session: Any, target: str, label: str, csv: CsvOptions, encoding: str, alone: bool
) -> tuple[str, list[str]] | None:
    """(the raw header line, its column names) of one CSV file: its first non-blank line (read
    whole: the header is public), or an error naming the file; None for a file with no
    non-blank line unless it is ``alone`` (then an error)."""
    from pyspark.sql import functions as sf

    raw = sf.col(_RAW)
    text = _line_text(raw, encoding)
    head = _raw_lines(session, target, False, _MAX_LINE_LIMIT).select(
        raw.alias("line"),
        text.isNull().alias("bad"),
        raw.contains("\x00").alias("nul"),
        _fields(text, csv.delimiter).alias("f"),
    )
    first = head.head(1)
    if not first and not alone:
        return None
    if not first:
        raise ParameterError(
            f"`data` {label!r}: the first line holds no CSV header", parameter="data"
        )
    if len(first[0]["line"]) > csv.max_line_bytes:
        raise ParameterError(
            f"`data` {label!r}: the CSV header is longer than max_line_bytes = "
            f"{csv.max_line_bytes}",
            parameter="max_line_bytes",
        )
    if first[0]["nul"]:
        raise ParameterError(
            f"`data` {label!r} is not a text (CSV) file: it holds NUL bytes", parameter="data"
        )
    if first[0]["bad"]:
        raise ParameterError(
            f"`data` {label!r}: the CSV header is not valid {encoding} text (see --encoding)",
            parameter="encoding",
        )
    if first[0]["f"] is None:
        raise ParameterError(
            f"`data` {label!r}: the first line holds no CSV header", parameter="data"
        )
    return first[0]["line"], column_names([unquote(f) for f in first[0]["f"]], label)


def _records(
    session: Any,
    target: str | list[str],
    csv: CsvOptions,
    encoding: str,
    names: list[str],
    header_line: str,
    columns: list[str],
) -> Any:
    """The records of CSV files whose lines have the columns ``names`` (their header, or the
    declared names), as the text columns ``columns`` (null for those not in ``names``)."""
    from pyspark.sql import functions as sf

    raw = sf.col(_RAW)
    read = _raw_lines(session, target, csv.header, csv.max_line_bytes, header_line or _RAW)
    parsed = read.where(sf.length(raw) <= csv.max_line_bytes).select(
        _fields(_line_text(raw, encoding), csv.delimiter).alias("_f")
    )
    parsed = parsed.where(sf.size("_f") == len(names))
    return parsed.select(
        *[
            (
                _unquote(sf.try_element_at("_f", sf.lit(names.index(c) + 1)))
                if c in names
                else sf.lit(None).cast("string")
            ).alias(c)
            for c in columns
        ]
    )


def _from_pandas(session: Any, table: Any) -> Any:
    """A pandas DataFrame's used columns, already an Arrow table of contract cells (see
    :func:`~snapdp.data.engines._cells.frame_to_arrow`), as a Spark DataFrame."""
    try:
        return session.createDataFrame(table)
    except Exception as exc:  # a native type Spark lacks (e.g. uint64): from the schema only
        raise ParameterError(
            f"the pandas DataFrame cannot be converted for Spark ({type(exc).__name__}); give "
            "each column a type Spark holds (see docs/data.md)",
            parameter="data",
        ) from None


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


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


def _cast(column: Column, name: str, dtype: str) -> exp.Expression:
    """The contract's cast of the source column ``name`` of Spark type ``dtype`` (step 2)."""
    return exprs.cast_native(exprs.column(name), _family(dtype), column.type)


def _expr(node: exp.Expression) -> Any:
    """A node of the shared tree as a Spark column."""
    from pyspark.sql import functions as sf

    return sf.expr(spark_sql(node))


def _key_table(session: Any, g: Column, idx_name: str) -> Any:
    """The declared keys as a typed table (_kv, idx); the first of equal doubles wins. None
    when no cell can equal any key."""
    values = exprs.keys_values(g, ("_kv", idx_name))
    return None if values is None else session.sql(f"SELECT * FROM {spark_sql(values)}")


# -- quanta (step 6) and ranks (step 5) ------------------------------------------------------
def _lanes(value: Any, count: int) -> list[Any]:
    """The ``count`` 32-bit lanes of a non-negative long, least significant first."""
    from pyspark.sql import functions as sf

    if count == 1:
        return [value.cast("bigint")]
    return [sf.shiftright(value, 32 * i).bitwiseAND(sf.lit(RANK_MASK)) for i in range(count)]


def _with_rank(df: Any, plan: AggregatePlan, tag: int, values: bool, name: str) -> Any:
    """``df`` (columns ``_u``, ``_cell`` and, with ``values``, ``_q<j>``) with a long column
    ``name`` = :func:`~snapdp.data.engines.base.mix_rank` of the row's lanes. One projection per
    lane (the accumulators are read as columns, so the plan grows linearly)."""
    from pyspark.sql import functions as sf

    mask = sf.lit(RANK_MASK)
    u = sf.col("_u")
    text_unit = plan.unit is not None and plan.unit.type == "text"
    if text_unit:  # the first 8 digest bytes as two little-endian 32-bit words
        df = df.withColumn("_um", sf.md5(u))
        units = [
            sf.conv(
                sf.concat(*(sf.substring("_um", 8 * w + 2 * i + 1, 2) for i in (3, 2, 1, 0))),
                16,
                10,
            ).cast("bigint")
            for w in (0, 1)
        ]
    else:
        units = [u.bitwiseAND(mask), sf.shiftright(u, 32).bitwiseAND(mask)]
    lanes: list[Any] = []
    if not values:
        lanes += _lanes(sf.col("_cell"), lane_count(plan.n_cells))
    else:  # every radix is below 2^62 here (the quanta bounds are below 2^61)
        radices = row_radices(plan)
        digits = [sf.col("_cell").cast("bigint")] + [
            sf.coalesce(sf.col(f"_q{j}") - sf.lit(vc.lower_q - 1), sf.lit(0)).cast("bigint")
            for j, vc in enumerate(plan.values)
        ]
        for chunk in row_chunks(plan):
            value = digits[chunk[0]]
            for i in chunk[1:]:
                value = value * sf.lit(radices[i]) + digits[i]
            lanes += _lanes(value, lane_count(chunk_width(plan, chunk)))
    # with_unit: one lane for the unit first
    unit = units[0].bitwiseXOR((units[1] * sf.lit(UNIT_MULTIPLIER)).bitwiseAND(mask))
    lanes.insert(0, unit)
    k0, k1, k2, k3 = key_words(plan.hash_key)
    ma, mb = (sf.lit(m) for m in RANK_MULTIPLIERS)
    n = len(lanes)
    pairs = [(x, x) for x in lanes] + [(sf.lit(k2 ^ n), sf.lit(k3 ^ n))]

    def fold(t: str) -> Any:
        return sf.col(t).bitwiseXOR(sf.shiftright(t, 32)).bitwiseAND(mask)

    xa, xb = pairs[0]
    df = df.withColumns(
        {
            "_ta": sf.lit(k0 ^ tag).cast("bigint").bitwiseXOR(xa) * ma,
            "_tb": sf.lit(k1 ^ tag).cast("bigint").bitwiseXOR(xb) * mb,
        }
    )
    for xa, xb in pairs[1:]:
        df = df.withColumns(
            {"_ta": fold("_ta").bitwiseXOR(xa) * ma, "_tb": fold("_tb").bitwiseXOR(xb) * mb}
        )
    rank = fold("_ta") * sf.lit(1 << 31) + sf.shiftright(fold("_tb"), 1)
    return df.withColumn(name, rank).drop("_ta", "_tb", *(["_um"] if text_unit else []))


def _squares_from_limbs(hh: int, hl: int, ll: int) -> int:
    """Σt² from Σhi², Σhi·lo, Σlo² with |t| = hi·2^31 + lo."""
    return (hh << (2 * _LIMB)) + (hl << (_LIMB + 1)) + ll


# -- executor noise ------------------------------------------------------------------------
def _source_columns(source: str, limbs: tuple[str, ...]) -> tuple[str, ...]:
    """The aggregate columns holding a NoiseRequest's exact source."""
    if source == "rows":
        return ("_rows",)
    for prefix, col in (("sum", "_sum"), ("count", "_cnt")):
        if source.startswith(prefix) and source[len(prefix) :].isdigit():
            return (col + source[len(prefix) :],)
    if source.startswith("squares") and source[7:].isdigit():
        return tuple(f"_sq{source[7:]}_{n}" for n in limbs)
    raise ParameterError(f"unknown aggregate {source!r}", parameter="source")


def _executor_noise(
    specs: list[tuple[str, tuple[str, ...], tuple[object, object, object, object]]],
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The ``mapInPandas`` function: per partition, one mechanism per request on the default CSPRNG.

    The exact value (a Python int, recombined from its columns) is clamped to
    [⌊lower⌋, ⌈upper⌉] first — the mechanism clamps to [lower, upper] anyway, so this changes
    nothing but keeps the value in int64 for the vectorised path when the bounds allow."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pandas as pd

        from snapdp.mechanism import SnappingMechanism

        # Executors may be shared by jobs that run as one operating-system user: a certificate
        # read from that user's disk cache could have been planted by another job, so executors
        # use only the certificates shipped with the package or computed here (docs/mechanism.md).
        os.environ["SNAPDP_CACHE_DIR"] = "off"
        built = []
        for name, cols, (eps, sens, lower, upper) in specs:
            mech = SnappingMechanism(eps, sens, lower, upper)  # type: ignore[arg-type]
            lo = math.floor(Fraction(lower))  # type: ignore[call-overload]
            hi = math.ceil(Fraction(upper))  # type: ignore[call-overload]
            built.append((name, cols, mech, lo, hi))
        for batch in batches:
            out = pd.DataFrame({"_cell": batch["_cell"].to_numpy(np.int64)})
            for name, cols, mech, lo, hi in built:
                parts = [[int(x) for x in batch[c]] for c in cols]
                exact = (
                    parts[0]
                    if len(parts) == 1
                    else [_squares_from_limbs(*p) for p in zip(*parts, strict=True)]
                )
                clamped = [min(max(x, lo), hi) for x in exact]
                if lo >= -(1 << 63) and hi < (1 << 63):
                    out[name] = mech.release_many(np.array(clamped, dtype=np.int64))
                else:
                    out[name] = np.array([mech.release(x) for x in clamped], dtype=np.float64)
            yield out

    return run
