"""The declaration: the public facts a data release relies on (DESIGN §8.2; docs/data.md).

One immutable :class:`Schema` holds everything about a table that is public: the columns used,
each with its declared type, its value bounds, its grouping domain (typed keys or numeric bins)
and its rule for what does not fit; the privacy unit and the contribution bounds; the public row
bounds; how a CSV is read. Every engine, the sensitivity calculation, the ledger record and the
reports read this one object; nothing re-derives any of it from the data.

What does not fit, column by column (the same in every engine, bit for bit):

* every cell is cast to the declared type with a cast that cannot fail (docs/data.md, "What does
  not fit"): a cell that is not a value of the type becomes null;
* a null (or failed) cell follows the column's :class:`NullRule`: the row is dropped from what
  uses that column (default), or the declared value is imputed;
* a value is clamped to the declared [lower, upper];
* a grouping cell whose value is not a declared key, or lies outside every bin, drops its row from
  grouped statistics on that column.
"""

from __future__ import annotations

import datetime as _dt
import itertools
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Literal, TypeAlias

from msgspec import Struct, field
from msgspec.structs import force_setattr

from snapdp._rational import shown_rational
from snapdp._validation import check_count, check_unicode
from snapdp.data.model.keys import Key, exact_number, typed_key
from snapdp.errors import ParameterError, not_declared

__all__ = [
    "COLUMN_TYPES",
    "DEFAULT_MAX_LINE_BYTES",
    "DEFAULT_MAX_ROWS",
    "Column",
    "ColumnType",
    "ContributionBounds",
    "CsvOptions",
    "NullRule",
    "Schema",
]

ColumnType: TypeAlias = Literal["integer", "decimal", "text", "boolean", "date"]
COLUMN_TYPES: tuple[str, ...] = ("integer", "decimal", "text", "boolean", "date")

#: The row-count bound used when none is declared: larger than any real table. It costs precision
#: bits, not accuracy (docs/data.md, "Bounds"); sums stay exact as 128-bit integers.
DEFAULT_MAX_ROWS = 1 << 40


class NullRule(Struct, frozen=True):
    """What happens to a null cell (or one whose cast failed): ``"drop"`` drops the row from what
    uses the column; ``"impute"`` uses ``value`` (a typed value of the column; for a value column it
    is clamped like any other value; for a grouping column it must be a declared key)."""

    action: Literal["drop", "impute"] = "drop"
    value: Key | None = None

    def __post_init__(self) -> None:
        if self.action not in ("drop", "impute"):
            raise ParameterError(
                f"a null rule must be 'drop' or 'impute', not {self.action!r}", parameter="nulls"
            )
        if (self.action == "impute") != (self.value is not None):
            raise ParameterError(
                "a null rule imputes exactly when it has a value: 'drop', or 'impute' with a value",
                parameter="nulls",
            )

    def describe(self) -> str:
        """In words, for results and reports."""
        return "dropped" if self.action == "drop" else f"replaced by {self.value!s}"


DROP = NullRule()


