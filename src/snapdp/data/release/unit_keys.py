"""Groups from the data under a privacy unit other than the row (docs/data.md, "Keys nobody
declared", "Privacy units").

Two things make the selection of :mod:`snapdp.data.release.groups` sound when a unit may hold
many rows:

* the contribution bounding ranks a unit's cells by the values of their keys read from the
  data, not by their index in the domain found in the data (:func:`by_value`, the engines'
  :func:`~snapdp.data.engines.base.cell_lanes`): one unit's new key shifts every later index,
  but moves no other unit's rank, so every other unit keeps the same rows;
* a key is a candidate only when a row of it survives that bounding (:func:`bounded_keys`):
  a key every row of which was bounded away has a count of 0 yet would be shown with the
  probability of a noisy 0, and one unit can hold any number of such keys. After bounding a
  unit holds at most L0 (or k) keys, each with at most L∞ (or k) rows: the selection's δ. The
  selection's count is released from that same bounding, over every key found, and only the
  candidates among its keys may be shown. (Bounding the count again on the candidates alone is
  not stable: with L0 and k together, a unit's key emptied by k leaves its top L0 on one table
  and not on its neighbour, so another unit's kept rows move; review of 2026-11-27.)
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from fractions import Fraction
from typing import Any

from msgspec.structs import replace

from snapdp.data import statistics
from snapdp.data.model.keys import Key
from snapdp.data.model.observed import undeclared, with_keys
from snapdp.data.model.query import Query
from snapdp.data.model.schema import Schema
from snapdp.data.release.core import aggregate_plans
from snapdp.errors import ParameterError

__all__ = ["bounded_keys", "by_value"]

_HOW = "docs/sql.md, 'Groups from the data'"


def by_value(schema: Schema, queries: Collection[Query]) -> frozenset[str]:
    """The grouping columns of ``queries`` whose keys come from the data (public: from the
    declaration and the queries only)."""
    return frozenset(n for q in queries for n in undeclared(q, schema))


def bounded_keys(
    engine: Any,
    schema: Schema,
    query: Query,
    columns: Sequence[str],
    keys: Sequence[tuple[Key, ...]],
    hash_key: str,
) -> list[tuple[Key, ...]]:
    """The key tuples of ``keys`` (over ``columns``, in their order) that keep at least one row
    after the contribution bounding of ``query`` under ``hash_key``; ``keys`` as they are when
    each row is its own unit (then every key found keeps its rows). A failure names no key."""
    if schema.privacy_unit is None or not keys:
        return list(keys)
    names = undeclared(query, schema)
    try:
        domains = [list(dict.fromkeys(t[columns.index(n)] for t in keys)) for n in names]
        fresh = statistics.compile_fresh(query, with_keys(schema, names, domains), Fraction(1))
        compiled = replace(fresh, joint=tuple(keys))  # the cells: the tuples, in this order
        ((plan, _, _),) = aggregate_plans(schema, [compiled], hash_key, by_value=names)
        rows = engine.aggregate(plan).rows
    except Exception as exc:  # its text may quote a value read from the data: the class only
        raise ParameterError(
            f"the groups found in the data could not be bounded ({type(exc).__name__}; {_HOW})",
            parameter="keys",
        ) from None
    return [t for t, n in zip(keys, rows, strict=True) if n > 0]
