"""Quantiles by the exact exponential mechanism: the grid, the loss and the accuracy (no engine,
no I/O). See docs/data.md, "Quantiles by the exponential mechanism", and docs/exponential.md.

**The grid.** A bounded numeric column [L, U] is cut into m cells: for an integer column, runs of
w consecutive integers (w = 1 by default: one cell per integer, so the released value is an
integer of the column); for a decimal column, m equal cells of width no more than the
resolution. The engine counts the rows per cell (values clamped to [L, U]). Each cell is one
candidate; the released value is the cell's middle (the integer itself when w = 1).

**The loss.** For p = a/b in lowest terms, n rows and Cⱼ the rows below cell j,
dⱼ = max(b·Cⱼ − a·n, a·n − b·Cⱼ₊₁, 0) = b·(the distance from p·n to [Cⱼ, Cⱼ₊₁]). It is 0 exactly
on the cells that hold a true p-quantile, and a row added below cell j moves it by at most b − a,
one in or above it by at most a: Δ = max(a, b − a) per row, times the rows one unit can add.

**Privacy.** Each probability's draws use :func:`snapdp.exponential.sample` with ε split over
the probabilities in proportion to max(p, 1 − p) (:func:`probability_weights`; sequential
composition): pure ε-DP (ε_used = 2Δ·ln r <= the draw's ε). In a grouped query every group
gets the draw's full ε: a unit adding dᵍ rows to group g moves that group's losses by at most
dᵍ·max(a, b − a), and the exponential mechanism's loss grows with the change (2·ln r per unit
of loss), so the groups' losses add up to at most ε when Σdᵍ is at most the unit's row bound.

**Accuracy.** With probability >= 1 − α the released cell's rank interval [Cⱼ, Cⱼ₊₁] lies
within ± t/b of p·n, t = ln((m − 1)/α)/ln r (:meth:`ExponentialParameters.loss_bound`): one cell
has loss 0, so any cell at loss >= t has probability at most r**−t. The bound holds for every
n: it is stated before anything is spent and depends on public parameters only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

from msgspec import Struct

from snapdp._rational import format_rational, shown_rational
from snapdp.errors import ParameterError
from snapdp.exponential import ExponentialParameters, exponential_parameters

__all__ = [
    "MAX_CANDIDATES",
    "QuantileGrid",
    "bracket_offset",
    "losses",
    "middle_slack",
    "parameters",
    "point_rank_bound",
    "probability_weights",
    "quantile_grid",
    "rank_bound",
    "sensitivity",
]

MAX_CANDIDATES = 4096
"""The most cells (candidates) a grid may have (the declared resolution must allow it)."""


class QuantileGrid(Struct, frozen=True):
    """m cells over [lower, upper]: cell j is [edges[j], edges[j+1]); ``integer``: the cells hold
    runs of ``width`` integers (edges are integers, the last one upper + 1)."""

    lower: Fraction
    upper: Fraction
    edges: tuple[Fraction, ...]
    integer: bool

    @property
    def cells(self) -> int:
        """m, the number of candidates."""
        return len(self.edges) - 1

    @property
    def width(self) -> Fraction:
        """The width of a cell in values (a run of w integers has width w − 1 between its ends)."""
        return self.edges[1] - self.edges[0]

    def value(self, j: int) -> Fraction:
        """The released value of cell j: its middle (for integers, the middle of its integers,
        clamped to the last integer <= upper)."""
        lo, hi = self.edges[j], self.edges[j + 1]
        if self.integer:
            last = min(hi - 1, self.upper)
            return (lo + last) / 2
        return (lo + hi) / 2

    def top(self, j: int) -> Fraction:
        """The largest value of cell j: its last integer (at most ``upper``) for integers, else
        its upper edge."""
        if self.integer:
            return min(self.edges[j + 1] - 1, self.upper)
        return self.edges[j + 1]

    @property
    def half_width(self) -> Fraction:
        """The most a value of a cell lies from the cell's released value."""
        return max(self.value(j) - self.edges[j] for j in range(min(self.cells, 2)))


