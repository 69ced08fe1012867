"""The Spark engine's reading: CSV one record per line, Parquet paths, pandas frames.

CSV (base step 1; docs/data.md, "CSV input"): Spark's CSV reader only reads the lines (ISO-8859-1,
LF as line separator), the fields are split by array functions (no Java regex loop, which recurses
per repetition); paths are literal (glob characters escaped) unless ``glob=True``. Each file is
read by its own header's names (declared names without a header); Hadoop's line reader reads past
a line over ``max_line_bytes``. Errors name the source only.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote as uri_unquote

from snapdp.data.engines._cells import exact_numbers
from snapdp.data.engines.csv.lines import LONG_LINE, check_delimiter, csv_encoding, first_line_in
from snapdp.data.engines.header import PARQUET_SUFFIXES, header_names
from snapdp.data.model.schema import CsvOptions
from snapdp.errors import ParameterError

__all__ = ["from_pandas", "quote_identifier", "read_path", "session_settings"]

_GLOB_CHARS = "\\*?[]{}"


@contextlib.contextmanager
def session_settings(session: Any, settings: Mapping[str, str]) -> Iterator[None]:
    """The Spark SQL ``settings`` for the ``with`` block; each is then restored to the
    session's own value (or unset, if the session had none)."""
    before = {key: session.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        session.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                session.conf.unset(key)
            else:
                session.conf.set(key, value)


def _escape_glob(path: str) -> str:
    """A path with Hadoop's glob characters escaped, so that Spark reads it literally."""
    return "".join("\\" + ch if ch in _GLOB_CHARS else ch for ch in path)


# -- reading -------------------------------------------------------------------------------
def read_path(session: Any, text: str, csv: CsvOptions, glob: bool) -> tuple[Any, str]:
    is_uri = "://" in text
    path = Path(text)
    if not is_uri and not glob and not path.exists():
        raise ParameterError(f"`data` file not found: {text!r}", parameter="data")
    label = text if is_uri or glob else str(path.resolve())
    target = text if glob else _escape_glob(label)
    lower = text.lower()
    try:
        if lower.endswith(PARQUET_SUFFIXES) or (not is_uri and path.is_dir()):
            # partition values as text, cast by the declaration
            inference = {"spark.sql.sources.partitionColumnTypeInference.enabled": "false"}
            with session_settings(session, inference):
                df = session.read.parquet(target)
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
    return out.select(*[sf.col(quote_identifier(c)) for c in columns])


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
    """(the raw header line, its column names) of one CSV file: its first non-blank line as
    Spark reads it (read whole: the header is public), its names by the DuckDB engine's rule
    (:func:`~snapdp.data.engines.header.header_names`), or an error naming the file; None for a
    file with no non-blank line unless it is ``alone`` (then an error). One Spark job reads the
    line; the rule runs here, on its bytes (a Spark query of the rule cost ~0.5 s of JVM CPU per
    file, the line alone ~0.08 s: docs/performance.md, "Spark tests, fifth 2026-11-27 session")."""
    first = _raw_lines(session, target, False, _MAX_LINE_LIMIT).head(1)
    raw: str | None = first[0][_RAW] if first else None
    line: bytes | None = None
    if raw is not None:
        # a raw line's characters are its bytes (ISO-8859-1); Spark left the blank ones out
        too_long = len(raw) > csv.max_line_bytes
        line = LONG_LINE if too_long else first_line_in(raw.encode("latin-1"), encoding)
    names = header_names(line, label, encoding, csv.delimiter, csv.max_line_bytes, alone)
    if names is None or raw is None:
        return None
    return raw, names


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


def from_pandas(session: Any, table: Any) -> Any:
    """A pandas DataFrame's used columns, already an Arrow table of contract cells (see
    :func:`~snapdp.data.engines._cells.frame_to_arrow`), as a Spark DataFrame; half floats and
    256-bit decimals read as the DuckDB engine reads them (:func:`exact_numbers`: Spark has no
    half float, and refused the whole frame)."""
    import pyarrow as pa

    columns = [
        exact_numbers(name, column, "Spark")
        for name, column in zip(table.column_names, table.columns, strict=True)
    ]
    table = pa.Table.from_arrays(columns, names=table.column_names)
    try:
        return session.createDataFrame(table)
    except Exception as exc:  # a native type Spark lacks (e.g. uint64): from the schema only
        raise ParameterError(
            f"the pandas DataFrame cannot be converted for Spark ({type(exc).__name__}); give "
            "each column a type Spark holds (see docs/data.md)",
            parameter="data",
        ) from None


def quote_identifier(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"
