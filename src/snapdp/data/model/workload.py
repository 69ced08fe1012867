"""The workload: the one object every front end produces (docs/sql.md, "One workload").

CLI flags, TOML plan files, SQL text and the page's JSON each produce a :class:`Workload` and
nothing else; the planner, the statistics compiler, the engines, the ledger and the writers read
only it. A workload is

* a :class:`Declaration`: the public :class:`~snapdp.data.model.schema.Schema`, the source, the
  total budget (``total_epsilon``), the release's ``confidence``, the reference ``group_size`` of
  the ± of ratio statistics (if declared) and the ``dataset`` name the budget is kept under; and
* a tuple of :class:`PlannedQuery`: each a :class:`~snapdp.data.model.query.Query` (statistic,
  column, groupings, bins, quantiles, row filter) with either a fixed ε, a target ± or a weight.

This module also holds the checks every front end shares (a consistency mode, a confidence, the
privacy unit's type, a positive number). It imports nothing of the planner: a front end never
computes a sensitivity or an ε; ``Plan.from_workload`` (:mod:`snapdp.data.planner.plan`) hands a
workload to the planner. :func:`~snapdp.data.model.codec.workload_to_dict` /
:func:`~snapdp.data.model.codec.workload_from_dict` give a JSON form that round-trips exactly
(every rational as exact decimal text, or ``p/q``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

from msgspec import Struct, field
from msgspec.structs import force_setattr, replace

from snapdp._rational import shown_number
from snapdp._validation import check_count, check_epsilon, exact_value
from snapdp.data.model.query import Query
from snapdp.data.model.schema import Schema
from snapdp.errors import ParameterError

__all__ = [
    "DEFAULT_CONFIDENCE",
    "MODES",
    "Declaration",
    "PlannedQuery",
    "Workload",
    "check_delta",
    "check_mode",
    "check_unit",
    "resolved_source",
    "table_name",
    "with_group_size",
]


DEFAULT_CONFIDENCE = 0.95


class PlannedQuery(Struct, frozen=True):
    """One query of a plan and how it gets its ε: exactly one of ``epsilon`` (fixed),
    ``accuracy`` (a target ± at ``confidence``) and ``weight`` (a share of what is left).
    ``group_size``: a public lower bound on the rows of its groups, which its ± is stated for
    (means, variances, std, quantiles); without one, a target query is released in two phases
    (docs/plans.md, "Two-phase targets")."""

    query: Query
    epsilon: Fraction | None = None
    accuracy: Fraction | None = None
    weight: Fraction | None = None
    confidence: float = DEFAULT_CONFIDENCE
    group_size: int | None = None
    delta: Fraction | None = None  # groups from the data (docs/sql.md, "Groups from the data")

    def __post_init__(self) -> None:
        if self.delta is not None:
            force_setattr(self, "delta", check_delta("delta", self.delta))
        if (
            self.accuracy is not None
            and self.query.statistic == "quantiles"
            and self.query.method == "ratio"
        ):  # a target plans on the tree's figures (and its count for a two-phase release)
            force_setattr(self, "query", replace(self.query, method="tree"))
        given = [k for k in ("epsilon", "accuracy", "weight") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ParameterError(
                f"query {self.query.label!r} must give exactly one of `epsilon`, `accuracy` "
                f"and `weight`, not {', '.join(given) or 'none'}",
                parameter="epsilon",
            )
        if self.epsilon is not None:
            force_setattr(self, "epsilon", check_epsilon("epsilon", self.epsilon))
        if self.accuracy is not None:
            force_setattr(self, "accuracy", _positive("accuracy", self.accuracy))
            if self.query.method == "exponential":  # nothing released could confirm a value ±
                raise ParameterError(
                    f"query {self.query.label!r}: the exponential method states its ± in ranks "
                    "and releases no count, so a target ± in values cannot be promised; give it a "
                    "fixed epsilon or a weight (docs/data.md, 'Quantiles by the exponential "
                    "mechanism')",
                    parameter="accuracy",
                )
        if self.weight is not None:
            force_setattr(self, "weight", _positive("weight", self.weight))
        c = self.confidence
        if isinstance(c, bool) or not isinstance(c, (int, float, Fraction, Decimal)):
            raise ParameterError(
                f"`confidence` must be a number in (0, 1), not {shown_number(c)}",
                parameter="confidence",
            )
        if not 0 < c < 1:
            raise ParameterError(
                f"`confidence` must be in (0, 1), not {shown_number(c)}", parameter="confidence"
            )
        force_setattr(self, "confidence", float(c))
        if self.group_size is not None:
            check_count("group_size", self.group_size)

    @property
    def how(self) -> str:
        """ "epsilon", "accuracy" or "weight"."""
        if self.epsilon is not None:
            return "epsilon"
        return "accuracy" if self.accuracy is not None else "weight"

    @property
    def depends_on_group_size(self) -> bool:
        """Whether its ± is stated for a reference group size (ratio statistics, quantiles)."""
        q = self.query
        return q.statistic in ("variance", "std", "var_samp", "std_samp", "quantiles") or (
            q.statistic == "mean" and q.method == "ratio"
        )

    @property
    def two_phase(self) -> bool:
        """Whether it is released in two phases: a target whose ± depends on a private size,
        with no declared ``group_size``."""
        return self.accuracy is not None and self.group_size is None and self.depends_on_group_size


class Declaration(Struct, frozen=True):
    """What is public about one table and its budget: a plan file's ``[data]`` and ``[columns]``.

    ``source``: a path (relative ones resolve against ``base``) or any data
    :class:`~snapdp.data.release.table.PrivateTable` accepts. ``total_epsilon``: the budget (None:
    the ledger's, or the workload's total). ``confidence``: of every stated ±. ``group_size``: the
    reference group size of the ± of means, variances and quantiles (None: the planner's
    default). ``dataset``: the name the budget is kept under, and the table's name in SQL.
    """

    schema: Schema = field(default_factory=Schema)
    source: object = None
    total_epsilon: Fraction | None = None
    confidence: float = DEFAULT_CONFIDENCE
    group_size: int | None = None
    dataset: str | None = None
    base: Path | None = None
    consistent: bool | str = False
    delta: Fraction | None = None  # the default δ of its queries (docs/plans.md, `delta`)

    def __post_init__(self) -> None:
        if self.delta is not None:
            force_setattr(self, "delta", check_delta("delta", self.delta))
        if not isinstance(self.schema, Schema):
            raise ParameterError(
                f"`schema` must be a Schema, not {self.schema!r}", parameter="schema"
            )
        if self.total_epsilon is not None:
            force_setattr(self, "total_epsilon", check_epsilon("total_epsilon", self.total_epsilon))
        c = self.confidence
        if isinstance(c, bool) or not isinstance(c, (int, float, Fraction)) or not 0 < c < 1:
            raise ParameterError(
                f"`confidence` must be a number in (0, 1), not {shown_number(c)}",
                parameter="confidence",
            )
        force_setattr(self, "confidence", float(c))
        if self.group_size is not None:
            check_count("group_size", self.group_size)
        check_mode(self.consistent)

    @property
    def table(self) -> str | None:
        """The table's name in SQL: ``dataset``, else the source file's stem (None: no name)."""
        return table_name(self.dataset, self.source)

    def source_path(self) -> object:
        """The source, a relative path resolved against ``base``."""
        return resolved_source(self.source, self.base)

    def planned(
        self,
        query: Query,
        *,
        epsilon: object = None,
        accuracy: object = None,
        weight: object = None,
        delta: object = None,
    ) -> PlannedQuery:
        """``query`` with exactly one of a fixed ε, a target ± or a weight, stated at this
        declaration's confidence and group size; its δ (None: the declaration's)."""
        size = {} if self.group_size is None else {"group_size": self.group_size}
        d = self.delta if delta is None else check_delta("delta", delta)
        return PlannedQuery(
            query,
            epsilon=None if epsilon is None else exact_value(epsilon, name="epsilon"),
            accuracy=None if accuracy is None else exact_value(accuracy, name="accuracy"),
            weight=None if weight is None else exact_value(weight, name="weight"),
            confidence=self.confidence,
            delta=d,
            **size,
        )


def table_name(dataset: str | None, source: object) -> str | None:
    """``dataset``, else the stem of a path ``source`` ("pums" for "data/pums.csv")."""
    if dataset:
        return dataset
    if isinstance(source, (str, Path)) and str(source):
        name = Path(str(source)).name
        for suffix in (".gz", ".zst"):
            name = name.removesuffix(suffix)
        return Path(name).stem or None
    return None


class Workload(Struct, frozen=True):
    """A declaration and its queries, each with a fixed ε, a target ± or a weight."""

    declaration: Declaration
    queries: tuple[PlannedQuery, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.declaration, Declaration):
            raise ParameterError(
                f"`declaration` must be a Declaration, not {self.declaration!r}",
                parameter="declaration",
            )
        force_setattr(self, "queries", tuple(self.queries))
        if not self.queries:
            raise ParameterError("a workload needs at least one query", parameter="query")
        for pq in self.queries:
            if not isinstance(pq, PlannedQuery):
                raise ParameterError(
                    f"a workload's queries must be PlannedQuery objects, not {pq!r}",
                    parameter="query",
                )

    # -- the declaration's parts, by their usual names -------------------------------------------
    @property
    def schema(self) -> Schema:
        """The declaration's schema."""
        return self.declaration.schema

    @property
    def source(self) -> object:
        """The declaration's source."""
        return self.declaration.source

    @property
    def total_epsilon(self) -> Fraction | None:
        """The declaration's total budget."""
        return self.declaration.total_epsilon

    @property
    def confidence(self) -> float:
        """The release's confidence."""
        return self.declaration.confidence

    @property
    def dataset(self) -> str | None:
        """The declaration's dataset name."""
        return self.declaration.dataset

    @property
    def delta(self) -> Fraction | None:
        """The δ its queries may use for groups from the data: the largest a query states
        (each query's own δ is spent only when it chooses groups from the data)."""
        deltas = [pq.delta for pq in self.queries if pq.delta is not None]
        return max(deltas) if deltas else None

    def with_queries(self, queries: Sequence[PlannedQuery]) -> Workload:
        """The same declaration with other queries."""
        return replace(self, queries=tuple(queries))