def quantile_grid(
    lower: Fraction, upper: Fraction, integer: bool, resolution: Fraction | None
) -> QuantileGrid:
    """The grid for a column's declared bounds. ``resolution``: the widest cell (default: one
    integer per cell for integer columns, (U − L)/1024 otherwise). A ParameterError naming
    ``resolution`` past :data:`MAX_CANDIDATES` cells."""
    if not lower < upper:
        raise ParameterError("`lower` must be < `upper`", parameter="lower")
    if integer:
        lo, hi = math.ceil(lower), math.floor(upper)
        if lo >= hi:  # one candidate: the release would not depend on the data
            shown = f"[{shown_rational(Fraction(lower))}, {shown_rational(Fraction(upper))}]"
            raise ParameterError(
                f"the bounds {shown} hold {'no integer' if lo > hi else f'one integer ({lo})'}; "
                "the exponential method needs two or more: widen them",
                parameter="quantile_bounds",
            )
        w = 1 if resolution is None else max(1, math.floor(resolution))
        m = -(-(hi - lo + 1) // w)
    else:
        res = (upper - lower) / 1024 if resolution is None else Fraction(resolution)
        m = max(2, math.ceil((upper - lower) / res))
    if m > MAX_CANDIDATES:  # checked before any edge is built: m can be near 2^64
        raise ParameterError(
            f"the exponential method allows at most {MAX_CANDIDATES} cells; "
            + (
                "the default resolution"
                if resolution is None
                else f"a resolution of {format_rational(Fraction(resolution))}"
            )
            + f" gives {m}: choose a coarser `resolution`",
            parameter="resolution",
        )
    if integer:
        edges = (*tuple(Fraction(lo + j * w) for j in range(m)), Fraction(hi + 1))
    else:
        step = (upper - lower) / m
        edges = (*tuple(lower + j * step for j in range(m)), upper)
    return QuantileGrid(Fraction(lower), Fraction(upper), edges, integer)


def sensitivity(probability: Fraction, row_bound: int) -> int:
    """Δ of the loss of :func:`losses`: max(a, b − a)·k for p = a/b, k rows per unit."""
    p = Fraction(probability)
    a, b = p.numerator, p.denominator
    return max(a, b - a) * row_bound


def parameters(
    epsilon: Fraction, probability: Fraction, row_bound: int, cells: int
) -> ExponentialParameters:
    """The exact mechanism for one probability at ``epsilon``."""
    return exponential_parameters(epsilon, sensitivity(probability, row_bound), cells)


def losses(
    counts: Sequence[int], probability: Fraction, offset: int = 0, middle: int | None = None
) -> list[int]:
    """dⱼ = max(b·Cⱼ − a·n, a·n − b·Cⱼ₊₁, 0) for each cell j (see the module docstring); with
    ``offset`` k the target rank is p·n + k (a public integer: the sensitivity is unchanged),
    dⱼ = b·(the distance from p·n + k to [Cⱼ, Cⱼ₊₁]). With ``middle`` (a public integer κ; the
    point's loss): min(⌊|b·(Cⱼ + Cⱼ₊₁) − 2a·n|/2⌋, dⱼ + b·κ), about b·(the distance from p·n to
    the cell's middle rank), but at most b·κ more than dⱼ; the same sensitivity
    (docs/utility.md, "The point's loss: the middle rank")."""
    p = Fraction(probability)
    a, b = p.numerator, p.denominator
    n = 0
    for c in counts:
        n += int(c)
    an = a * n + b * int(offset)
    out = []
    below = 0
    for c in counts:
        upto = below + int(c)
        interval = max(b * below - an, an - b * upto, 0)
        if middle is None:
            out.append(interval)
        else:  # the same operations for every cell, wherever the data lie
            out.append(min(abs(b * (below + upto) - 2 * an) // 2, interval + b * middle))
        below = upto
    return out


def rank_bound(params: ExponentialParameters, probability: Fraction, alpha: float) -> float:
    """± in ranks at confidence 1 − α: t/b, t = :meth:`ExponentialParameters.loss_bound`."""
    return params.loss_bound(alpha) / Fraction(probability).denominator


def point_rank_bound(
    params: ExponentialParameters, probability: Fraction, alpha: float, middle: int
) -> float:
    """The point's ± in ranks at confidence 1 − α: κ + :func:`rank_bound`. A cell holding a
    p-quantile has loss at most b·κ; with probability >= 1 − α the drawn cell's loss is below
    b·κ + t, and it is at least dⱼ (the middle rank lies in the rank interval): docs/utility.md,
    "The point's loss: the middle rank"."""
    return middle + rank_bound(params, probability, alpha)


def middle_slack(params: ExponentialParameters, probability: Fraction, alpha: float) -> int:
    """κ for a point drawn with ``params``: the least integer at or above a quarter of its rank
    ± at confidence 1 − α without the slack, so that the stated rank ± is about 1.25 times that
    (public parameters only)."""
    return math.ceil(rank_bound(params, probability, alpha) / 4)


def probability_weights(probabilities: Sequence[Fraction]) -> tuple[Fraction, ...]:
    """Each probability's share of ε, proportional to max(p, 1 − p) (a draw's rank ± is
    proportional to max(p, 1 − p)/ε: these shares give every probability the same rank ±);
    exact, adding up to 1."""
    sizes = [max(Fraction(p), 1 - Fraction(p)) for p in probabilities]
    total = sum(sizes, Fraction(0))
    return tuple(s / total for s in sizes)


def bracket_offset(params: ExponentialParameters, probability: Fraction, alpha: float) -> int:
    """K, the rank offset of a bracketing draw: the least integer above its rank ± at confidence
    1 − α, so that a draw aimed at p·n − K lies below every p-quantile and one aimed at
    p·n + K above (docs/utility.md, "The exponential mechanism's value ±")."""
    return math.floor(rank_bound(params, probability, alpha)) + 1
