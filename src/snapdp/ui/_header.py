"""The header call of ``snapdp ui`` (docs/ui.md, "The header call"): the source's column names,
read by the release's reader and rules, only when they look like names, else a one-line refusal
that holds no byte of the file."""

from __future__ import annotations

from pathlib import Path

from snapdp.data.engines.header import is_parquet, source_columns
from snapdp.data.model.schema import CsvOptions, Schema
from snapdp.errors import ParameterError

__all__ = ["MAX_HEADER_NAMES", "MAX_NAME_CHARS", "column_names"]

#: The most column names, and the longest name (in characters), the header call returns.
MAX_HEADER_NAMES = 1000
MAX_NAME_CHARS = 256
#: Magic bytes of compressions the CSV reader does not undo (zstd, xz, zip, 7z; bzip2 apart).
_OTHER_COMPRESSION = (b"\x28\xb5\x2f\xfd", b"\xfd7zXZ\x00", b"PK\x03\x04", b"7z\xbc\xaf")


def column_names(path: Path, options: CsvOptions) -> list[str]:
    """The column names of the source as a release reads them (:func:`source_columns`: allowed
    encodings only, Parquet by its magic, gzip by content, the header by the record rule; a
    Parquet file or folder by the engine, with its key=value folders' columns), only
    when they look like names: at most :data:`MAX_HEADER_NAMES` printable names of at most
    :data:`MAX_NAME_CHARS` characters each. Otherwise a one-line refusal naming no content."""
    head = _head(path)
    if head is not None and _compressed_otherwise(head):
        raise ParameterError(
            "`source` is compressed in a format the CSV reader does not read (gzip only); "
            "declare the columns instead (docs/ui.md)",
            parameter="source",
        )
    try:
        names = _source_names(path, head, options)
    except ParameterError as exc:
        message = str(exc).removeprefix("`data` ")
        parameter = "source" if exc.parameter in (None, "data") else exc.parameter
        raise ParameterError(
            f"the column names cannot be read from `source`: {message}; with `header` true they "
            "come from the file by the release's rules, else declare them (docs/ui.md)",
            parameter=parameter,
        ) from None
    if len(names) > MAX_HEADER_NAMES or not all(_is_name(n) for n in names):
        raise ParameterError(
            f"the first line of `source` is not a header the page shows (at most "
            f"{MAX_HEADER_NAMES} printable names of at most {MAX_NAME_CHARS} characters); check "
            "`header`, `delimiter` and `encoding`, or declare the columns (docs/ui.md)",
            parameter="header",
        )
    return names


def _source_names(path: Path, head: bytes | None, options: CsvOptions) -> list[str]:
    """A Parquet source's names as the release's engine reads them: a folder (a Parquet
    dataset) or a Parquet file, with the columns of its key=value folders (``county=A1/…``),
    which a file's own schema does not hold; the engine opens its schema only. A CSV's header by
    :func:`source_columns`."""
    if path.is_dir() or (head is not None and is_parquet(path, head, options.header)):
        from snapdp.data.engines.factory import default_engine

        return default_engine(str(path), Schema(csv=options)).column_names()
    return source_columns(path, options)


def _is_name(name: str) -> bool:
    return len(name) <= MAX_NAME_CHARS and name.isprintable() and "\ufffd" not in name


def _head(path: Path) -> bytes | None:
    """The file's first 10 bytes (fewer for a shorter file); None for a folder or a file that
    cannot be read (the reader's own refusal names it)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(10)
    except OSError:
        return None


def _compressed_otherwise(head: bytes) -> bool:
    """Whether the file starting with ``head`` bears the magic of a compression the CSV reader
    does not undo."""
    bzip2 = head[:3] == b"BZh" and head[4:10] == b"1AY&SY"
    return bzip2 or head.startswith(_OTHER_COMPRESSION)
