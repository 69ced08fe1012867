"""Glue for ``snapdp release`` over a table: the declaration flags → a :class:`Schema`, the
statistic flags → queries, the library call, the printing (docs/data.md, "The command line").

:func:`declaration_options` adds the declaration flags to a command and
:func:`schema_from_options` turns them into a Schema; ``snapdp check`` shares both.
Types of undeclared columns come from the query, never from the data: ``--keys`` literals that
are all integers make an integer column, else text; a value column named by ``--sum COL:LO:HI``
(and the like) or binned by ``--bins`` is decimal; a privacy unit is text.
"""

from __future__ import annotations

import codecs
import functools
import importlib
import json
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import click

from snapdp._validation import check_epsilon
from snapdp.cli._common import mark_spent
from snapdp.data.ledger import Ledger
from snapdp.data.query import Query
from snapdp.data.release import PrivateTable
from snapdp.data.results import QueryResult
from snapdp.data.schema import (
    COLUMN_TYPES,
    DEFAULT_MAX_ROWS,
    Column,
    ContributionBounds,
    CsvOptions,
    NullRule,
    Schema,
    typed_key,
)
from snapdp.data.statistics import AccuracyStatement
from snapdp.errors import ParameterError

__all__ = [
    "FLAGS",
    "declaration_options",
    "flag_errors",
    "plain_number",
    "run_table_release",
    "schema_from_options",
]

P = ParamSpec("P")
R = TypeVar("R")

#: Library parameter → the flag that sets it (errors name the flag).
FLAGS: dict[str, str] = {
    "max_rows": "--max-rows",
    "rows": "--rows",
    "max_rows_per_unit": "--max-rows-per-unit",
    "max_groups_per_unit": "--max-groups-per-unit",
    "max_rows_per_group": "--max-rows-per-group",
    "privacy_unit": "--privacy-unit",
    "null_units": "--null-units",
    "nulls": "--nulls",
    "keys": "--keys",
    "bins": "--bins",
    "by": "--by",
    "columns": "--column",
    "type": "--column",
    "lower": "--column/--sum/--mean/--var/--std/--quantiles",
    "upper": "--column/--sum/--mean/--var/--std/--quantiles",
    "epsilon": "--epsilon",
    "confidence": "--confidence",
    "delimiter": "--delimiter",
    "encoding": "--encoding",
    "total_epsilon": "--total-epsilon",
    "column": "--sum/--mean/--var/--std",
    "statistic": "--count/--sum/--mean/--var/--std",
    "consistent": "--consistent",
}


def flag_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Re-raise the library's ParameterErrors with the flag named instead of the parameter."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except ParameterError as exc:
            flag = FLAGS.get(exc.parameter or "")
            if flag is None:
                raise
            message = str(exc)
            for parameter, name in FLAGS.items():
                message = message.replace(f"`{parameter}`", f"`{name}`")
            if flag.split("/")[0] not in message:
                message = f"{flag}: {message}"
            raise ParameterError(message, parameter=exc.parameter) from None

    return wrapper


