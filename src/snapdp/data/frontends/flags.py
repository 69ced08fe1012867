"""CLI-flags front end: the declaration and statistic flags of ``snapdp release`` (and the
declaration flags of ``snapdp check``) as a :class:`~snapdp.data.model.workload.Workload`
(docs/data.md, "The command line").

Types of undeclared columns come from the query, never from the data: ``--keys`` literals that
are all integers make an integer column, else text; a value column named by ``--sum COL:LO:HI``
(and the like) or binned by ``--bins`` is decimal; a privacy unit is text. The query's ε is split
equally between its statistics (as ``PrivateTable.release`` splits a total).
"""

from __future__ import annotations

import codecs
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from msgspec import Struct
from msgspec.structs import replace

from snapdp._validation import NumberSizeError, exact_decimal
from snapdp.data.model.keys import typed_key
from snapdp.data.model.names import flag_for
from snapdp.data.model.query import Query
from snapdp.data.model.schema import (
    COLUMN_TYPES,
    DEFAULT_MAX_LINE_BYTES,
    DEFAULT_MAX_ROWS,
    Column,
    ContributionBounds,
    CsvOptions,
    NullRule,
    Schema,
)
from snapdp.data.model.workload import Declaration, Workload
from snapdp.errors import ParameterError, not_declared

__all__ = ["default_by", "queries_from_flags", "schema_from_options", "workload_from_flags"]


def workload_from_flags(
    *,
    source: object,
    epsilon: Fraction,
    declaration: Mapping[str, Any],
    want_count: bool = False,
    sums: Sequence[str] = (),
    means: Sequence[str] = (),
    variances: Sequence[str] = (),
    stds: Sequence[str] = (),
    quantiles: Sequence[str] = (),
    mean_method: str = "ratio",
    var_samps: Sequence[str] = (),
    std_samps: Sequence[str] = (),
    by: Sequence[str] = (),
    confidence: float = 0.95,
    dataset: str | None = None,
    where: str | None = None,
    consistent: str | None = None,
    quantile_method: str = "tree",
    grid_counts: bool = False,
    delta: Fraction | None = None,
) -> Workload:
    """The workload the flags state: ``declaration`` holds the declaration flags' values (the
    keyword arguments of :func:`schema_from_options`), the statistic flags their specs, ``by``
    the grouping columns; ``where`` a SQL condition every statistic filters its rows by;
    ``epsilon`` is the total, split equally between the statistics; ``delta`` (``--delta``) lets
    ``--by`` name columns without declared keys (docs/sql.md, "Groups from the data")."""
    quantile_specs = [_quantiles_spec(q) for q in quantiles]
    flagged = [("--sum", s) for s in sums] + [("--mean", s) for s in means]
    flagged += [("--var", s) for s in variances] + [("--std", s) for s in stds]
    flagged += [("--var-samp", s) for s in var_samps] + [("--std-samp", s) for s in std_samps]
    flagged += [(_QUANTILES, spec) for spec, _ in quantile_specs]
    schema = schema_from_options(**declaration, flagged_values=flagged)
    queries = queries_from_flags(
        want_count, sums, means, variances, stds, mean_method, by, var_samps, std_samps
    )
    if consistent is not None:  # the count's margins along --by join it (docs/data.md)
        if not want_count:
            raise ParameterError("`consistent` fits counts: add --count", parameter="consistent")
        queries = [*(Query("count", by=tuple(by[:k])) for k in range(len(by))), *queries]
    queries += [
        Query(
            "quantiles",
            _value_spec(spec, _QUANTILES)[0],
            tuple(by),
            quantiles=probs,
            method=quantile_method,  # type: ignore[arg-type]
        )
        for spec, probs in quantile_specs
    ]
    if grid_counts:
        if not want_count:
            raise ParameterError(
                "--grid-counts is for counts: add --count", parameter="grid_counts"
            )
        queries = [replace(q, grid_counts=True) if q.statistic == "count" else q for q in queries]
    if not queries:
        raise ParameterError(
            f"name at least one statistic: {flag_for('statistic')} or --quantiles",
            parameter="statistic",
        )
    decl = Declaration(
        schema,
        source,
        confidence=confidence,
        dataset=dataset,
        consistent=False if consistent is None else consistent,
        delta=delta,
    )
    if where is not None:
        from snapdp.data.frontends.sql import parse_predicate

        predicate = parse_predicate(where, decl, label="`--where`")
        queries = [replace(q, where=predicate) for q in queries]
    share = Fraction(epsilon) / len(queries)
    return Workload(decl, tuple(decl.planned(q, epsilon=share) for q in queries))


_QUANTILES = "--quantiles"


def _value_flags() -> str:
    """The statistic flags that name a value column (from the one names table)."""
    return flag_for("column") or "--sum"


