"""The data-release API: private statistics over a declared table (DESIGN §8; docs/data.md).

>>> from snapdp.data import PrivateTable, Query, Schema          # doctest: +SKIP
>>> t = PrivateTable("PUMS.csv", schema, total_epsilon=1)          # doctest: +SKIP
>>> t.accuracy([Query("mean", "income")], "0.5")                    # doctest: +SKIP
>>> t.release([Query("count", by=("sex",))], "0.5")                 # doctest: +SKIP

The order of a release, and why nothing in it depends on the data but the noise (DESIGN §8.1):

1. validate the declaration, the queries and ε (errors here name the parameter and are about
   them only);
2. check the budget (refused: nothing drawn, nothing recorded);
3. draw a fresh 128-bit hash key from the release's random source (it keys the contribution
   bounding's ranks);
4. the engine aggregates (exact integers; it raises only when the source cannot be read as a
   whole);
5. the noise (one mechanism per part, see :mod:`snapdp.data.statistics`; steps 4 and 5 are the
   release core, :mod:`snapdp.data.release.core`, which plan runs share);
6. commit the spend to the ledger, one entry for the whole call (all or nothing);
7. return the results (post-processing of the noise).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from snapdp._validation import check_epsilon
from snapdp.data.budget.datasets import resolve_dataset
from snapdp.data.budget.ledger import Ledger
from snapdp.data.engines import factory
from snapdp.data.engines.base import Engine
from snapdp.data.model.query import Query
from snapdp.data.model.schema import Schema
from snapdp.data.model.workload import _confidence, check_delta, check_unit
from snapdp.data.output.results import QueryResult, Results
from snapdp.data.release import session
from snapdp.data.release.groups import refuse_without_delta
from snapdp.data.statistics import (
    AccuracyStatement,
    Compiled,
    accuracy_of,
    calibrate,
    compile_query,
)
from snapdp.data.statistics.refusals import check_release
from snapdp.errors import ParameterError

__all__ = ["PrivateTable", "split_epsilon"]


class PrivateTable:
    """A table behind a privacy budget, described by a public :class:`Schema`.

    ``data``: a CSV/Parquet path, a pandas or polars DataFrame, a DuckDB relation or an Arrow
    table (DuckDB engine; polars and DuckDB read into Arrow first, docs/notebooks.md), or a Spark
    DataFrame (Spark engine); or pass ``engine`` (any :class:`~snapdp.data.engines.base.Engine`).
    ``schema``: the declaration (columns, privacy unit, contribution bounds, public row facts);
    None declares nothing, which suits counts only. ``ledger`` (a path, a :class:`Ledger`, or None
    for an in-memory one) and ``total_epsilon``: the budget. ``dataset``: the name this data's
    budget is kept under (default: the source's resolved path; required for an in-memory
    source, such as a DataFrame, with a ledger file; a :class:`Ledger` passed in keeps its own).
    ``rng``: a seeded numpy Generator makes the hash key and the noise reproducible and NOT
    private (tests only). ``total_delta``: the dataset's δ budget (the owner's; docs/plans.md,
    "δ"), which groups from the data spend from a ledger file.
    """

    def __init__(
        self,
        data: object = None,
        schema: Schema | None = None,
        *,
        ledger: Ledger | str | Path | None = None,
        total_epsilon: object = None,
        dataset: str | None = None,
        engine: Engine | None = None,
        rng: np.random.Generator | None = None,
        total_delta: object = None,
    ) -> None:
        if schema is None:
            schema = Schema()
        if not isinstance(schema, Schema):
            raise ParameterError(f"`schema` must be a Schema, not {schema!r}", parameter="schema")
        if rng is not None and not isinstance(rng, np.random.Generator):
            raise ParameterError(
                f"`rng` must be None or a numpy.random.Generator, not {rng!r}", parameter="rng"
            )
        self.schema = schema
        self.engine: Engine = engine if engine is not None else factory.default_engine(data, schema)
        if schema.privacy_unit is not None:
            check_unit(schema)
        name = resolve_dataset(
            dataset,
            data,
            self.engine.describe(),
            ledger_file=ledger is not None and not isinstance(ledger, Ledger),
        )
        self.ledger = (
            ledger
            if isinstance(ledger, Ledger)
            else Ledger(ledger, total_epsilon, dataset=name, total_delta=total_delta)
        )
        self.dataset = name
        self._rng = rng

    # -- budget ------------------------------------------------------------------------------
    @property
    def spent(self) -> Fraction:
        """ε spent so far on this ledger (by every process), exactly."""
        return Fraction(self.ledger.spent())

    @property
    def remaining(self) -> Fraction:
        """ε left on this ledger, exactly."""
        return Fraction(self.ledger.remaining())

    # -- shortcuts ---------------------------------------------------------------------------
    def count(self, epsilon: object, *, by: Sequence[str] = (), **kw: Any) -> QueryResult:
        """A private row count (grouped by declared columns ``by``)."""
        return self.release([Query("count", by=tuple(by))], epsilon, **kw)[0]

    def sum(
        self, column: str, epsilon: object, *, by: Sequence[str] = (), **kw: Any
    ) -> QueryResult:
        """A private sum of a declared, bounded column."""
        return self.release([Query("sum", column, tuple(by))], epsilon, **kw)[0]

    def mean(
        self, column: str, epsilon: object, *, by: Sequence[str] = (), method: str = "ratio",
        **kw: Any,
    ) -> QueryResult:  # fmt: skip
        """A private mean of a declared, bounded column (``method``: "ratio" or "substitute")."""
        q = Query("mean", column, tuple(by), method=method)  # type: ignore[arg-type]
        return self.release([q], epsilon, **kw)[0]

    def variance(
        self, column: str, epsilon: object, *, by: Sequence[str] = (), **kw: Any
    ) -> QueryResult:
        """A private variance of a declared, bounded column."""
        return self.release([Query("variance", column, tuple(by))], epsilon, **kw)[0]

    def std(
        self, column: str, epsilon: object, *, by: Sequence[str] = (), **kw: Any
    ) -> QueryResult:
        """A private standard deviation of a declared, bounded column."""
        return self.release([Query("std", column, tuple(by))], epsilon, **kw)[0]

    # -- accuracy before spending ------------------------------------------------------------
    def accuracy(
        self,
        queries: Sequence[Query] | Query,
        epsilon: object,
        *,
        confidence: float = 0.95,
        split: Sequence[object] | None = None,
        delta: object = None,
    ) -> list[AccuracyStatement]:
        """What :meth:`release` would state for these queries; spends nothing, reads nothing."""
        compiled, _, conf, alpha = self._compile(queries, epsilon, confidence, split, delta)
        return [accuracy_of(c, calibrate(c), conf, alpha) for c in compiled]

    def validate(
        self,
        queries: Sequence[Query] | Query,
        epsilon: object,
        *,
        confidence: float = 0.95,
        split: Sequence[object] | None = None,
        consistent: bool | str = False,
    ) -> None:
        """Raise the ParameterError :meth:`release` would raise for these arguments before it
        checks the budget (the declaration, the queries, ε, the source's column names, the
        consistent families); reads no values, spends nothing."""
        self.prepare(queries, epsilon, confidence=confidence, split=split, consistent=consistent)

    def prepare(
        self,
        queries: Sequence[Query] | Query,
        epsilon: object,
        *,
        confidence: float = 0.95,
        split: Sequence[object] | None = None,
        consistent: bool | str = False,
        delta: object = None,
    ) -> session.Prepared:
        """The first step of :meth:`release` (:func:`snapdp.data.release.session.prepare`): every
        refusal that needs no data value; reads no values, opens no ledger, spends nothing."""
        qs = _queries(queries)
        conf, _ = _confidence(confidence)
        shares = split_epsilon(epsilon, len(qs), split)
        d = None if delta is None else check_delta("delta", delta)
        steps = [session.Step(q, e, delta=d) for q, e in zip(qs, shares, strict=True)]
        return session.prepare(
            self.schema, steps, self.engine, confidence=conf, consistent=consistent
        )

    # -- release -----------------------------------------------------------------------------
    def release(
        self,
        queries: Sequence[Query] | Query | session.Prepared,
        epsilon: object = None,
        *,
        confidence: float = 0.95,
        split: Sequence[object] | None = None,
        consistent: bool | str = False,
        delta: object = None,
    ) -> Results:
        """Release ``queries``. ``epsilon``: a total, split equally (or by ``split`` weights), or
        a list of exact per-query ε. Spends their sum on the ledger, in one entry, committed
        before anything is returned; refuses, recording nothing, if the budget cannot pay.
        ``consistent``: True (or "nonnegative", "integer") fits nested counts jointly so that
        margins add up (post-processing; docs/data.md, "Tables that add up"). ``queries`` may
        also be what :meth:`prepare` returned (then nothing is compiled again). Returns a list
        of results, one per query (a :class:`~snapdp.data.output.results.Results`), with
        ``to_pandas()``, ``to_polars()`` and ``to_arrow()`` (docs/notebooks.md). ``delta``: lets
        a query group by a column without declared keys, choosing its groups from the data
        privately (docs/sql.md, "Groups from the data")."""
        if isinstance(queries, session.Prepared):
            prepared = queries
        else:
            prepared = self.prepare(
                queries,
                epsilon,
                confidence=confidence,
                split=split,
                consistent=consistent,
                delta=delta,
            )
        results, _ = session.run(prepared, self.engine, self.ledger, self.dataset, rng=self._rng)
        return Results(results)

    # -- internals ---------------------------------------------------------------------------
    def _compile(
        self,
        queries: Sequence[Query] | Query,
        epsilon: object,
        confidence: float,
        split: Sequence[object] | None,
        delta: object = None,
    ) -> tuple[list[Compiled], Fraction, float, float]:
        qs = _queries(queries)
        d = None if delta is None else check_delta("delta", delta)
        for q in qs:  # groups from the data need a δ, refused here as in a release
            refuse_without_delta(q, self.schema, d)
        conf, alpha = _confidence(confidence)
        shares = split_epsilon(epsilon, len(qs), split)
        compiled = [compile_query(q, self.schema, e) for q, e in zip(qs, shares, strict=True)]
        for c in compiled:  # parameter-only refusals, the same in every path (docs/plans.md)
            check_release(c, calibrate(c))
        return compiled, sum(shares, Fraction(0)), conf, alpha


def _queries(queries: Sequence[Query] | Query) -> list[Query]:
    qs = [queries] if isinstance(queries, Query) else list(queries)
    if not qs:
        raise ParameterError("`queries` must hold at least one query", parameter="queries")
    return qs


def split_epsilon(epsilon: object, n: int, split: Sequence[object] | None = None) -> list[Fraction]:
    """Per-query exact ε: a list of n per-query values, or a total split equally or in
    proportion to the ``split`` weights."""
    if isinstance(epsilon, (list, tuple)):
        if split is not None:
            raise ParameterError(
                "give per-query ε or a total with `split`, not both", parameter="split"
            )
        if len(epsilon) != n:
            raise ParameterError(
                f"`epsilon` lists {len(epsilon)} value(s) for {n} queries", parameter="epsilon"
            )
        return [check_epsilon("epsilon", e) for e in epsilon]
    total = check_epsilon("epsilon", epsilon)
    if split is None:
        return [total / n] * n
    if len(split) != n:
        raise ParameterError(
            f"`split` must have one weight per query ({n}), not {len(split)}", parameter="split"
        )
    weights = [check_epsilon("split", w) for w in split]
    return [total * w / sum(weights, Fraction(0)) for w in weights]