def declaration_options(func: Callable[P, R]) -> Callable[P, R]:
    """The declaration flags (shared by ``release`` and ``check``)."""
    options = [
        click.option("--column", "columns", multiple=True, metavar="NAME:TYPE[:LO:HI]",
                     help=f"Declare a column: type ({', '.join(COLUMN_TYPES)}) and bounds."),
        click.option("--keys", "keys", multiple=True, metavar="COL=a,b,c",
                     help="Declare a grouping column's keys (typed by the column's type)."),
        click.option("--key", "key", multiple=True, metavar="COL=VALUE",
                     help="Declare one key (repeat; for keys that contain commas)."),
        click.option("--bins", "bins", multiple=True, metavar="COL=e0,e1,...",
                     help="Numeric bins [e0, e1), [e1, e2), … of a grouping column."),
        click.option("--privacy-unit", help="Column naming a person (default: each row is one)."),
        click.option("--max-rows-per-unit", type=int, help="k: rows one unit keeps in all."),
        click.option("--max-groups-per-unit", type=int, help="L0: groups one unit keeps."),
        click.option("--max-rows-per-group", type=int, help="L∞: rows a unit keeps per group."),
        click.option("--null-units", type=click.Choice(["drop", "own"]), default="drop",
                     show_default=True, help="Rows whose unit is null: dropped, or each its own."),
        click.option("--nulls", "nulls", multiple=True, metavar="COL=drop|VALUE",
                     help="What a null (or unreadable) cell becomes: dropped (default) or VALUE."),
        click.option("--rows", type=int, help="The exact row count, declared public."),
        click.option("--max-rows", type=int,
                     help="A public upper bound on the rows (optional: ± then holds up to it)."),
        click.option("--encoding", default="utf-8", show_default=True, help="CSV encoding."),
        click.option("--delimiter", default=",", show_default=True, help="CSV delimiter."),
        click.option("--header/--no-header", default=True, show_default=True,
                     help="Whether the CSV's first line names the columns."),
    ]  # fmt: skip
    for option in reversed(options):
        func = option(func)
    return func