class Column(Struct, frozen=True):
    """One declared column.

    ``lower``/``upper``: value bounds (numeric columns used as values: sums, means, variances,
    quantiles); values are clamped to them. ``keys``: the grouping domain as typed values (see
    :func:`typed_key`). ``bins``: numeric bin edges e₀ < e₁ < … < e_m; cell i is [eᵢ, eᵢ₊₁)
    (left-closed); a value outside [e₀, e_m) is outside every bin. A column may have bounds and a
    grouping domain at once; ``keys`` and ``bins`` exclude each other. The name and text keys must
    be valid Unicode text (no lone surrogate: :func:`~snapdp._validation.check_unicode`).
    """

    name: str
    type: ColumnType
    lower: Fraction | None = None
    upper: Fraction | None = None
    keys: tuple[Key, ...] | None = None
    bins: tuple[Fraction, ...] | None = None
    nulls: NullRule = DROP

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ParameterError(f"a column name must be a non-empty string, not {self.name!r}")
        check_unicode(self.name, "a column name", "columns")
        if self.type not in COLUMN_TYPES:
            raise ParameterError(
                f"column {self.name!r}: type must be one of {', '.join(COLUMN_TYPES)}, "
                f"not {self.type!r}",
                parameter="type",
            )
        numeric = self.type in ("integer", "decimal")
        if (self.lower is None) != (self.upper is None):
            raise ParameterError(
                f"column {self.name!r}: declare both lower and upper bounds, or neither",
                parameter="lower" if self.lower is None else "upper",
            )
        if self.lower is not None and self.upper is not None:
            if not numeric:
                raise ParameterError(
                    f"column {self.name!r}: bounds need a numeric type, not {self.type!r}",
                    parameter="type",
                )
            force_setattr(self, "lower", exact_number(f"{self.name}.lower", self.lower))
            force_setattr(self, "upper", exact_number(f"{self.name}.upper", self.upper))
            assert self.lower is not None and self.upper is not None
            if not self.lower < self.upper:
                raise ParameterError(
                    f"column {self.name!r}: bounds must satisfy lower < upper, "
                    f"not [{shown_rational(self.lower)}, {shown_rational(self.upper)}]",
                    parameter="lower",
                )
        if self.keys is not None and self.bins is not None:
            raise ParameterError(
                f"column {self.name!r}: declare keys or bins, not both", parameter="bins"
            )
        if self.keys is not None:
            keys = tuple(typed_key(self.type, k, self.name) for k in self.keys)
            if not keys:
                raise ParameterError(
                    f"column {self.name!r}: keys must declare at least one key", parameter="keys"
                )
            if len(set(keys)) != len(keys):
                raise ParameterError(
                    f"column {self.name!r}: keys must not repeat a key", parameter="keys"
                )
            force_setattr(self, "keys", keys)
        if self.bins is not None:
            if not numeric:
                raise ParameterError(
                    f"column {self.name!r}: bins need a numeric type, not {self.type!r}",
                    parameter="bins",
                )
            edges = tuple(exact_number(f"{self.name}.bins", e) for e in self.bins)
            if len(edges) < 2 or any(a >= b for a, b in itertools.pairwise(edges)):
                raise ParameterError(
                    f"column {self.name!r}: bins must be at least two strictly increasing edges",
                    parameter="bins",
                )
            force_setattr(self, "bins", edges)
        if self.nulls.action == "impute":
            value = typed_key(self.type, self.nulls.value, self.name)
            if self.keys is not None and value not in self.keys:
                raise ParameterError(
                    f"column {self.name!r}: the imputed value {value!s} must be a declared key",
                    parameter="nulls",
                )
            force_setattr(self, "nulls", NullRule("impute", value))

    @property
    def is_grouping(self) -> bool:
        """Whether the column has a grouping domain (keys or bins)."""
        return self.keys is not None or self.bins is not None

    @property
    def n_cells(self) -> int:
        """The number of grouping cells: declared keys, or bins."""
        if self.keys is not None:
            return len(self.keys)
        if self.bins is not None:
            return len(self.bins) - 1
        raise ParameterError(
            f"column {self.name!r} has no declared keys or bins: it cannot group a release",
            parameter="by",
        )

    def cell_labels(self) -> tuple[Key | str, ...]:
        """Typed keys, or bin labels "[a, b)"."""
        if self.keys is not None:
            return self.keys
        assert self.bins is not None
        return tuple(
            f"[{_fmt(a)}, {_fmt(b)})" for a, b in zip(self.bins, self.bins[1:], strict=False)
        )


class ContributionBounds(Struct, frozen=True):
    """How much one privacy unit may contribute (DESIGN §8.3), by the field's names:
    ``max_rows_per_unit`` (k, rows in all), ``max_groups_per_unit`` (L0) and
    ``max_rows_per_group`` (L∞, rows per group per unit). None: no bound of that kind. Without a
    privacy unit each row is a unit, so all three are 1."""

    max_rows_per_unit: int | None = None
    max_groups_per_unit: int | None = None
    max_rows_per_group: int | None = None

    def __post_init__(self) -> None:
        for name in ("max_rows_per_unit", "max_groups_per_unit", "max_rows_per_group"):
            v = getattr(self, name)
            if v is not None:
                check_count(name, v)

    @property
    def is_bounded(self) -> bool:
        """Whether any bound is declared."""
        return any(
            v is not None
            for v in (self.max_rows_per_unit, self.max_groups_per_unit, self.max_rows_per_group)
        )


