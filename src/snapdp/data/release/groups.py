"""Groups from the data: the release session's private key selection (docs/sql.md, "Groups
from the data").

A query grouping by a declared column without keys or bins is compiled on a placeholder domain of
public size (:mod:`snapdp.data.model.observed`): its parts, noise and ± depend on the declaration
only. At release time :func:`select` asks the engine for the distinct key tuples of the grouping
columns the rows hold, orders them by a keyed hash of the whole tuple alone (a public salt from
the release's random source, so two engines agree for one seed), makes them the query's cells
(``Compiled.joint``: never the product of each column's keys), releases a noisy COUNT per
tuple — the query's own COUNT when one of the queries of that grouping is a count (its ε and ±
as stated), otherwise an extra count with half the first query's ε — and keeps the keys whose
released count reaches the threshold of
:func:`~snapdp.data.statistics.selection.key_selection` at the query's δ. The other statistics are
released for the kept keys only, and nothing about any other key is returned, raised or printed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Sequence
from fractions import Fraction
from typing import Any

from msgspec import Struct
from msgspec.structs import replace

from snapdp.data import statistics
from snapdp.data.engines.observed import observed_keys
from snapdp.data.model.keys import Key
from snapdp.data.model.observed import (
    DATA_KEY_TYPES,
    placeholder_size,
    undeclared,
    with_keys,
    with_placeholders,
)
from snapdp.data.model.query import Query
from snapdp.data.model.schema import Column, Schema
from snapdp.data.output.results import QueryResult
from snapdp.data.release.unit_keys import bounded_keys
from snapdp.data.statistics import Compiled, Noise
from snapdp.data.statistics.selection import KeySelection, key_selection
from snapdp.errors import ParameterError
from snapdp.mechanism import SnappingMechanism

__all__ = [
    "Selected",
    "Selection",
    "empty",
    "finish",
    "plan_selections",
    "refuse_without_delta",
    "select",
]

_HOW = "docs/sql.md, 'Groups from the data'"


class Selection(Struct, frozen=True):
    """One grouping whose keys come from the data: the steps it serves, its columns (every
    grouping column, declared keys included), the step whose COUNT selects (None: an extra
    count), that count compiled on the placeholder domain and its noise, and the selection."""

    members: tuple[int, ...]
    columns: tuple[str, ...]
    counter: int | None
    count: Compiled
    noise: tuple[Noise, ...]
    rule: KeySelection

    @property
    def extra_epsilon(self) -> Fraction:
        """The ε of an extra count (0 when a query's own COUNT selects)."""
        return Fraction(0) if self.counter is not None else self.count.epsilon

    @property
    def delta(self) -> Fraction:
        """The selection's δ: the threshold's, plus an extra count's own snapping δ (a query's own
        COUNT states its snapping δ itself)."""
        if self.counter is not None:
            return self.rule.delta
        own = sum((n.cells * Fraction(_snapping_delta(n)) for n in self.noise), Fraction(0))
        return self.rule.delta + own


def _snapping_delta(n: Noise) -> float:
    return float(
        SnappingMechanism(n.epsilon, n.sensitivity, n.part.lower, n.part.upper).privacy.delta
    )


def refuse_without_delta(query: Query, schema: Schema, delta: Fraction | None) -> None:
    """The one-line refusals of a grouping from the data, before any data is read."""
    names = undeclared(query, schema)
    if not names:
        return
    name = names[0]
    if schema.column(name).type not in DATA_KEY_TYPES:
        return  # the compiler refuses it: it needs declared keys or bins
    if delta is None:
        raise ParameterError(
            f"GROUP BY `{name}`: the column has no declared keys, so its groups would come from "
            f"the data; add a δ (--delta 1e-6, OPTIONS(delta = 1e-6) or `delta` in the plan) to "
            f"choose them privately, or declare its keys or bins ({_HOW})",
            parameter="by",
        )
    if query.bins:
        raise ParameterError(
            f"GROUP BY `{name}`: groups from the data cannot be combined with bins in one query "
            f"({_HOW})",
            parameter="bins",
        )
    declared = {c.name: c for c in schema.columns}
    binned = [c for c in query.by if c in declared and declared[c].bins is not None]
    if binned:
        # The groups found in the data would hold the binned column's raw values, not its bins
        # (review, 2026-11-27): refused until the distinct-keys query reads bins.
        raise ParameterError(
            f"GROUP BY `{name}` and `{binned[0]}`: groups from the data cannot be combined with "
            f"a column grouped by declared bins in one query; declare the keys of `{name}` or "
            f"group by `{binned[0]}` in another query ({_HOW})",
            parameter="bins",
        )
    if schema.privacy_unit is not None and placeholder_size(schema) == 0:
        # A unit may then hold any number of keys, and the selection's δ grows with that number.
        raise ParameterError(
            f"GROUP BY `{name}`: groups from the data with the privacy unit "
            f"`{schema.privacy_unit}` need a bound on the groups one unit reaches; declare "
            f"max_groups_per_unit (L0) or max_rows_per_unit (k) (docs/data.md, 'Privacy units')",
            parameter="max_groups_per_unit",
        )


def plan_selections(
    schema: Schema,
    queries: Sequence[Query],
    epsilons: Sequence[Fraction],
    deltas: Sequence[Fraction | None],
) -> tuple[list[Fraction], list[Selection]]:
    """The selections of a release (no data read): the queries' ε after an extra count took
    its share, and one :class:`Selection` per (grouping, row filter) with data keys."""
    epsilons = list(epsilons)
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, (q, d) in enumerate(zip(queries, deltas, strict=True)):
        refuse_without_delta(q, schema, d)
        if undeclared(q, schema):
            groups.setdefault((q.by, q.where), []).append(i)
    out = []
    for (by, where), members in groups.items():
        counter = next((i for i in members if queries[i].statistic == "count"), None)
        if counter is not None:
            count_q, eps = queries[counter], epsilons[counter]
        else:
            first = members[0]
            eps = epsilons[first] / 2
            epsilons[first] -= eps
            count_q = Query("count", by=by, where=where)
        delta = deltas[members[0]]  # the first query of the grouping states its δ
        assert delta is not None
        compiled = statistics.compile_query(count_q, schema, eps)
        noise = statistics.calibrate(compiled)
        rule = key_selection(
            noise[0],
            delta=delta,
            max_groups=compiled.reach.cells,
            rows_per_key=int(compiled.reach.per_cell),
        )
        out.append(Selection(tuple(members), tuple(by), counter, compiled, noise, rule))
    return epsilons, out


class Selected(Struct):
    """What :func:`select` found: per step of a selection, its recompiled query on the kept
    keys (None: no key kept) and the kept key tuples; the counters' results."""

    compiled: dict[int, Compiled | None]
    shown: dict[int, frozenset[tuple[Key, ...]]]
    results: dict[int, QueryResult]
    notes: dict[int, str]


def select(
    selections: Sequence[Selection],
    prepared_compiled: Sequence[Compiled],
    schema: Schema,
    release: Any,
    engine: Any,
    salt: str,
) -> Selected:
    """Run each selection: the observed keys, their noisy counts, the kept keys; then each
    member step recompiled for the kept keys. ``release(schema, compiled, noise)`` releases
    one compiled count (the session's core, with its generator and progress)."""
    out = Selected({}, {}, {}, {})
    for s in selections:
        found = _candidates(engine, s, schema, salt)
        # Units: only a key that keeps a row after bounding may be shown. The count is bounded
        # on every key found, exactly as that pass was: bounding it again on the candidates
        # alone would let a unit's top keys move when another unit makes a key a candidate
        # (review, 2026-11-27: L0 and k together).
        keys = bounded_keys(engine, schema, s.count.query, s.columns, found, salt)
        shown: list[tuple[Key, ...]] = []
        counted: QueryResult | None = None
        if found:
            observed = _domain(schema, s.columns, found)
            count = _recompiled(s.count, observed, found)
        else:  # no key: the same release on the placeholder domain, so that the result has the
            # notes and mechanisms of any other (its rows are dropped: no key is kept)
            observed, count = with_placeholders(s.count.query, schema), s.count
        counted = release(observed, count, s.noise)
        value = {tuple(r.keys): float(r.value) for r in counted.rows}
        shown = [k for k in keys if k in value and s.rule.shown(value[k])]
        kept = frozenset(shown)
        note = f"{s.rule.describe()}; {_HOW}"
        for i in s.members:
            out.shown[i] = kept
            out.notes[i] = note
            if i == s.counter and counted is not None:
                out.results[i] = counted
                continue
            if not shown:
                out.compiled[i] = None
                continue
            cells = sorted(shown)
            domain = _domain(schema, s.columns, cells)
            out.compiled[i] = _recompiled(prepared_compiled[i], domain, cells)
    return out


def _domain(schema: Schema, columns: Sequence[str], keys: Sequence[tuple[Key, ...]]) -> Schema:
    """``schema`` with the data-keyed ``columns`` given the projections of ``keys``. A failure
    names no key: its message depends on the data, so only the rule is said."""
    try:
        return with_keys(schema, *_data_domain(schema, columns, keys))
    except ParameterError:
        raise ParameterError(
            f"the groups found in the data could not be used as keys ({_HOW}); declare the "
            "keys of the GROUP BY columns",
            parameter="keys",
        ) from None


def finish(
    result: QueryResult,
    kept: frozenset[tuple[Key, ...]],
    first: Selection | None,
    note: str,
    data_columns: Collection[str] = (),
) -> QueryResult:
    """A member's released result: only the kept keys, the selection's rule in its notes; the
    selection's δ (and an extra count's ε) on its first member. The grouping note of each of
    ``data_columns`` (keys from the data: public, from the declaration) says so, in place of
    the declared keys' "rows whose … is not a declared key are dropped"."""
    r = _noted(_only(result, kept), note)
    if data_columns:
        r = replace(r, notes=tuple(_data_keyed(n, data_columns) for n in r.notes))
    if first is None:
        return r
    if first.extra_epsilon:
        r = _noted(r, f"{_text(first.extra_epsilon)} of its ε counted the groups to choose them")
    return replace(r, delta=r.delta + float(first.delta))


def _text(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


def empty(compiled: Compiled, delta: float, confidence: float) -> QueryResult:
    """The result of a query none of whose keys was kept: no rows (public parameters only)."""
    return QueryResult(
        compiled.query, tuple(compiled.query.by), (), compiled.epsilon, delta, confidence
    )


def _only(result: QueryResult, kept: frozenset[tuple[Key, ...]]) -> QueryResult:
    """The rows of the kept keys, in the keys' order (post-processing of public choices)."""
    rows = [r for r in result.rows if tuple(r.keys) in kept]
    return replace(result, rows=tuple(sorted(rows, key=lambda r: tuple(r.keys))))


def _data_keyed(note: str, columns: Collection[str]) -> str:
    for c in columns:
        tail = f"; rows whose {c} is not a declared key are dropped"
        if note.startswith(f"{c}: cells that are not ") and note.endswith(tail):
            return note.removesuffix(tail) + "; groups from the data"
    return note


def _noted(result: QueryResult, note: str) -> QueryResult:
    return replace(result, notes=(*result.notes, note))


def _recompiled(
    placeholder: Compiled, schema: Schema, cells: Sequence[tuple[Key, ...]]
) -> Compiled:
    """``placeholder``'s query on the key tuples ``cells`` (its whole grouping, in this order:
    never the product of each column's keys), with the placeholder's reach and parts (so its
    noise is the one calibrated before any data was read). A quantile query whose method was
    chosen automatically keeps the placeholder's choice: on the kept keys the comparison could
    come out the other way, and the parts are the placeholder's."""
    query = placeholder.query
    if query.statistic == "quantiles" and query.method not in ("tree", "exponential"):
        fixed = replace(query, method="tree" if placeholder.grid is None else "exponential")
        c = replace(statistics.compile_fresh(fixed, schema, placeholder.epsilon), query=query)
    else:
        c = statistics.compile_fresh(query, schema, placeholder.epsilon)
    return replace(c, reach=placeholder.reach, parts=placeholder.parts, joint=tuple(cells))


def _candidates(engine: Any, s: Selection, schema: Schema, salt: str) -> list[tuple[Key, ...]]:
    """The observed key tuples (declared keys kept only when declared), in keyed-hash order."""
    cols = [schema.column(n) for n in s.columns]
    try:
        rows = observed_keys(engine, cols, s.count.where, s.count.where_columns)
    except ParameterError:
        raise
    except Exception as exc:  # its text may quote a value read from the data: name the class only
        raise ParameterError(
            f"the groups found in the data could not be read ({type(exc).__name__}; {_HOW})",
            parameter="keys",
        ) from None
    declared = [_declared(c) for c in cols]
    ok: set[tuple[Key, ...]] = set()
    for t in rows:
        keyed = [v if d is None else d.get(v) for d, v in zip(declared, t, strict=True)]
        if all(v is not None for v in keyed):
            ok.add(tuple(v for v in keyed if v is not None))
    return sorted(ok, key=lambda t: _rank(salt, t))


def _declared(column: Column) -> dict[Any, Key] | None:
    """A declared column's keys by the value an engine returns for them (a decimal's nearest
    double; the first key of a double); None for a column whose keys come from the data."""
    if column.keys is None:
        return None
    out: dict[Any, Key] = {}
    for k in column.keys:
        out.setdefault(float(k) if column.type == "decimal" else k, k)  # type: ignore[arg-type]
    return out


def _rank(salt: str, key: tuple[Key, ...]) -> bytes:
    """The keyed hash of a key tuple: a function of the key and the salt only."""
    text = json.dumps([[type(v).__name__, str(v)] for v in key], ensure_ascii=False)
    return hashlib.blake2b(text.encode(), key=salt.encode()[:64], digest_size=16).digest()


def _data_domain(
    schema: Schema, columns: Sequence[str], keys: Sequence[tuple[Key, ...]]
) -> tuple[list[str], list[list[Key]]]:
    """The data-keyed columns and each one's keys (the projections of ``keys``, in order)."""
    names, domains = [], []
    for j, n in enumerate(columns):
        if schema.column(n).is_grouping:
            continue
        names.append(n)
        domains.append(list(dict.fromkeys(k[j] for k in keys)))
    return names, domains