@dataclass(frozen=True)
class _Draft:
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
    values: Sequence[str] = (),
) -> Schema:
    """The Schema the flags declare (see the module docstring for undeclared types).

    ``values``: the COL[:LO:HI] specs of the statistic flags (they may carry bounds).
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
    for spec in values:
        name, lo, hi = _value_spec(spec)
        if lo is not None:
            update(name, "--sum/--mean/--var/--std", lower=lo, upper=hi)
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
                f"`--nulls`: column {name!r} is not declared (declare it with --column, or use it)"
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
        CsvOptions(encoding, delimiter, header),
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
        value = Fraction(text.strip())
    except (ValueError, ZeroDivisionError):
        raise ParameterError(f"`{flag}` bounds must be numbers, not {spec!r}") from None
    return value


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


def _value_spec(spec: str) -> tuple[str, Fraction | None, Fraction | None]:
    parts = spec.rsplit(":", 2)
    flag = "--sum/--mean/--var/--std"
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


# -- the release ------------------------------------------------------------------------------
@flag_errors
def run_table_release(
    *,
    data: str | None,
    epsilon: object,
    want_count: bool,
    sums: Sequence[str],
    means: Sequence[str],
    variances: Sequence[str],
    stds: Sequence[str],
    quantiles: Sequence[str],
    mean_method: str,
    by: Sequence[str],
    declaration: dict[str, Any],
    ledger: str | None,
    total_epsilon: object,
    dataset: str | None,
    confidence: float,
    as_json: bool,
    dry_run: bool,
    engine: str,
    memory_limit: str | None = None,
    glob: bool = False,
    consistent: str | None = None,
) -> None:
    """Run one table release (see ``snapdp release --help``) and print its results."""
    eps = check_epsilon("epsilon", epsilon)
    by_columns = [c.strip() for spec in by for c in spec.split(",") if c.strip()]
    source: object = data
    label = str(data)
    if data is None:
        source, label, declaration, by_columns = _demo(declaration, by_columns)
    if not by_columns:  # the one-liner `--keys sex=0,1` groups by sex
        by_columns = [_keys_spec(s, "--keys")[0] for s in declaration.get("keys", ())]
        by_columns += [_assignment(s, "--key", "COL=VALUE")[0] for s in declaration.get("key", ())]
        by_columns += [_keys_spec(s, "--bins")[0] for s in declaration.get("bins", ())]
        by_columns = list(dict.fromkeys(by_columns))
    quantile_specs = [_quantiles_spec(q) for q in quantiles]
    value_specs = [*sums, *means, *variances, *stds, *(spec for spec, _ in quantile_specs)]
    schema = schema_from_options(**declaration, values=value_specs)
    queries = _queries(want_count, sums, means, variances, stds, mean_method, by_columns)
    if consistent is not None:
        if not want_count:
            raise ParameterError("`consistent` fits counts: add --count", parameter="consistent")
        margins = [Query("count", by=tuple(by_columns[:k])) for k in range(len(by_columns))]
        queries = [*margins, *queries]
    queries += [
        Query("quantiles", _value_spec(spec)[0], tuple(by_columns), quantiles=probs)
        for spec, probs in quantile_specs
    ]
    if not queries:
        raise ParameterError(
            "name at least one statistic: --count, --sum, --mean, --var, --std or --quantiles",
            parameter="statistic",
        )
    if dry_run:
        table = PrivateTable(schema=schema, engine=_NoEngine(label), ledger=Ledger(None, eps))
        _print_accuracy(table.accuracy(queries, eps, confidence=confidence), as_json)
        return
    total = None if total_epsilon is None else check_epsilon("total_epsilon", total_epsilon)
    table = PrivateTable(
        schema=schema,
        engine=make_engine(engine, source, schema, memory_limit=memory_limit, glob=glob),
        ledger=Ledger(None, eps),
        dataset=dataset,
    )
    table.validate(  # before any ledger file is created
        queries, eps, confidence=confidence, consistent=consistent or False
    )
    name = table.dataset
    book = Ledger(ledger, total if ledger is not None else (total or eps), dataset=name)
    table.ledger = book
    before = len(book.entries())
    try:
        results = _with_progress(
            table.engine,
            lambda: table.release(
                queries, eps, confidence=confidence, consistent=consistent or False
            ),
            as_json,
        )
    except KeyboardInterrupt:
        if len(book.entries()) > before:  # the boundary then says the spend was committed
            mark_spent(f"ledger {ledger or '(in memory)'}, dataset {name!r}")
        raise
    remaining = table.remaining
    if as_json:
        click.echo(
            json.dumps(
                {
                    "data": label,
                    "results": [
                        {**r.as_dict(), "flags": usefulness(r, schema)[0]} for r in results
                    ],
                    "epsilon_spent": _exact_text(eps),
                    "ledger": ledger,
                    "budget_remaining": _exact_text(remaining),
                }
            )
        )
        return
    _print_results(label, results, eps, ledger, remaining, schema)


def _with_progress(engine: Any, run: Callable[[], R], quiet: bool) -> R:
    """Run the release with a progress bar on stderr, in BYTES read (never rows: a row count is
    private), with percentage and ETA, when the engine reports ``progress() -> (bytes read,
    total bytes) | None``; else without one."""
    report = getattr(engine, "progress", None)
    if quiet or not callable(report):
        return run()
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeRemainingColumn,
    )

    columns = (
        TextColumn("reading"),
        BarColumn(),
        TaskProgressColumn(),
        DownloadColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )
    stop = threading.Event()
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("reading", total=None)

        def update() -> None:
            state = report()
            if state is not None:
                done, total = state
                bar.update(task, completed=done, total=total)

        def poll() -> None:
            while not stop.wait(0.1):
                update()

        update()
        thread = threading.Thread(target=poll, daemon=True)
        thread.start()
        try:
            return run()
        finally:
            stop.set()
            thread.join()
            update()


def _queries(
    want_count: bool,
    sums: Sequence[str],
    means: Sequence[str],
    variances: Sequence[str],
    stds: Sequence[str],
    mean_method: str,
    by: Sequence[str],
) -> list[Query]:
    b = tuple(by)
    queries = [Query("count", by=b)] if want_count else []
    queries += [Query("sum", _value_spec(s)[0], b) for s in sums]
    queries += [Query("mean", _value_spec(s)[0], b, method=mean_method) for s in means]  # type: ignore[arg-type]
    queries += [Query("variance", _value_spec(s)[0], b) for s in variances]
    queries += [Query("std", _value_spec(s)[0], b) for s in stds]
    return queries


def _quantiles_spec(spec: str) -> tuple[str, tuple[Fraction, ...]]:
    """``COL[:LO:HI]:P1,P2`` → (the value spec, the probabilities, exactly)."""
    head, sep, tail = spec.rpartition(":")
    try:
        probs = tuple(Fraction(p.strip()) for p in tail.split(","))
    except (ValueError, ZeroDivisionError):
        probs = ()
    if not sep or not head or not probs or any(not 0 < p < 1 for p in probs):
        raise ParameterError(
            "`--quantiles` must look like COLUMN:LOWER:UPPER:P1,P2,… with each P in (0, 1) "
            f"(e.g. income:0:500000:0.25,0.5,0.75), not {spec!r}"
        )
    return head, probs


def _demo(
    declaration: dict[str, Any], by: list[str]
) -> tuple[object, str, dict[str, Any], list[str]]:
    """The demo table, with its public facts declared (row count, keys of its columns)."""
    from snapdp.data.demo import DEMO_KEYS, DEMO_ROWS, demo_table

    declaration = dict(declaration)
    declared_keys = {s.partition("=")[0].strip() for s in declaration.get("keys", ())}
    extra = [
        f"{c}={','.join(DEMO_KEYS[c])}" for c in by if c in DEMO_KEYS and c not in declared_keys
    ]
    declaration["keys"] = (*declaration.get("keys", ()), *extra)
    if declaration.get("rows") is None:
        declaration["rows"] = DEMO_ROWS
    return demo_table(), "demo table (synthetic, 100,000 people)", declaration, by


def make_engine(
    name: str,
    source: object,
    schema: Schema,
    *,
    memory_limit: str | None = None,
    glob: bool = False,
) -> Any:
    """The engine ``name`` over ``source`` (imported lazily: Spark only when asked for).

    ``memory_limit`` bounds DuckDB's memory (it spills to a private temporary folder beyond it);
    Spark's memory is set in its own session. ``glob``: read a path as a file pattern."""
    module_name = "snapdp.data.engines.spark" if name == "spark" else "snapdp.data.engines.duckdb"
    class_name = "SparkEngine" if name == "spark" else "DuckDBEngine"
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        raise ParameterError(
            f"`--engine {name}` is not available in this installation", parameter="engine"
        ) from None
    if name == "spark":
        if memory_limit is not None:
            raise ParameterError(
                "`--memory-limit` is DuckDB's; set Spark's memory in its session "
                "(docs/data.md, 'Running on a cluster')",
                parameter="memory_limit",
            )
        if hasattr(source, "to_pandas"):  # an Arrow table (the demo)
            source = source.to_pandas()
        return getattr(module, class_name)(source, csv=schema.csv, glob=glob)
    if not isinstance(source, (str, Path)):
        return getattr(module, class_name)(source, csv=schema.csv, memory_limit=memory_limit)
    return getattr(module, class_name)(source, csv=schema.csv, glob=glob, memory_limit=memory_limit)


