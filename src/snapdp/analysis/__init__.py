"""Utility analysis of the snapping mechanism (DESIGN §3–§5; seeds 000 and 002).

Everything here is computed exactly from the finite output distribution of the ideal mechanism
(Laplace(λ′) noise, DESIGN §5) — no simulation — with MPFR at a stated precision:

- :mod:`.distribution`: the output distribution for one value;
- :mod:`.metrics`: bias, MAE, RMSE, tail probabilities and error quantiles; the textbook Laplace
  mechanism's metrics in closed form;
- :mod:`.getaccuracy`: seed 002's data-dependent accuracy, corrected (uses the TRUE value: an
  analysis tool, never to be printed beside a release);
- :mod:`.bounds`: clamping bounds from a binding probability γ (DESIGN §3);
- :mod:`.comparison`: seed 000's distance |M_L − M_S| and the utility ratios snapping/Laplace;
- :mod:`.discrete_laplace`: the discrete Laplace (two-sided geometric) baseline in closed form;
- :mod:`.attacks`: Mironov's distinguisher on textbook Laplace, snapping and discrete Laplace;
- :mod:`.report`: the HTML + JSON report of ``snapdp compare``.
"""

from snapdp.analysis.bounds import binding_probability_bound, bounds_for_binding_probability
from snapdp.analysis.comparison import (
    DistanceCase,
    UtilityPoint,
    distance_cases,
    utility_grid,
    utility_point,
)
from snapdp.analysis.discrete_laplace import (
    DiscreteLaplace,
    discrete_accuracy,
    discrete_laplace,
    discrete_metrics,
)
from snapdp.analysis.distribution import OutputDistribution, output_distribution
from snapdp.analysis.getaccuracy import data_dependent_accuracy
from snapdp.analysis.metrics import (
    ErrorMetrics,
    error_metrics,
    error_quantile,
    laplace_metrics,
    tail_probability,
)

__all__ = [
    "DiscreteLaplace",
    "DistanceCase",
    "ErrorMetrics",
    "OutputDistribution",
    "UtilityPoint",
    "binding_probability_bound",
    "bounds_for_binding_probability",
    "data_dependent_accuracy",
    "discrete_accuracy",
    "discrete_laplace",
    "discrete_metrics",
    "distance_cases",
    "error_metrics",
    "error_quantile",
    "laplace_metrics",
    "output_distribution",
    "tail_probability",
    "utility_grid",
    "utility_point",
]
