"""``snapdp check``: what in a table does not fit its declaration, WITHOUT privacy (docs/data.md).

Thin glue over :func:`snapdp.data.check.check`. The declaration flags are parsed here by a small
local parser (``--column NAME:TYPE[:LO:HI]``, ``--keys COL=a,b``, ``--bins COL=e0,e1,…``,
``--privacy-unit``, the contribution bounds, ``--rows``, ``--max-rows``, the CSV options); it is
meant to be swapped for the shared declaration parser of ``snapdp release`` once that exists.
"""

from __future__ import annotations

import json
from fractions import Fraction

import click

from snapdp.cli._common import json_option, library_errors
from snapdp.data.check import check as check_table
from snapdp.data.schema import (
    COLUMN_TYPES,
    DEFAULT_MAX_ROWS,
    Column,
    ContributionBounds,
    CsvOptions,
    Schema,
    typed_key,
)
from snapdp.errors import ParameterError

__all__ = ["check", "parse_declaration"]


@click.command()
@click.argument("data", type=str)
@click.option(
    "--column",
    "columns",
    multiple=True,
    metavar="NAME:TYPE[:LO:HI]",
    help=f"Declare a column: its type ({', '.join(COLUMN_TYPES)}) and optional bounds.",
)
@click.option(
    "--keys", "keys", multiple=True, metavar="COL=a,b,…", help="A grouping column's keys."
)
@click.option("--bins", "bins", multiple=True, metavar="COL=e0,e1,…", help="Numeric bin edges.")
@click.option("--privacy-unit", default=None, help="The column naming a person.")
@click.option(
    "--null-units",
    type=click.Choice(["drop", "own"]),
    default="drop",
    show_default=True,
    help="Rows whose unit is null: dropped, or each its own unit.",
)
@click.option("--max-rows-per-unit", type=int, default=None, help="k: rows per unit.")
@click.option("--max-groups-per-unit", type=int, default=None, help="L0: groups per unit.")
@click.option("--max-rows-per-group", type=int, default=None, help="L∞: rows per group per unit.")
@click.option("--rows", type=int, default=None, help="The declared (public) row count.")
@click.option("--max-rows", type=int, default=None, help="The declared row-count bound.")
@click.option("--encoding", default="utf-8", show_default=True, help="CSV encoding.")
@click.option("--delimiter", default=",", show_default=True, help="CSV delimiter.")
@click.option("--header/--no-header", default=True, show_default=True, help="CSV header line.")
@click.option("--glob", is_flag=True, help="Read DATA as a file pattern (default: literal path).")
@click.option("--memory-limit", default=None, help="DuckDB's memory limit, e.g. 2GB.")
@json_option
@library_errors
def check(
    data: str,
    columns: tuple[str, ...],
    keys: tuple[str, ...],
    bins: tuple[str, ...],
    privacy_unit: str | None,
    null_units: str,
    max_rows_per_unit: int | None,
    max_groups_per_unit: int | None,
    max_rows_per_group: int | None,
    rows: int | None,
    max_rows: int | None,
    encoding: str,
    delimiter: str,
    header: bool,
    glob: bool,
    memory_limit: str | None,
    as_json: bool,
) -> None:
    """Check DATA against a declaration, WITHOUT privacy: for the data owner only.

    Reports exact counts and example cells of what does not fit: cast failures, nulls, values
    outside the bounds, undeclared keys, rows over each contribution bound, the true row count
    against --rows. Spends nothing and opens no ledger. See docs/data.md ("snapdp check").
    """
    schema = parse_declaration(
        columns=columns,
        keys=keys,
        bins=bins,
        privacy_unit=privacy_unit,
        null_units=null_units,
        bounds=ContributionBounds(max_rows_per_unit, max_groups_per_unit, max_rows_per_group),
        rows=rows,
        max_rows=max_rows,
        csv=CsvOptions(encoding=encoding, delimiter=delimiter, header=header),
    )
    report = check_table(data, schema, glob=glob, memory_limit=memory_limit)
    if as_json:
        click.echo(json.dumps(report.to_dict(), default=str))
        return
    warning, _, rest = report.to_text().partition("\n")
    click.secho(warning, bold=True)
    click.echo(rest)


def parse_declaration(
    *,
    columns: tuple[str, ...],
    keys: tuple[str, ...],
    bins: tuple[str, ...],
    privacy_unit: str | None,
    null_units: str,
    bounds: ContributionBounds,
    rows: int | None,
    max_rows: int | None,
    csv: CsvOptions,
) -> Schema:
    """A :class:`Schema` from the declaration flags. A column given only in ``--keys`` takes its
    type from the keys as written (all integers: integer; all numbers: decimal; else text), never
    from the data."""
    types: dict[str, tuple[str, Fraction | None, Fraction | None]] = {}
    for spec in columns:
        parts = spec.split(":")
        if len(parts) not in (2, 4) or not parts[0]:
            raise ParameterError(
                f"`--column` must be NAME:TYPE or NAME:TYPE:LO:HI, not {spec!r}", parameter="column"
            )
        lo = hi = None
        if len(parts) == 4:
            lo, hi = _number("--column", parts[2]), _number("--column", parts[3])
        types[parts[0]] = (parts[1].strip().lower(), lo, hi)
    key_map: dict[str, list[str]] = {}
    for spec in keys:
        name, values = _split_assignment("--keys", spec)
        key_map[name] = values
    bin_map: dict[str, tuple[Fraction, ...]] = {}
    for spec in bins:
        name, values = _split_assignment("--bins", spec)
        bin_map[name] = tuple(_number("--bins", v) for v in values)
    declared: list[Column] = []
    for name in dict.fromkeys([*types, *key_map, *bin_map]):
        if name in types:
            kind, lo, hi = types[name]
        else:
            kind, lo, hi = _kind_of(key_map.get(name)), None, None
        col_keys = None
        if name in key_map:
            col_keys = tuple(typed_key(kind, k, name) for k in key_map[name])
        declared.append(
            Column(name, kind, lo, hi, keys=col_keys, bins=bin_map.get(name))  # type: ignore[arg-type]
        )
    return Schema(
        tuple(declared),
        privacy_unit=privacy_unit,
        null_units="own" if null_units == "own" else "drop",
        bounds=bounds,
        max_rows=DEFAULT_MAX_ROWS if max_rows is None else max_rows,
        rows=rows,
        csv=csv,
    )


def _split_assignment(flag: str, spec: str) -> tuple[str, list[str]]:
    name, sep, values = spec.partition("=")
    if not sep or not name or not values:
        raise ParameterError(f"`{flag}` must be COL=a,b,…, not {spec!r}", parameter=flag)
    return name, values.split(",")


def _number(flag: str, text: str) -> Fraction:
    from decimal import Decimal, InvalidOperation

    try:
        value = Fraction(Decimal(text.strip()))
    except (InvalidOperation, ValueError):
        raise ParameterError(f"`{flag}`: {text!r} is not a number", parameter=flag) from None
    return value


def _kind_of(keys: list[str] | None) -> str:
    """The type the keys are written in (the query's literals, never the data)."""
    if not keys:
        return "text"
    stripped = [k.strip() for k in keys]
    if all(k.lstrip("+-").isdigit() for k in stripped):
        return "integer"
    try:
        for k in stripped:
            _number("--keys", k)
    except ParameterError:
        return "text"
    return "decimal"