class _NoEngine:
    """Stands for the data in a dry run, which never reads it."""

    def __init__(self, label: str) -> None:
        self._label = label

    def column_names(self) -> list[str]:
        return []

    def aggregate(self, plan: object) -> Any:
        raise AssertionError("a dry run never reads the data")

    def describe(self) -> str:
        return self._label


# -- printing ---------------------------------------------------------------------------------
def plain_number(x: float, significant: int = 6) -> str:
    """``x`` in plain digits with thousands separators, never in scientific notation."""
    if not math.isfinite(x):
        return str(x)
    if x == 0:
        return "0"
    if float(x).is_integer() and abs(x) >= 10 ** (significant - 1):
        return f"{int(x):,}"
    places = max(0, significant - 1 - math.floor(math.log10(abs(x))))
    text = f"{x:,.{places}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _exact_text(x: Fraction) -> str:
    from snapdp.data.results import _fraction_text

    return _fraction_text(x)


def _key_text(k: object) -> str:
    if isinstance(k, Fraction):
        return plain_number(float(k))
    return str(k)


def usefulness(result: QueryResult, schema: Schema) -> tuple[list[dict[str, Any]], str | None]:
    """Flags and a plain summary for a result, from its public parameters only
    (:mod:`snapdp.usefulness`, docs/utility.md): the grid and δ flags of each part's mechanism;
    for a substitute mean (whose ± is fixed by public parameters), "almost pure noise" when the
    ± is at least half the declared value range and, at 95% confidence, the one-sentence
    summary. (A mechanism's own bounds come from the row bound, too generous to judge by.)"""
    from snapdp.mechanism import SnappingMechanism
    from snapdp.usefulness import flags as mechanism_flags
    from snapdp.usefulness import plain_summary

    alpha = float(1 - Fraction(repr(result.confidence)))
    found: dict[str, dict[str, Any]] = {}
    for part in result.mechanisms.values():
        mech = SnappingMechanism(
            Fraction(part["epsilon"]),
            Fraction(part["sensitivity"]),
            Fraction(part["lower"]),
            Fraction(part["upper"]),
        )
        for flag in mechanism_flags(mech, alpha):
            if flag.code != "almost_pure_noise":
                found.setdefault(flag.code, flag.as_dict())
    query = result.query
    summary = None
    # Only a ± fixed by public parameters is judged (a ratio mean's or a quantile's depends on
    # the noisy count: judging it would make the messages vary with the noise).
    if query.statistic == "mean" and query.method == "substitute" and result.rows:
        assert query.column is not None
        column = schema.column(query.column)
        if column.lower is not None and column.upper is not None:
            lo, hi = float(column.lower), float(column.upper)
            worst = result.rows[0].accuracy
            if 2 * worst >= hi - lo:
                found.setdefault(
                    "almost_pure_noise",
                    {
                        "code": "almost_pure_noise",
                        "message": "the ± is at least half the declared range: these values "
                        "are almost pure noise; a larger ε or narrower bounds would help",
                        "threshold": 1.0,
                        "value": 2 * worst / (hi - lo),
                    },
                )
            if result.confidence == 0.95:
                summary = plain_summary(_exact_text(result.epsilon), lo, hi, worst)
    return list(found.values()), summary


