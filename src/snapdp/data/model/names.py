"""The user-facing names of every workload parameter: one table (docs/sql.md, "One workload").

Each library parameter (the name a :class:`~snapdp.errors.ParameterError` carries) has the flag
that sets it on ``snapdp release`` / ``snapdp check`` (and, through the CLI's error boundary,
on every other command), its TOML key (in which plan-file table,
with the aliases a plan file may use) and its SQL word. Every front end's error messages name a
parameter through this table, so a user reads the name they wrote.

**Located errors** (docs/plans.md, "Errors"). A front end that reads a file (the TOML plan
loader) hands the planner a :class:`Locator` with the plan, so that an error the planner finds
later (a target that cannot be met) still names the file, the line and the key. The planner
reads no text: it only asks the locator for a line.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal, Protocol

from msgspec import Struct

from snapdp.errors import ParameterError

__all__ = [
    "NAMES",
    "KeyedError",
    "Locator",
    "Name",
    "Path_",
    "PlanFileError",
    "describe_key",
    "flag_for",
    "flags",
    "located",
    "sql_word_for",
    "toml_keys",
]

Table = Literal["data", "columns", "query"]


class Name(Struct, frozen=True):
    """How one parameter is written: ``flag`` (None: no flag), ``toml`` (table, key, aliases;
    None: no key) and ``sql`` (None: not written in SQL)."""

    flag: str | None = None
    toml: tuple[Table, str, tuple[str, ...]] | None = None
    sql: str | None = None


_STATS = "--sum/--mean/--var/--std/--var-samp/--std-samp"
_VALUES = f"--column/{_STATS}/--quantiles"

#: Library parameter → its names. The order of each TOML table is the order of its keys.
NAMES: Mapping[str, Name] = {
    # [data]: the source, the declaration's table-wide facts, the budget
    "source": Name(None, ("data", "source", ("path", "file")), "FROM"),
    "privacy_unit": Name(
        "--privacy-unit", ("data", "privacy_unit", ("unit", "privacy_id")), "privacy_unit_column"
    ),
    "max_rows_per_unit": Name(
        "--max-rows-per-unit",
        ("data", "max_rows_per_unit", ("max_contributions", "k")),
        "max_rows_contributed",
    ),
    "max_groups_per_unit": Name(
        "--max-groups-per-unit",
        ("data", "max_groups_per_unit", ("max_partitions_contributed", "l0")),
        "max_groups_contributed",
    ),
    "max_rows_per_group": Name(
        "--max-rows-per-group",
        ("data", "max_rows_per_group", ("max_contributions_per_partition", "linf")),
    ),
    "total_epsilon": Name("--total-epsilon", ("data", "total_epsilon", ("epsilon",))),
    "confidence": Name("--confidence", ("data", "confidence", ())),
    "group_size": Name(None, ("data", "group_size", ("reference_group_size",))),
    "max_rows": Name("--max-rows", ("data", "max_rows", ())),
    "rows": Name("--rows", ("data", "rows", ("row_count",))),
    "null_units": Name("--null-units", ("data", "null_units", ())),
    "encoding": Name("--encoding", ("data", "encoding", ())),
    "delimiter": Name("--delimiter", ("data", "delimiter", ())),
    "header": Name("--header/--no-header", ("data", "header", ())),
    "column_names": Name("--csv-columns", ("data", "column_names", ("csv_columns",))),
    "max_line_bytes": Name("--max-line-bytes", ("data", "max_line_bytes", ())),
    "dataset": Name("--dataset", ("data", "dataset", ("name",)), "FROM"),
    "consistent": Name("--consistent", ("data", "consistent", ())),
    "data_delta": Name("--delta", ("data", "delta", ())),
    # [columns.NAME]
    "type": Name("--column", ("columns", "type", ())),
    "lower": Name(_VALUES, ("columns", "lower", ("min",)), "CLAMP"),
    "upper": Name(_VALUES, ("columns", "upper", ("max",)), "CLAMP"),
    # the bounds of a column a quantile reads, in an error about quantiles (where they were
    # written: --quantiles COL:LO:HI:…, or the column's `lower` in a plan file)
    "quantile_bounds": Name("--quantiles", ("columns", "lower", ("min",)), "CLAMP"),
    "keys": Name("--keys", ("columns", "keys", ("values", "domain"))),
    "bins": Name("--bins", ("columns", "bins", ("edges",))),
    "nulls": Name("--nulls", ("columns", "nulls", ("null", "on_null"))),
    "columns": Name("--column"),
    # [[query]]
    "statistic": Name(f"--count/{_STATS}", ("query", "statistic", ("stat",)), "SELECT"),
    "column": Name(_STATS, ("query", "column", ()), "SELECT"),
    "by": Name("--by", ("query", "by", ("group_by",)), "GROUP BY"),
    "query_bins": Name("--bins", ("query", "bins", ("edges",))),
    "quantiles": Name("--quantiles", ("query", "quantiles", ("probabilities",)), "PERCENTILE_CONT"),
    "resolution": Name(None, ("query", "resolution", ())),
    "method": Name("--mean-method/--quantile-method", ("query", "method", ())),
    "name": Name(None, ("query", "name", ("label",)), "AS"),
    "grid_counts": Name("--grid-counts", ("query", "grid_counts", ())),
    "where": Name(None, ("query", "where", ()), "WHERE"),
    "sql": Name(None, ("query", "sql", ())),
    "epsilon": Name("--epsilon", ("query", "epsilon", ()), "OPTIONS(epsilon)"),
    "accuracy": Name(None, ("query", "accuracy", ("target", "target_accuracy"))),
    "query_confidence": Name("--confidence", ("query", "confidence", ())),
    "weight": Name(None, ("query", "weight", ())),
    "delta": Name("--delta", ("query", "delta", ()), "OPTIONS(delta)"),
    "query_group_size": Name(None, ("query", "group_size", ("reference_group_size",))),
    # the single-value release and the other commands: flags only (a command's own option of
    # the same name wins, e.g. ``snapdp release --value``'s --lower/--upper)
    "sensitivity": Name("--sensitivity"),
    "value": Name("--value"),
    "values": Name("--value"),
    "alpha": Name("--alpha"),
    "ledger": Name("--ledger"),
    "total_delta": Name("--total-delta"),
    "timeout": Name("--lock-timeout"),
    "neighbour": Name("--neighbour"),
    "memory_limit": Name("--memory-limit"),
}


def toml_keys(table: Table, *, sql: bool = False) -> dict[str, tuple[str, ...]]:
    """The keys of a plan file's table, each with its aliases (``sql``: with the query keys
    only the SQL front end reads: ``sql``, ``where``)."""
    out: dict[str, tuple[str, ...]] = {}
    for name in NAMES.values():
        if name.toml is not None and name.toml[0] == table:
            key, aliases = name.toml[1], name.toml[2]
            if key in ("sql", "where") and not sql:
                continue
            out[key] = aliases
    return out


def flags() -> dict[str, str]:
    """Library parameter → the flag that sets it (for the table release and ``check``)."""
    return {
        p: n.flag for p, n in NAMES.items() if n.flag is not None and not p.startswith("query_")
    }


def flag_for(parameter: str) -> str | None:
    """The flag of ``parameter``, or None."""
    name = NAMES.get(parameter)
    return None if name is None else name.flag


def sql_word_for(parameter: str) -> str | None:
    """The SQL word of ``parameter``, or None."""
    name = NAMES.get(parameter)
    return None if name is None else name.sql


# -- located errors: which file, which line, which key -----------------------------------------
#: A key path: table names, array-of-table indices (0-based) and key names.
Path_ = tuple[str | int, ...]


class KeyedError(ParameterError):
    """A rule broken at one key of a workload: ``key`` is its path (``("query", 1, "by")``),
    which a front end's origin map turns into the user's own place for it (a plan file's line,
    a field of the page)."""

    def __init__(self, message: str, *, parameter: str | None = None, key: Path_ = ()) -> None:
        super().__init__(message, parameter=parameter)
        self.key = key


class PlanFileError(KeyedError):
    """A plan file breaks a rule; the message names the file, the line and the key."""


class Locator(Protocol):
    """Finds the line of a key path in a file."""

    def line(self, path: Path_) -> int | None:
        """The line (1-based) of ``path`` or of its nearest located parent; None if none."""
        ...


def describe_key(path: Path_) -> str:
    """``query[2].accuracy`` for ("query", 1, "accuracy"): indices 1-based, as a user counts."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part + 1}]"
        else:
            out += ("." if out else "") + part
    return out


def located(
    path: Path, locator: Locator | None, key: Path_, message: str, parameter: str | None
) -> PlanFileError:
    """``message`` as a PlanFileError naming ``path``, the line of ``key`` and ``key``."""
    line = None if locator is None else locator.line(key)
    where = str(path) + ("" if line is None else f", line {line}")
    text = f"{where}, key `{describe_key(key)}`: {message}"
    return PlanFileError(text, parameter=parameter, key=key)
