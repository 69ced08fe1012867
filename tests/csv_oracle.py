"""The CSV rule of docs/data.md ("CSV input"), written out plainly for the reference engine
(tests/data_oracle.py) and the CSV tests: lines, fields, and the records of one or more files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from snapdp.data.model.schema import CsvOptions
from snapdp.errors import ParameterError

__all__ = ["csv_lines", "parse_line", "read_csvs"]


_ORACLE_ENCODINGS = {"utf-8": "utf-8", "utf8": "utf-8", "latin-1": "latin-1", "latin1": "latin-1"}


def csv_lines(data: bytes, utf8: bool, max_line: int | None = None) -> list[bytes | None]:
    """The CSV rule's lines (docs/data.md, "CSV input"), written out plainly: split at LF (the
    text after the last LF is a line when not empty); a line of more than ``max_line`` bytes
    (its LF not counted) is None (no record, whatever it holds); else one trailing CR removed,
    blank lines (no byte above 0x20) left out, then in UTF-8 a leading byte-order mark
    removed."""
    parts = data.split(b"\n")
    if parts and parts[-1] == b"":
        parts.pop()
    out: list[bytes | None] = []
    for part in parts:
        if max_line is not None and len(part) > max_line:
            out.append(None)
            continue
        line = part[:-1] if part.endswith(b"\r") else part
        if all(b <= 0x20 for b in line):
            continue
        if utf8 and line.startswith(b"\xef\xbb\xbf"):
            line = line[3:]
        out.append(line)
    return out


def parse_line(text: str, delimiter: str) -> list[str] | None:
    """One CSV line's fields, by a character-by-character scan (independent of the engines'
    patterns): a field is "…" with "" for a quote, or holds neither the delimiter nor a quote;
    None when the line does not split that way."""
    fields: list[str] = []
    i, n = 0, len(text)
    while True:
        if i < n and text[i] == '"':
            i += 1
            chars: list[str] = []
            while True:
                if i >= n:
                    return None  # no closing quote
                if text[i] == '"':
                    if i + 1 < n and text[i + 1] == '"':
                        chars.append('"')
                        i += 2
                        continue
                    i += 1
                    break
                chars.append(text[i])
                i += 1
            fields.append("".join(chars))
            if i == n:
                return fields
            if text[i] != delimiter:
                return None  # text after the closing quote
            i += 1
        else:
            j = i
            while j < n and text[j] != delimiter:
                if text[j] == '"':
                    return None  # a quote inside an unquoted field
                j += 1
            fields.append(text[i:j])
            if j == n:
                return fields
            i = j + 1


def read_csvs(paths: list[Path], opts: CsvOptions) -> tuple[list[str], list[dict[str, Any]]]:
    """The records of CSV files, each file's columns by name: its header's, or the declared
    ones; the columns are the headers' names in order of first appearance, null in a file
    whose header lacks them."""
    if not paths:
        raise ParameterError("the pattern matches no file")
    columns: list[str] = []
    rows: list[dict[str, Any]] = []
    for path in paths:
        try:
            names, records = _read_csv(path, opts)
        except _NoLineError:
            if len(paths) == 1:
                raise ParameterError(f"{path}: the file holds no line") from None
            continue  # a file of a pattern with no line: no header, no record
        columns += [c for c in names if c not in columns]
        rows += [
            {c: (None if v == "" else v) for c, v in zip(names, rec, strict=True)}
            for rec in records
        ]
    return columns, [{c: r.get(c) for c in columns} for r in rows]


def _read_csv(path: Path, opts: CsvOptions) -> tuple[list[str], list[list[str]]]:
    encoding = _ORACLE_ENCODINGS.get(opts.encoding.lower().replace("_", "-"))
    if encoding is None:
        raise ParameterError(f"{path}: encoding {opts.encoding!r} is not supported")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ParameterError(f"{path}: cannot be read ({type(exc).__name__})") from None
    records: list[list[str]] = []
    columns: list[str] | None = None
    if not opts.header:
        assert opts.column_names is not None
        columns = list(opts.column_names)
    for line in csv_lines(data, encoding == "utf-8", opts.max_line_bytes):
        try:
            text: str | None = None if line is None else line.decode(encoding)
        except UnicodeDecodeError:
            text = None
        fields = None if text is None else parse_line(text, opts.delimiter)
        if columns is None:
            if fields is None or fields == [""] or len(set(fields)) != len(fields):
                raise ParameterError(f"{path}: the first line holds no CSV header")
            columns = fields
            continue
        if fields is not None and len(fields) == len(columns):
            records.append(fields)
    if columns is None:
        raise _NoLineError
    return columns, records


class _NoLineError(Exception):
    """A CSV file with a header holds no non-blank line."""