def _print_accuracy(statements: list[AccuracyStatement], as_json: bool) -> None:
    if as_json:
        doc = [
            {
                "query": s.label,
                "epsilon": _exact_text(s.epsilon),
                "confidence": s.confidence,
                "accuracy": s.accuracy,
                "accuracy_per_count": s.per_count,
                "accuracy_cap": s.cap,
                "rank_accuracy": s.rank,
                "notes": list(s.notes),
            }
            for s in statements
        ]
        click.echo(json.dumps({"dry_run": True, "queries": doc}))
        return
    click.echo("Dry run: nothing is read, drawn or spent.")
    for s in statements:
        click.echo(
            f"{s.label:<28} ε = {_exact_text(s.epsilon):<10} {s.describe()} "
            f"(confidence {s.confidence:g})"
        )


def _print_results(
    label: str,
    results: list[QueryResult],
    eps: Fraction,
    ledger: str | None,
    remaining: Fraction,
    schema: Schema,
) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"Private release from {label}")
    for r in results:
        shown = Table(title=f"{r.label}, ε = {_exact_text(r.epsilon)}")
        for k in r.key_columns:
            shown.add_column(k)
        quantiles = r.query.statistic == "quantiles"
        if quantiles:
            shown.add_column("p", justify="right")
        shown.add_column("value", justify="right")
        shown.add_column(f"± ({r.confidence:.0%})", justify="right")
        for row in r.rows:
            shown.add_row(
                *[_key_text(k) for k in row.keys],
                *([plain_number(float(row.quantile or 0))] if quantiles else []),
                plain_number(row.value),
                "±" + plain_number(row.accuracy, 4),
            )
        console.print(shown)
        for note in r.notes:
            console.print(f"  · {note}")
        flags, summary = usefulness(r, schema)
        for flag in flags:
            console.print(f"  ⚑ {flag['message']}")
        if summary:
            console.print(f"  {summary}")
    console.print(
        f"Each value is within its ± of the true statistic (of the declared, bounded table) with "
        f"probability ≥ {results[0].confidence:g}."
    )
    where = f"ledger {ledger}" if ledger else "no ledger (one-off budget)"
    console.print(f"Spent ε = {_exact_text(eps)}; {where}; remaining ε = {_exact_text(remaining)}.")