# -- the checks every front end shares ----------------------------------------------------------
#: The modes of `consistent` (docs/data.md, "Tables that add up"); `true` is "wls".
MODES = ("wls", "nonnegative", "integer")


def check_mode(consistent: object) -> str | None:
    """``consistent`` as a mode: False/None → None (off), True → "wls", or one of
    :data:`MODES`; anything else is a ParameterError naming ``consistent``."""
    if consistent is None or consistent is False:
        return None
    if consistent is True:
        return "wls"
    if isinstance(consistent, str) and consistent in MODES:
        return consistent
    raise ParameterError(
        f"`consistent` must be true, false or one of {', '.join(MODES)}, not {consistent!r}",
        parameter="consistent",
    )


def check_delta(name: str, x: object) -> Fraction:
    """δ as an exact rational in (0, 1): a ParameterError naming ``name`` otherwise."""
    value = check_epsilon(name, x)
    if not value < 1:
        raise ParameterError(
            f"`{name}` must be below 1, such as 1e-6, not {shown_number(value)}", parameter=name
        )
    return value


def check_unit(schema: Schema) -> None:
    """Refuse a privacy-unit column declared other than integer or text."""
    assert schema.privacy_unit is not None
    col = next((c for c in schema.columns if c.name == schema.privacy_unit), None)
    if col is not None and col.type not in ("integer", "text"):
        raise ParameterError(
            f"privacy-unit column {col.name!r} must be declared integer or text, not {col.type}",
            parameter="privacy_unit",
        )