#: The longest CSV line read as a record, in bytes (docs/data.md, "CSV input"): 1 MiB.
DEFAULT_MAX_LINE_BYTES = 1 << 20
_MAX_LINE_LIMIT = 1 << 30  # Spark's line reader counts a line's bytes in a Java int


class CsvOptions(Struct, frozen=True):
    """How a CSV file is read: one record per line, every cell as text, then cast by the
    declaration (docs/data.md, "CSV input"). ``encoding``: utf-8 or latin-1 (checked when a CSV
    is read); ``delimiter``: one character, not ``"``, LF, CR or NUL.

    ``header``: whether the first non-blank line of each file names its columns. Without one the
    columns are declared, ``column_names`` (their number is the fields of every record; no line
    of the data decides it); with one, ``column_names`` is not given. ``max_line_bytes``: a line
    of more bytes (its LF not counted) is no record, and is skipped without being held in
    memory (default :data:`DEFAULT_MAX_LINE_BYTES`, at most 2^30)."""

    encoding: str = "utf-8"
    delimiter: str = ","
    header: bool = True
    column_names: tuple[str, ...] | None = None
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES

    def __post_init__(self) -> None:
        if not isinstance(self.delimiter, str) or len(self.delimiter) != 1:
            raise ParameterError(
                f"`delimiter` must be one character, not {self.delimiter!r}", parameter="delimiter"
            )
        check_unicode(self.delimiter, "`delimiter`", "delimiter")
        if self.delimiter in '"\n\r\x00':
            raise ParameterError(
                f"`delimiter` cannot be {self.delimiter!r}: a CSV line quotes with '\"' and ends "
                "at a line feed (after an optional carriage return), and NUL is not supported "
                '(docs/data.md, "CSV input")',
                parameter="delimiter",
            )
        if not isinstance(self.header, bool):
            raise ParameterError(
                f"`header` must be true or false, not {self.header!r}", parameter="header"
            )
        check_count("max_line_bytes", self.max_line_bytes)
        if self.max_line_bytes > _MAX_LINE_LIMIT:
            raise ParameterError(
                f"`max_line_bytes` must be at most {_MAX_LINE_LIMIT} (1 GiB), not "
                f"{self.max_line_bytes}",
                parameter="max_line_bytes",
            )
        names = self.column_names
        if names is not None:
            if isinstance(names, str) or not all(isinstance(n, str) for n in names):
                raise ParameterError(
                    f"`column_names` must be a list of column names, not {names!r}",
                    parameter="column_names",
                )
            names = tuple(
                check_unicode(n, "a name in `column_names`", "column_names") for n in names
            )
            force_setattr(self, "column_names", names)
        if self.header and names is not None:
            raise ParameterError(
                "`column_names` declares the columns of a CSV without a header: with a header "
                "the header names them (drop `column_names`, or declare `header` false)",
                parameter="column_names",
            )
        if not self.header:
            if not names:
                raise ParameterError(
                    "a CSV without a header needs its columns declared, in order: "
                    "`column_names` (e.g. a,b,c); no line of the data sets them "
                    '(docs/data.md, "CSV input")',
                    parameter="column_names",
                )
            if any(not n for n in names) or len(set(names)) != len(names):
                raise ParameterError(
                    f"`column_names` must be non-empty and distinct, not {list(names)!r}",
                    parameter="column_names",
                )


