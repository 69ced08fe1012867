"""The statistics of a release: from a query and the declaration to mechanisms, accuracy and
results (DESIGN §4, §8.3–8.4; docs/data.md, "Statistics").

A query compiles (:func:`compile_query`) into *parts*: exact integer aggregates per cell, each
released by one snapping mechanism per cell (or, for quantiles by the exponential mechanism, one
exact draw per cell), with a share of the query's ε. What the parts are, how the accuracy is
stated and how the released values are read back depends on the statistic's *kind*, one registry
(:mod:`snapdp.data.statistics.kinds`: :mod:`~snapdp.data.statistics.kinds.moments` for count,
sum, mean, variance and std, :mod:`~snapdp.data.statistics.kinds.quantiles` for quantiles); the
steps every kind shares are in :mod:`snapdp.data.statistics.pipeline`, the values they pass in
:mod:`snapdp.data.statistics.types`.

(q: a value in quanta, see :mod:`snapdp.data.statistics.sensitivity`; N: the public row bound;
r: the rows one unit can add to a cell, see :mod:`snapdp.data.statistics.bounding`.)

**Accuracy before spending.** Count, sum and the substitute mean have a ± that depends on the
public parameters only. A ratio mean's ± is (a_Σ + M·a_n)/ñ and a variance's is
(a_Σw² + 2W·a_Σw + 3W²·a_n)/(4ñ) (union bound over the parts, each at α/parts), with ñ the
noisy count of the cell: :class:`AccuracyStatement` states the numerator before anything is spent
and the result states the ± once ñ is known (post-processing). A std's ± is the square root of its
variance's (|√a − √b| ≤ √|a − b|).

Callers use this package's names through the package (``statistics.compile_query(…)``), so that
one compilation per process is shared and a test can count or replace a step here.
"""

from __future__ import annotations

import functools
from fractions import Fraction

from msgspec.structs import replace

from snapdp.data.model.observed import with_placeholders
from snapdp.data.model.predicate import check_predicate, columns_of
from snapdp.data.model.query import Query
from snapdp.data.model.schema import Schema
from snapdp.data.statistics.pipeline import (
    accuracy_of,
    assemble,
    calibrate,
    check_composition,
    exact_inputs,
    mechanisms,
    noisy_values,
    notes_for,
)
from snapdp.data.statistics.pipeline import compile_parts as _compile_parts
from snapdp.data.statistics.types import (
    AccuracyStatement,
    Compiled,
    Noise,
    Part,
    key_label,
)
from snapdp.errors import ParameterError

__all__ = [
    "AccuracyStatement",
    "Compiled",
    "Noise",
    "Part",
    "accuracy_of",
    "assemble",
    "calibrate",
    "check_composition",
    "compile_fresh",
    "compile_query",
    "exact_inputs",
    "key_label",
    "mechanisms",
    "noisy_values",
    "notes_for",
]


def compile_query(query: Query, schema: Schema, epsilon: Fraction) -> Compiled:
    """Check ``query`` against ``schema`` and work out its parts (no data is read). A row filter
    changes no part: it only removes rows, each on its own, before contribution bounding."""
    if not isinstance(query, Query):
        raise ParameterError(f"a query must be a Query, not {query!r}", parameter="queries")
    schema = with_placeholders(query, schema)  # groups from the data: a public domain
    try:
        return _compiled(query, schema, Fraction(epsilon))
    except TypeError:  # an unhashable part (never in a valid declaration): compile afresh
        return _compile(query, schema, epsilon)


def compile_fresh(query: Query, schema: Schema, epsilon: Fraction) -> Compiled:
    """:func:`compile_query` without the process cache: for a schema holding keys read from the
    data (groups from the data), which must not stay in memory after the release."""
    return _compile(query, schema, Fraction(epsilon))


@functools.lru_cache(maxsize=4096)
def _compiled(query: Query, schema: Schema, epsilon: Fraction) -> Compiled:
    """:func:`compile_query` of these public parameters, once per process: the planner's
    preview, its refusals and the release session share one compilation (a pure function of
    frozen values; an error is raised again on every call, never cached). ``_compile`` is looked
    up here at call time."""
    return _compile(query, schema, epsilon)


def _compile(query: Query, schema: Schema, epsilon: Fraction) -> Compiled:
    compiled = _compile_parts(query, schema, epsilon)
    if query.where is None:
        return compiled
    where = check_predicate(query.where, schema)
    used = tuple(schema.column(name) for name in columns_of(where))
    return replace(compiled, where=where, where_columns=used)
