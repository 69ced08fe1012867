"""A source's column names, read by the release's own rules (docs/data.md, "CSV input").

:func:`csv_header` is the DuckDB engine's header rule for one CSV file (allowed encodings only,
compression found by content, the first non-blank line split by the record rule, refused when
empty, repeated, too long or not text); :func:`source_columns` applies it with a source's CSV
options, and :func:`is_parquet` tells a Parquet file (with a header, by its ``PAR1`` magic rather
than its name; without one, by its name). ``snapdp ui`` asks these for its "column names from
the file's header" button (docs/ui.md).
"""

from __future__ import annotations

from pathlib import Path

from snapdp.data.engines.csv.lines import (
    LONG_LINE,
    check_delimiter,
    column_names,
    csv_encoding,
    first_line,
    header_fields,
)
from snapdp.data.model.schema import CsvOptions
from snapdp.errors import ParameterError

__all__ = [
    "PARQUET_MAGIC",
    "PARQUET_SUFFIXES",
    "csv_header",
    "header_names",
    "is_parquet",
    "source_columns",
]

#: The first four bytes of a Parquet file: a source starting with them is read as Parquet.
PARQUET_MAGIC = b"PAR1"
#: The names of the files read as Parquet when the CSV options say there is no header.
PARQUET_SUFFIXES = (".parquet", ".parq", ".pq")


def is_parquet(path: str | Path, head: bytes, header: bool) -> bool:
    """Whether a release reads the file ``path``, which starts with the bytes ``head``, as
    Parquet rather than CSV. With a ``header`` the file starts with its public header or with
    Parquet's magic, so the magic decides, whatever the name. Without one the first line of a
    CSV is a record, which must not decide how the whole file is read (one unit's row starting
    with ``PAR1`` made its neighbour's file unreadable): the name decides."""
    if header:
        return head[:4] == PARQUET_MAGIC
    return str(path).lower().endswith(PARQUET_SUFFIXES)


def csv_header(
    path: Path, encoding: str, delimiter: str, max_line: int, alone: bool
) -> list[str] | None:
    """The column names in the header (the first non-blank line) of the CSV file ``path``, in
    ``encoding`` (already checked by :func:`csv_encoding`): public. None for a file with no
    non-blank line, unless it is ``alone`` (then an error)."""
    label = str(path)
    try:
        if path.stat().st_size == 0:
            if not alone:
                return None
            raise ParameterError(
                f"`data` {label!r} is empty (0 bytes): not a table", parameter="data"
            )
        line = first_line(path, encoding, max_line)
    except OSError as exc:
        raise ParameterError(
            f"`data` {label!r} cannot be opened ({exc.strerror or 'I/O error'})",
            parameter="data",
        ) from None
    except EOFError:  # a truncated gzip file
        line = None
    return header_names(line, label, encoding, delimiter, max_line, alone)


def header_names(
    line: bytes | None, label: str, encoding: str, delimiter: str, max_line: int, alone: bool
) -> list[str] | None:
    """The column names of a CSV header ``line``: the file's first non-blank line after the
    byte rules (CR and, in UTF-8, a BOM removed), :data:`LONG_LINE` when it is longer than
    ``max_line`` bytes, None when the file has none (then None, unless ``alone``: an error).
    Refused when it holds NUL bytes, is not valid ``encoding`` text, does not split by the
    record rule, or names no column or one twice. Shared by the DuckDB engine
    (:func:`csv_header`) and the Spark engine, which reads the line by Spark."""
    if line == LONG_LINE:
        raise ParameterError(
            f"`data` {label!r}: the CSV header is longer than max_line_bytes = {max_line}",
            parameter="max_line_bytes",
        )
    if line is not None and b"\x00" in line:
        raise ParameterError(
            f"`data` {label!r} is not a text (CSV) file: it holds NUL bytes", parameter="data"
        )
    if line is None:
        if not alone:
            return None
        raise ParameterError(
            f"`data` {label!r}: the first line holds no CSV header", parameter="data"
        )
    try:
        text = line.decode(encoding, errors="strict")
    except UnicodeDecodeError:
        raise ParameterError(
            f"`data` {label!r}: the CSV header is not valid {encoding} text (see --encoding)",
            parameter="encoding",
        ) from None
    fields = header_fields(text, delimiter)
    if fields is None:
        raise ParameterError(
            f"`data` {label!r}: the first line holds no CSV header", parameter="data"
        )
    return column_names(fields, label)


def source_columns(path: Path, options: CsvOptions) -> list[str]:
    """The column names of the one CSV file ``path`` as a release reads it: its header by
    :func:`csv_header` (which needs ``options.header``; without a header the names are the
    declared ones). A Parquet source's names come from the engine, which also reads its
    key=value folders (``snapdp.ui._header``)."""
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise ParameterError(
            f"`data` {str(path)!r} cannot be opened ({exc.strerror or 'I/O error'})",
            parameter="data",
        ) from None
    if not options.header:
        return list(options.column_names or ())
    encoding = csv_encoding(options.encoding)
    check_delimiter(options.delimiter, encoding)
    names = csv_header(path, encoding, options.delimiter, options.max_line_bytes, True)
    assert names is not None  # alone: an error rather than None
    return names