class Schema(Struct, frozen=True):
    """The public declaration of a table (DESIGN §8.2).

    ``columns``: the declared columns (only these are read). ``privacy_unit``: the column naming a
    person (None: each row is a unit). ``null_units``: rows whose unit is null are ``"drop"``-ped
    (default) or each ``"own"`` its own unit. ``bounds``: contribution bounds (required to be
    declared with a privacy unit: at least one of them). ``max_rows``: a public upper bound on the
    number of rows after bounding (default :data:`DEFAULT_MAX_ROWS`); it sets the mechanisms'
    clamping bounds, costing precision bits, not accuracy. ``rows``: the exact row count, when the
    owner declares it public (the substitute-one-unit mean needs it; never checked against the
    data in a way a release can show). ``csv``: how a CSV source is read.
    """

    columns: tuple[Column, ...] = ()
    privacy_unit: str | None = None
    null_units: Literal["drop", "own"] = "drop"
    bounds: ContributionBounds = field(default_factory=ContributionBounds)
    max_rows: int = DEFAULT_MAX_ROWS
    rows: int | None = None
    csv: CsvOptions = field(default_factory=CsvOptions)

    def __post_init__(self) -> None:
        names = [c.name for c in self.columns]
        if len(set(names)) != len(names):
            raise ParameterError("a column must not be declared twice", parameter="columns")
        if isinstance(self.privacy_unit, str):
            check_unicode(self.privacy_unit, "`privacy_unit`", "privacy_unit")
        if self.null_units not in ("drop", "own"):
            raise ParameterError(
                f"`null_units` must be 'drop' or 'own', not {self.null_units!r}",
                parameter="null_units",
            )
        if self.privacy_unit is None and self.bounds.is_bounded:
            raise ParameterError(
                "contribution bounds need a `privacy_unit` column (without one, each row is a "
                "unit)",
                parameter="privacy_unit",
            )
        for name, v in (("max_rows", self.max_rows), ("rows", self.rows)):
            if v is not None:
                check_count(name, v)
        if self.rows is not None and self.rows > self.max_rows:
            raise ParameterError(
                f"`rows` = {self.rows} exceeds `max_rows` = {self.max_rows}", parameter="rows"
            )

    def column(self, name: str) -> Column:
        """The declared column ``name``; a ParameterError naming the declared ones otherwise."""
        for c in self.columns:
            if c.name == name:
                return c
        raise ParameterError(
            not_declared(name, (c.name for c in self.columns)), parameter="columns"
        )

    def with_columns(self, columns: Iterable[Column]) -> Schema:
        """A copy with ``columns`` added (replacing same-named declarations)."""
        new = {c.name: c for c in self.columns}
        for c in columns:
            new[c.name] = c
        return Schema(
            tuple(new.values()),
            self.privacy_unit,
            self.null_units,
            self.bounds,
            self.max_rows,
            self.rows,
            self.csv,
        )

    def describe(self) -> dict[str, object]:
        """A JSON-ready description (for the ledger record and the reports)."""
        return {
            "columns": {
                c.name: {
                    "type": c.type,
                    "lower": None if c.lower is None else str(c.lower),
                    "upper": None if c.upper is None else str(c.upper),
                    "keys": None if c.keys is None else [_json_key(k) for k in c.keys],
                    "bins": None if c.bins is None else [str(b) for b in c.bins],
                    "nulls": c.nulls.describe(),
                }
                for c in self.columns
            },
            "privacy_unit": self.privacy_unit,
            "null_units": self.null_units,
            "max_rows_per_unit": self.bounds.max_rows_per_unit,
            "max_groups_per_unit": self.bounds.max_groups_per_unit,
            "max_rows_per_group": self.bounds.max_rows_per_group,
            "max_rows": self.max_rows,
            "rows": self.rows,
        }


def _fmt(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else str(float(x))


def _json_key(k: Key) -> object:
    if isinstance(k, Fraction):
        return str(k)
    if isinstance(k, _dt.date):
        return k.isoformat()
    return k


def keys_product(columns: Sequence[Column]) -> list[tuple[Key | str, ...]]:
    """The cells of a cross-tabulation, row-major (the last column varies fastest)."""
    cells: list[tuple[Key | str, ...]] = [()]
    for c in columns:
        cells = [(*cell, label) for cell in cells for label in c.cell_labels()]
    return cells


def declared(mapping: Mapping[str, Column]) -> tuple[Column, ...]:
    """Columns from a name → Column mapping, in insertion order."""
    return tuple(mapping.values())