def default_by(declaration: Mapping[str, Any]) -> list[str]:
    """The grouping when no ``--by`` is given: the columns declared with ``--keys``, ``--key``
    or ``--bins`` (the one-liner ``--keys sex=0,1`` groups by sex)."""
    by = [_keys_spec(s, "--keys")[0] for s in declaration.get("keys", ())]
    by += [_assignment(s, "--key", "COL=VALUE")[0] for s in declaration.get("key", ())]
    by += [_keys_spec(s, "--bins")[0] for s in declaration.get("bins", ())]
    return list(dict.fromkeys(by))


def queries_from_flags(
    want_count: bool,
    sums: Sequence[str],
    means: Sequence[str],
    variances: Sequence[str],
    stds: Sequence[str],
    mean_method: str,
    by: Sequence[str],
    var_samps: Sequence[str] = (),
    std_samps: Sequence[str] = (),
) -> list[Query]:
    """The queries of the statistic flags (quantiles apart), each grouped by ``by``."""
    b = tuple(by)
    queries = [Query("count", by=b)] if want_count else []
    queries += [Query("sum", _value_spec(s)[0], b) for s in sums]
    queries += [Query("mean", _value_spec(s)[0], b, method=mean_method) for s in means]  # type: ignore[arg-type]
    queries += [Query("variance", _value_spec(s)[0], b) for s in variances]
    queries += [Query("std", _value_spec(s)[0], b) for s in stds]
    queries += [Query("var_samp", _value_spec(s)[0], b) for s in var_samps]
    queries += [Query("std_samp", _value_spec(s)[0], b) for s in std_samps]
    return queries


def _quantiles_spec(spec: str) -> tuple[str, tuple[Fraction, ...]]:
    """``COL[:LO:HI]:P1,P2`` → (the value spec, the probabilities, exactly)."""
    head, sep, tail = spec.rpartition(":")
    try:
        probs = tuple(exact_decimal(p, name="--quantiles", rational=True) for p in tail.split(","))
    except NumberSizeError:
        raise
    except ParameterError:
        probs = ()
    if not sep or not head or not probs or any(not 0 < p < 1 for p in probs):
        raise ParameterError(
            "`--quantiles` must look like COLUMN:LOWER:UPPER:P1,P2,… with each P in (0, 1) "
            f"(e.g. income:0:500000:0.25,0.5,0.75), not {spec!r}"
        )
    return head, probs


class _Draft(Struct, frozen=True):
    """A column being declared from several flags."""

    type: str | None = None
    lower: Fraction | None = None
    upper: Fraction | None = None
    keys: tuple[str, ...] | None = None
    bins: tuple[str, ...] | None = None
    nulls: str | None = None


def schema_from_options(
    *,
    columns: Sequence[str] = (),
    keys: Sequence[str] = (),
    key: Sequence[str] = (),
    bins: Sequence[str] = (),
    privacy_unit: str | None = None,
    max_rows_per_unit: int | None = None,
    max_groups_per_unit: int | None = None,
    max_rows_per_group: int | None = None,
    null_units: str = "drop",
    nulls: Sequence[str] = (),
    rows: int | None = None,
    max_rows: int | None = None,
    encoding: str = "utf-8",
    delimiter: str = ",",
    header: bool = True,
    column_names: str | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    values: Sequence[str] = (),
    flagged_values: Sequence[tuple[str, str]] = (),
) -> Schema:
    """The Schema the flags declare (see the module docstring for undeclared types).

    ``values``: the COL[:LO:HI] specs of the statistic flags (they may carry bounds);
    ``flagged_values``: (flag, spec) pairs, whose errors name their flag (``--quantiles``).
    """
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise ParameterError(
            f"`--encoding` {encoding!r} is not an encoding Python knows (e.g. utf-8, latin-1)",
            parameter="encoding",
        ) from None
    drafts: dict[str, _Draft] = {}

    def draft(name: str) -> _Draft:
        return drafts.setdefault(name, _Draft())

    def update(name: str, flag: str, **changes: Any) -> None:
        d = draft(name)
        for field_name, new in changes.items():
            old = getattr(d, field_name)
            if old is not None and old != new and field_name != "keys":
                raise ParameterError(f"`{flag}`: column {name!r} is declared twice differently")
        drafts[name] = _replace(d, **changes)

    for spec in columns:
        name, kind, lo, hi = _column_spec(spec)
        update(name, "--column", type=kind, lower=lo, upper=hi)
    for flag, spec in [*((_value_flags(), v) for v in values), *flagged_values]:
        name, lo, hi = _value_spec(spec, flag)
        if lo is not None:
            update(name, flag, lower=lo, upper=hi)
        else:
            draft(name)
    for spec in keys:
        name, items = _keys_spec(spec, "--keys")
        d = draft(name)
        drafts[name] = _replace(d, keys=(d.keys or ()) + tuple(items))
    for spec in key:
        name, value = _assignment(spec, "--key", "COL=VALUE")
        d = draft(name)
        drafts[name] = _replace(d, keys=(d.keys or ()) + (value,))
    for spec in bins:
        name, items = _keys_spec(spec, "--bins")
        update(name, "--bins", bins=tuple(items))
    for spec in nulls:
        name, rule = _assignment(spec, "--nulls", "COL=drop|VALUE")
        if name not in drafts:
            raise ParameterError(
                f"`--nulls`: {not_declared(name, drafts)}; declare it with --column, or use it"
            )
        update(name, "--nulls", nulls=rule)
    declared = tuple(_column(name, d) for name, d in drafts.items() if name != privacy_unit)
    if privacy_unit is not None and privacy_unit in drafts:
        d = drafts[privacy_unit]
        declared += (Column(privacy_unit, d.type or "text"),)  # type: ignore[arg-type]
    bounds = ContributionBounds(max_rows_per_unit, max_groups_per_unit, max_rows_per_group)
    return Schema(
        declared,
        privacy_unit,
        null_units,  # type: ignore[arg-type]
        bounds,
        DEFAULT_MAX_ROWS if max_rows is None else max_rows,
        rows,
        CsvOptions(
            encoding,
            delimiter,
            header,
            None if column_names is None else tuple(n.strip() for n in column_names.split(",")),
            max_line_bytes,
        ),
    )


