"""Queries: what a release asks of a declared table (DESIGN §8; docs/data.md).

A :class:`Query` names a statistic, the value column it reads (declared with bounds in the
:class:`~snapdp.data.model.schema.Schema`), the grouping columns (declared with keys or bins; a
query may bin a numeric column by its own edges), for quantiles the probabilities, and an optional
row filter (``where``, a :mod:`snapdp.data.model.predicate`: the statistic reads only the rows it
holds for). A query holds no ε: the release or the plan assigns it.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Literal, TypeAlias

from msgspec import Struct
from msgspec.structs import force_setattr

from snapdp._rational import shown_number
from snapdp._validation import check_unicode
from snapdp.data.model.predicate import And, Compare, InList, IsNull, Not, Or, Predicate, to_sql
from snapdp.errors import ParameterError, did_you_mean

__all__ = ["ROOT_STATISTICS", "SPREAD_STATISTICS", "STATISTICS", "Query", "StatisticName"]

StatisticName: TypeAlias = Literal[
    "count", "sum", "mean", "variance", "std", "var_samp", "std_samp", "quantiles"
]
STATISTICS: tuple[str, ...] = (
    "count", "sum", "mean", "variance", "std", "var_samp", "std_samp", "quantiles"
)  # fmt: skip
#: The statistics released from Σw², Σw and the count (docs/data.md, "Statistics"): the
#: population forms and the sample forms (divided by n − 1, docs/sql.md, "Sample variance").
SPREAD_STATISTICS: tuple[str, ...] = ("variance", "std", "var_samp", "std_samp")
#: The statistics whose released value is a square root (their ± is the root of a variance's).
ROOT_STATISTICS: tuple[str, ...] = ("std", "std_samp")


class Query(Struct, frozen=True):
    """One statistic, grouped by ``by`` (the cross product of their declared domains).

    ``bins``: (column, edges) pairs overriding a grouping column's domain with numeric bins for
    this query. ``quantiles``: probabilities in (0, 1) for ``statistic="quantiles"``.
    ``method``: for a mean, "ratio" (noisy sum / noisy count, default) or "substitute" (needs the
    declared public row count); for quantiles, "tree" (a tree histogram) or "exponential" (the
    exact exponential mechanism; docs/data.md, "Quantiles by the exponential mechanism"); the
    field's default, "ratio", lets the planner choose whichever states the smaller ± at the
    query's ε (docs/utility.md, "Quantiles: the tree or the exponential mechanism").
    ``name``: a label for results (default: derived).
    ``resolution``: for quantiles, the widest leaf of the tree histogram (default: the declared
    range / 1024, and at least 1 for an integer column). ``where``: keep only the rows this
    predicate holds for (SQL's WHERE; checked against the declaration when compiled).
    ``grid_counts``: for a count, release the value on the mechanism's grid (e.g. 2000.125)
    instead of the nearest integer, the default (docs/utility.md, "Integer counts").
    """

    statistic: StatisticName
    column: str | None = None
    by: tuple[str, ...] = ()
    bins: tuple[tuple[str, tuple[Fraction, ...]], ...] = ()
    quantiles: tuple[Fraction, ...] = ()
    method: Literal["ratio", "substitute", "tree", "exponential"] = "ratio"
    name: str | None = None
    resolution: Fraction | None = None
    where: Predicate | None = None
    grid_counts: bool = False

    def __post_init__(self) -> None:
        if self.statistic not in STATISTICS:
            raise ParameterError(
                f"`statistic` must be one of {', '.join(STATISTICS)}, not {self.statistic!r}"
                + did_you_mean(self.statistic, STATISTICS),
                parameter="statistic",
            )
        if isinstance(self.name, str):
            check_unicode(self.name, "`name`", "name")
        if isinstance(self.by, str):
            force_setattr(self, "by", (self.by,))
        if len(set(self.by)) != len(self.by):
            raise ParameterError("`by` must not repeat a column", parameter="by")
        needs_column = self.statistic != "count"
        if needs_column and not self.column:
            raise ParameterError(
                f"a {self.statistic} needs a `column` (declared with bounds)", parameter="column"
            )
        if not needs_column and self.column is not None:
            raise ParameterError("a count takes no `column`", parameter="column")
        if self.statistic == "quantiles":
            qs = tuple(Fraction(q) for q in self.quantiles)
            if not qs or any(not 0 < q < 1 for q in qs) or len(set(qs)) != len(qs):
                raise ParameterError(
                    "`quantiles` must list distinct probabilities strictly between 0 and 1",
                    parameter="quantiles",
                )
            force_setattr(self, "quantiles", qs)
        elif self.quantiles:
            raise ParameterError(
                "only statistic='quantiles' takes `quantiles`", parameter="quantiles"
            )
        if self.resolution is not None:
            if self.statistic != "quantiles":
                raise ParameterError(
                    "only statistic='quantiles' takes `resolution`", parameter="resolution"
                )
            try:
                res = Fraction(self.resolution)
            except (TypeError, ValueError, ZeroDivisionError):
                raise ParameterError(
                    f"`resolution` must be a number > 0, not {shown_number(self.resolution)}",
                    parameter="resolution",
                ) from None
            if not res > 0:
                raise ParameterError("`resolution` must be > 0", parameter="resolution")
            force_setattr(self, "resolution", res)
        if self.statistic == "quantiles":
            if self.method not in ("ratio", "tree", "exponential"):
                raise ParameterError(
                    f"`method` of quantiles must be 'tree' or 'exponential', not {self.method!r}",
                    parameter="method",
                )
        elif self.method not in ("ratio", "substitute"):
            raise ParameterError(
                f"`method` must be 'ratio' or 'substitute', not {self.method!r}", parameter="method"
            )
        if self.where is not None and not isinstance(
            self.where, (Compare, InList, IsNull, And, Or, Not)
        ):
            raise ParameterError(
                f"`where` must be a filter (snapdp.data.model.predicate), not {self.where!r}",
                parameter="where",
            )
        if self.grid_counts is not False and (self.grid_counts is not True or needs_column):
            raise ParameterError(
                "`grid_counts` is true or false, and only a count takes it",
                parameter="grid_counts",
            )
        for column, _edges in self.bins:
            if column not in self.by:
                raise ParameterError(
                    f"`bins` for {column!r}, which is not a `by` column", parameter="bins"
                )

    @property
    def label(self) -> str:
        """A short label such as ``mean(income) by sex``."""
        if self.name:
            return self.name
        core = self.statistic if self.column is None else f"{self.statistic}({self.column})"
        core += f" by {', '.join(self.by)}" if self.by else ""
        core += f" where {to_sql(self.where)}" if self.where is not None else ""
        return core + (" (exponential mechanism)" if self.method == "exponential" else "")