def _confidence(confidence: object) -> tuple[float, float]:
    """(confidence, alpha = 1 − confidence), alpha computed from the decimal the user wrote."""
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float, Fraction)):
        raise ParameterError(
            f"`confidence` must be a number in (0, 1), not {shown_number(confidence)}",
            parameter="confidence",
        )
    c = float(confidence)
    if not 0 < c < 1:
        raise ParameterError(
            f"`confidence` must be in (0, 1), not {shown_number(confidence)}",
            parameter="confidence",
        )
    return c, alpha_of(c)


def alpha_of(confidence: float) -> float:
    """α = 1 − confidence, computed from the decimal the user wrote (0.95 → exactly 1/20, then
    the double nearest it): the one place a confidence becomes the α every ± is stated at."""
    return float(1 - Fraction(repr(float(confidence))))


def resolved_source(source: object, base: Path | None) -> object:
    """``source`` with a relative path resolved against ``base`` (a plan file's folder); any
    other source as it is."""
    if isinstance(source, (str, Path)):
        p = Path(source)
        if not p.is_absolute() and base is not None:
            p = base / p
        return str(p)
    return source


def _positive(name: str, x: object) -> Fraction:
    if isinstance(x, bool) or not isinstance(x, (int, Fraction, Decimal, float)):
        raise ParameterError(
            f"`{name}` must be a number > 0, not {shown_number(x)}", parameter=name
        )
    if isinstance(x, float) and not math.isfinite(x):
        raise ParameterError(f"`{name}` must be finite, not {shown_number(x)}", parameter=name)
    value = Fraction(x)
    if not value > 0:
        raise ParameterError(f"`{name}` must be > 0, not {shown_number(x)}", parameter=name)
    return value


def with_group_size(pq: PlannedQuery, n: int) -> PlannedQuery:
    """A copy of ``pq`` stated for groups of ``n`` rows."""
    return replace(pq, group_size=n)
