"""The statistic kinds, one registry: each family's compile, accuracy, exact inputs, rows and
units (:class:`snapdp.data.statistics.types.Kind`). A new statistic adds its kind module and one
line here."""

from __future__ import annotations

from snapdp.data.model.query import Query
from snapdp.data.statistics.kinds import moments, quantiles
from snapdp.data.statistics.types import Kind

__all__ = ["KINDS", "kind_name", "kind_of"]

#: Kind by name: the statistic, or "statistic/method" where the method changes the parts.
KINDS: dict[str, Kind] = {
    "count": moments.COUNT,
    "sum": moments.SUM,
    "mean": moments.MEAN,
    "mean/substitute": moments.SUBSTITUTE_MEAN,
    "variance": moments.SPREAD,
    "std": moments.SPREAD,
    "var_samp": moments.SPREAD,
    "std_samp": moments.SPREAD,
    "quantiles": quantiles.AUTO,
    "quantiles/tree": quantiles.TREE,
    "quantiles/exponential": quantiles.EXPONENTIAL,
}


def kind_name(query: Query) -> str:
    """The registry's name for the query's kind."""
    method = f"{query.statistic}/{query.method}"
    return method if method in KINDS else query.statistic


def kind_of(query: Query) -> Kind:
    """The query's kind."""
    return KINDS[kind_name(query)]