def _replace(d: _Draft, **changes: Any) -> _Draft:
    values = {f: getattr(d, f) for f in ("type", "lower", "upper", "keys", "bins", "nulls")}
    values.update({k: v for k, v in changes.items() if v is not None})
    return _Draft(**values)


def _column(name: str, d: _Draft) -> Column:
    kind = d.type
    if kind is None:
        if d.keys is not None:
            kind = "integer" if all(_is_int_literal(k) for k in d.keys) else "text"
        else:
            kind = "decimal"
    rule = NullRule()
    if d.nulls is not None and d.nulls != "drop":
        try:
            rule = NullRule("impute", typed_key(kind, d.nulls, name))
        except ParameterError:
            raise ParameterError(
                f"`--nulls` {name}={d.nulls!r}: the value must be a {kind} value (or 'drop')",
                parameter="nulls",
            ) from None
    return Column(name, kind, d.lower, d.upper, d.keys, d.bins, rule)  # type: ignore[arg-type]


def _is_int_literal(text: str) -> bool:
    t = text.strip()
    return bool(t) and t.lstrip("+-").isdigit() and len(t) - len(t.lstrip("+-")) <= 1


def _number(text: str, flag: str, spec: str) -> Fraction:
    try:
        return exact_decimal(text, name=flag, rational=True)
    except NumberSizeError:
        raise
    except ParameterError:
        raise ParameterError(f"`{flag}` bounds must be numbers, not {spec!r}") from None


def _column_spec(spec: str) -> tuple[str, str, Fraction | None, Fraction | None]:
    parts = spec.split(":")
    if len(parts) not in (2, 4) or not parts[0] or parts[1] not in COLUMN_TYPES:
        raise ParameterError(
            f"`--column` must look like NAME:TYPE or NAME:TYPE:LOWER:UPPER with TYPE one of "
            f"{', '.join(COLUMN_TYPES)} (e.g. age:integer:0:120), not {spec!r}"
        )
    if len(parts) == 2:
        return parts[0], parts[1], None, None
    lo, hi = _number(parts[2], "--column", spec), _number(parts[3], "--column", spec)
    if not lo < hi:
        raise ParameterError(f"`--column` needs LOWER < UPPER, not {spec!r}")
    return parts[0], parts[1], lo, hi


def _value_spec(spec: str, flag: str | None = None) -> tuple[str, Fraction | None, Fraction | None]:
    """``COL[:LO:HI]`` of a statistic flag; errors name ``flag`` (default: the value flags)."""
    parts = spec.rsplit(":", 2)
    flag = flag or _value_flags()
    if len(parts) == 1 and parts[0]:
        return parts[0], None, None
    if len(parts) != 3 or not parts[0]:
        raise ParameterError(
            f"`{flag}` must look like COLUMN:LOWER:UPPER (e.g. income:0:500000), or COLUMN when "
            f"declared with --column, not {spec!r}"
        )
    lo, hi = _number(parts[1], flag, spec), _number(parts[2], flag, spec)
    if not lo < hi:
        raise ParameterError(f"`{flag}` needs LOWER < UPPER, not {spec!r}")
    return parts[0], lo, hi


def _keys_spec(spec: str, flag: str) -> tuple[str, list[str]]:
    name, sep, rest = spec.partition("=")
    items = [k.strip() for k in rest.split(",")] if sep else []
    if not sep or not name.strip() or not items or any(not k for k in items):
        raise ParameterError(f"`{flag}` must look like COLUMN=a,b,c (e.g. sex=0,1), not {spec!r}")
    return name.strip(), items


def _assignment(spec: str, flag: str, shape: str) -> tuple[str, str]:
    name, sep, value = spec.partition("=")
    if not sep or not name.strip() or value == "":
        raise ParameterError(f"`{flag}` must look like {shape}, not {spec!r}")
    return name.strip(), value
