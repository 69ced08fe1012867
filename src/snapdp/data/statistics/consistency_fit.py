"""Tables that add up: the joint least-squares fit of one family and its ± (docs/data.md,
"Tables that add up").

Count queries of one release whose groupings nest (the total; by sex; by sex × educ; any counts
whose grouping columns are subsets of one another, joined into *families* by
:func:`snapdp.data.statistics.consistency.families`) are replaced by the
weighted least-squares fit over the hierarchy: with A the 0/1 matrix that sums the finest cells
(the cross-tabulation of every column of the family) into each released count, and V the
diagonal of 1/variance of each released count's noise,

    ŷ = A·(AᵀVA)⁺·AᵀV·z = W·z,

so every margin equals the sum of its cells. Only released values enter (post-processing: no
privacy cost). Each ŷⱼ − yⱼ = Σᵢ Wⱼᵢ·eᵢ is a known linear combination of the independent noises
eᵢ. Its ± (at the release's confidence 1 − α, for each value on its own, like the ± of an
independent count) is chosen per value by a public rule (the statement typically smallest, with
|v − zⱼ| counted as 0.8 standard deviations of ŷⱼ − zⱼ): the fit bound alone at α, the triangle
bound alone at α, or the smaller of both at α/2 each (each holding with probability >= 1 − α/2
for every table, so their minimum holds with 1 − α). A family of more than
:data:`MAX_FIT_BOUND` released counts states the triangle bound alone at α.

* the triangle bound |v − zⱼ| + aⱼ(·), v the value stated, zⱼ the same count as released on
  its own and aⱼ(·) the ± of its noise (|v − zⱼ| is known after the release);
* the fit bound plus |v − ŷⱼ| when v is rounded: when every noise of the family is never
  clamped and the family has at most
  :data:`~snapdp.data.statistics.math.sum_bound.MAX_NOISES` counts,
  :func:`~snapdp.data.statistics.math.sum_bound.sum_accuracy` (exact heads, rounding averaged
  out; docs/data.md, "The fit bound"); else the smallest of these, from the public weights
  only, at α′:

  - union: Σᵢ |Wⱼᵢ|·aᵢ(α′/m), m the noises of the family;
  - split: the k <= 3 largest |Wⱼᵢ| by Σ |Wⱼᵢ|·aᵢ(s·α′/k) (union bound), the rest by the tail
    bound at (1 − s)·α′, for s in {0.5, 0.75, 0.9};
  - tail: with −(a + b·S⁻E) <= e <= a + b·S⁺E (:func:`snapdp.accuracy.noise_envelope`; S a
    fair sign, P(E > s) <= κe^(−s), κ = 1 + 2^−52), E[exp(θ·|w|·(a + b·S⁺E))] <=
    exp(θ|w|a)·(1 + κθc/(2(1 − θc))), c = |w|·b, so by Chernoff, for any 0 < θ < 1/max c,
    P(|Σ wᵢeᵢ| > t) <= α′ at t = (ln(2/α′) + Σᵢ [θ|wᵢ|aᵢ + ln(1 + κθcᵢ/(2(1 − θcᵢ)))])/θ;
    θ is searched on a grid (any θ gives a valid bound).

  The bounds are computed in doubles with a relative margin of 1e-9, plus the fit's own
  rounding: (2·maxₖ|(W·A − A)ⱼₖ| + 1e-15)·N (N the declared row bound, Σₖ xₖ <= N) +
  1e-12·(Σᵢ|Wⱼᵢ|·|zᵢ| + 1).

    For a noise whose output is never clamped (a consistent release gives its counts bounds
    the noise cannot reach, :func:`~snapdp.data.statistics.consistency.open_bound`), Y is
    symmetric and the term is the tighter
    θ|w|a + ln(1 + κθ²c²/(1 − θ²c²)) (E cosh(uE) <= 1 + κu²/(1 − u²)).

Options (``mode``): ``"wls"`` the fit alone; ``"nonnegative"`` and ``"integer"`` then go top-down
along a chain of the family's groupings (coarsest first, ending at the finest): the coarsest
cells are clamped at 0 (and rounded to the nearest integer), then under each parent cell its
children are projected onto {c >= 0, Σc = parent} (Euclidean, closed form) and, for integers,
rounded by largest remainder (floors, then +1 to the largest fractional parts, ties to the first
cell), which keeps every sum exact. Counts outside the chain become sums of the finest cells.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from msgspec import Struct

from snapdp import _blas
from snapdp.accuracy import noise_envelope
from snapdp.data.model.schema import Column
from snapdp.data.output.results import QueryResult
from snapdp.data.statistics.math.sum_bound import MAX_NOISES, NoiseKind, noise_kind, sum_accuracies
from snapdp.errors import ParameterError
from snapdp.mechanism import SnappingMechanism

__all__ = ["MAX_CELLS", "MAX_FIT_BOUND", "Fit", "Member", "fit", "member_of"]

#: The most finest cells one family may have (the fit is a dense solve over them).
MAX_CELLS = 4096
#: The most released counts a family may have for the fit bound to be computed (its cost grows
#: as their square); larger families state the triangle bound alone, at the full α.
MAX_FIT_BOUND = 512
_KAPPA = 1 + 2.0**-52
_MARGIN = 1 + 1e-9
#: The split bound: the _HEAD largest weights by their noises' own ± (union bound at a share of
#: α), the rest by the tail bound at the remaining α.
_HEAD = 3
_SHARES = (0.5, 0.75, 0.9)
_Array = npt.NDArray[np.float64]


class Member(Struct, frozen=True):
    """One released count table of a family: its grouping, its released values (cell order of
    :func:`snapdp.data.model.schema.keys_product`) and its noise's public description."""

    columns: tuple[Column, ...]
    values: _Array
    variance: float
    envelope: tuple[float, float]
    accuracy: Callable[[float], float]
    unclamped: bool = False  # no output can reach the mechanism's bounds (see open_bound)
    kind: NoiseKind | None = None  # the never-clamped error's description (sum_bound)


class Fit(Struct, frozen=True):
    """A family's fitted values and their ± (one array per member, in member order)."""

    values: list[_Array]
    accuracy: list[_Array]
    fitted: list[_Array]  # the least-squares values before any rounding
    noises: int


def _union(groupings: Sequence[tuple[Column, ...]]) -> tuple[Column, ...]:
    cols: dict[str, Column] = {}
    for g in sorted(groupings, key=lambda g: -len(g)):
        for c in g:
            cols.setdefault(c.name, c)
    return tuple(cols.values())


def _cell_maps(members: Sequence[Member], union: tuple[Column, ...]) -> list[npt.NDArray[np.intp]]:
    """For each member, the index of its cell holding each finest cell (row-major order)."""
    shape = tuple(c.n_cells for c in union)
    grid = np.indices(shape).reshape(len(shape), -1) if shape else np.zeros((0, 1), np.intp)
    pos = {c.name: i for i, c in enumerate(union)}
    maps = []
    for m in members:
        sub = tuple(grid[pos[c.name]] for c in m.columns)
        dims = tuple(c.n_cells for c in m.columns)
        if not dims:
            maps.append(np.zeros(grid.shape[1], dtype=np.intp))
        else:
            maps.append(np.ravel_multi_index(sub, dims).astype(np.intp))
    return maps


def fit(
    members: Sequence[Member], alpha: float, mode: str, max_rows: int, label: str = "a family"
) -> Fit:
    """The consistent values of one family and their ± at 1 − ``alpha`` (module docstring)."""
    union = _union([m.columns for m in members])
    n = math.prod(c.n_cells for c in union)
    if n > MAX_CELLS:
        raise ParameterError(
            f"consistent: {label} has {n:,} cells in its finest cross-tabulation; at most "
            f"{MAX_CELLS:,} can be fitted (docs/data.md, 'Tables that add up')",
            parameter="consistent",
        )
    # The fit runs on as many BLAS threads as numpy starts with by default, also in the command
    # (which starts it on one: snapdp._blas): the doubles of a matrix product depend on how its
    # work is split, so the command and the library release the same values.
    with _blas.all_threads():
        return _fit(members, alpha, mode, max_rows, union, n)


def _fit(
    members: Sequence[Member],
    alpha: float,
    mode: str,
    max_rows: int,
    union: tuple[Column, ...],
    n: int,
) -> Fit:
    maps = _cell_maps(members, union)
    sizes = [len(m.values) for m in members]
    offsets = np.cumsum([0, *sizes])
    total = int(offsets[-1])
    design = np.zeros((total, n))
    for m_i, cmap in enumerate(maps):
        design[offsets[m_i] + cmap, np.arange(n)] = 1.0
    var = np.concatenate([np.full(s, m.variance) for s, m in zip(sizes, members, strict=True)])
    z = np.concatenate([m.values for m in members])
    prec = 1.0 / var
    normal = design.T @ (design * prec[:, None])
    full = any(len(m.columns) == len(union) for m in members)  # the finest counts are released
    fitted = design @ _solve(normal, design.T @ (prec * z), full)
    a = np.concatenate([np.full(s, m.envelope[0]) for s, m in zip(sizes, members, strict=True)])
    b = np.concatenate([np.full(s, m.envelope[1]) for s, m in zip(sizes, members, strict=True)])
    sym = np.concatenate([np.full(s, m.unclamped) for s, m in zip(sizes, members, strict=True)])

    def per_noise(a_: float) -> _Array:
        return np.concatenate(
            [np.full(s, m.accuracy(a_)) for s, m in zip(sizes, members, strict=True)]
        )

    own = per_noise(alpha)  # the triangle bound alone, at α
    by_fit = np.full(total, np.inf)
    own_half = own
    if total <= MAX_FIT_BOUND:
        gain = _solve(normal, design.T * prec[None, :], full)  # n × total
        weights = design @ gain  # total × total
        residual = np.abs(weights @ design - design).max(axis=1)
        rounding = (2 * residual + 1e-15) * max_rows + 1e-12 * (np.abs(weights) @ np.abs(z) + 1)
        public = (2 * residual + 1e-15) * max_rows + 1e-12  # the margin without z: for the rule
        kinds = [m.kind for m, s in zip(members, sizes, strict=True) for _ in range(s)]
        if total <= MAX_NOISES and all(k is not None for k in kinds):
            sure = [k for k in kinds if k is not None]
            pairs = sum_accuracies(weights, sure, (alpha, alpha / 2))
            fit_full, fit_half = pairs[:, 0], pairs[:, 1]
        else:
            fit_full = _fit_accuracy(weights, a, b, sym, per_noise, alpha)
            fit_half = _fit_accuracy(weights, a, b, sym, per_noise, alpha / 2)
        half = per_noise(alpha / 2)
        # A public rule picks the statement per value, by its typical size (|v − z| taken as
        # 0.8 standard deviations of ŷ − z, a public figure): the fit bound alone at α, the
        # triangle bound alone at α, or the smaller of both at α/2. It reads no released value
        # (a pick that moved with the noise would void the ±'s coverage).
        shift = 0.8 * np.sqrt(((weights - np.eye(total)) ** 2) @ var)
        typical = np.stack(
            [fit_full + public, own + shift, np.minimum(fit_half + public, half + shift)]
        )
        pick = np.argmin(typical, axis=0)
        fit_full, fit_half = fit_full + rounding, fit_half + rounding
        by_fit = np.select([pick == 0, pick == 2], [fit_full, fit_half], np.inf)
        own_half = np.select([pick == 1, pick == 2], [own, half], np.inf)
    if mode == "wls":
        values = fitted
    else:
        per_fit = [fitted[offsets[i] : offsets[i + 1]] for i in range(len(members))]
        values = np.concatenate(_round(members, maps, per_fit, integer=mode == "integer"))
    acc = np.nextafter(
        np.minimum(
            by_fit + np.abs(values - fitted) * _MARGIN, own_half + np.abs(values - z) * _MARGIN
        ),
        np.inf,
    )

    def split(x: _Array) -> list[_Array]:
        return [x[offsets[i] : offsets[i + 1]] for i in range(len(members))]

    return Fit(split(values), split(acc), split(fitted), total)


def _solve(normal: _Array, rhs: _Array, full: bool) -> _Array:
    """(AᵀVA)⁺·rhs: by Cholesky when the family releases its finest cross-tabulation (then
    AᵀVA >= min(1/variance)·I is well conditioned), else by the pseudo-inverse."""
    if not full:
        return np.asarray(np.linalg.pinv(normal, hermitian=True) @ rhs, dtype=np.float64)
    factor = np.linalg.cholesky(normal)
    y = np.linalg.solve(factor, rhs)
    return np.asarray(np.linalg.solve(factor.T, y), dtype=np.float64)


def _fit_accuracy(
    weights: _Array,
    a: _Array,
    b: _Array,
    sym: npt.NDArray[np.bool_],
    per_noise: Callable[[float], _Array],
    alpha: float,
) -> _Array:
    """Each fitted value's ± at 1 − ``alpha`` from its weights (the smallest of the union, split
    and tail bounds of the module docstring), before the fit's own rounding."""
    total = len(weights)
    union_acc = per_noise(alpha / total)
    heads = {
        (k, share): per_noise(alpha * share / k)
        for k in range(1, min(_HEAD, total) + 1)
        for share in _SHARES
    }
    acc = np.empty(total)
    for j in range(total):
        w = np.abs(weights[j])
        best = min(float(w @ union_acc), _tail(w, a, b, sym, alpha))
        order = np.argsort(-w, kind="stable")
        for (k, share), head_acc in heads.items():
            head, rest = order[:k], w.copy()
            rest[head] = 0.0
            bound = float(w[head] @ head_acc[head]) + _tail(rest, a, b, sym, alpha * (1 - share))
            best = min(best, bound)
        acc[j] = best * _MARGIN
    return acc


def _tail(w: _Array, a: _Array, b: _Array, sym: npt.NDArray[np.bool_], alpha: float) -> float:
    """The Chernoff bound of the module docstring for Σ wᵢeᵢ (w >= 0 here: |weights|); the
    symmetric form for the noises whose outputs are never clamped (``sym``)."""
    keep = w > 0
    w, a, b, sym = w[keep], a[keep], b[keep], sym[keep]
    lin = float(w @ a)
    c = w * b
    cmax = float(c.max()) if len(c) else 0.0
    if cmax == 0:
        return lin
    log2a = math.log(2 / alpha)

    def t_at(frac: _Array) -> _Array:
        theta = frac / cmax  # θ·cmax in (0, 1)
        tc = np.outer(theta, c)
        one_sided = _KAPPA * tc / (2 * (1 - tc))
        symmetric = _KAPPA * tc * tc / (1 - tc * tc)
        s = np.log1p(np.where(sym[None, :], symmetric, one_sided)).sum(axis=1)
        return np.asarray((log2a + s) / theta + lin, dtype=np.float64)

    coarse = 1 - np.geomspace(1e-6, 1 - 1e-6, 48)
    values = t_at(coarse)
    k = int(np.argmin(values))
    lo, hi = coarse[min(k + 1, len(coarse) - 1)], coarse[max(k - 1, 0)]
    fine = np.linspace(min(lo, hi), max(lo, hi), 48)
    fine = fine[(fine > 0) & (fine < 1)]
    best = min(float(values[k]), float(t_at(fine).min()) if len(fine) else math.inf)
    return best


# -- rounding ---------------------------------------------------------------------------------
def _chain(groupings: Sequence[tuple[Column, ...]]) -> list[int]:
    """Indices from the coarsest to the finest grouping along a chain of nested groupings ending
    at the finest one (which must group by every column of the family)."""
    names = [frozenset(c.name for c in g) for g in groupings]
    every = frozenset().union(*names)
    finest = next((i for i, s in enumerate(names) if s == every), None)
    if finest is None:
        raise ParameterError(
            "consistent: non-negative and integer rounding need one count grouped by every column "
            "of the nested counts (e.g. sex × educ); add it or use consistent = true",
            parameter="consistent",
        )
    chain = [finest]
    while True:
        below = [i for i, s in enumerate(names) if s < names[chain[-1]]]
        if not below:
            return chain[::-1]
        chain.append(max(below, key=lambda i: (len(names[i]), -i)))


def _round(
    members: Sequence[Member],
    maps: list[npt.NDArray[np.intp]],
    fitted: list[_Array],
    *,
    integer: bool,
) -> list[_Array]:
    chain = _chain([m.columns for m in members])
    out: list[_Array | None] = [None] * len(members)
    top = np.maximum(fitted[chain[0]], 0.0)
    out[chain[0]] = np.rint(top) if integer else top
    for parent, child in itertools.pairwise(chain):
        parent_of = np.zeros(len(fitted[child]), dtype=np.intp)
        parent_of[maps[child]] = maps[parent]
        values = np.empty(len(fitted[child]))
        p_values = out[parent]
        assert p_values is not None
        for p, target in enumerate(p_values):
            cells = np.flatnonzero(parent_of == p)
            part = _simplex(fitted[child][cells], float(target))
            values[cells] = _largest_remainder(part, float(target)) if integer else part
        out[child] = values
    finest_map, finest = maps[chain[-1]], out[chain[-1]]
    assert finest is not None
    cells_of_finest = finest[finest_map]  # finest is the full cross-tab: one value per cell
    for i, m in enumerate(members):
        if out[i] is None:
            sums = np.bincount(maps[i], weights=cells_of_finest, minlength=len(m.values))
            out[i] = np.asarray(sums, dtype=np.float64)
    return [x for x in out if x is not None]


def _simplex(v: _Array, total: float) -> _Array:
    """The Euclidean projection of v onto {c >= 0, Σc = total} (total >= 0)."""
    if total <= 0:
        return np.zeros_like(v)
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - total
    ks = np.arange(1, len(v) + 1)
    rho = int(np.flatnonzero(u - css / ks > 0)[-1])
    tau = css[rho] / (rho + 1)
    return np.asarray(np.maximum(v - tau, 0.0), dtype=np.float64)


def _largest_remainder(v: _Array, total: float) -> _Array:
    """Integers >= 0 summing to the integer ``total``: floors, then +1 to the largest
    fractional parts (ties to the first cell)."""
    floors = np.floor(v)
    short = round(total - float(floors.sum()))
    short = min(max(short, 0), len(v))
    order = np.argsort(-(v - floors), kind="stable")
    floors[order[:short]] += 1
    return np.asarray(floors, dtype=np.float64)


def member_of(
    columns: tuple[Column, ...],
    result: QueryResult,
    mechanism: SnappingMechanism,
    max_rows: int = 0,
) -> Member:
    """A count query's result as a family member (its noise from its mechanism's parameters;
    ``unclamped`` when no output for a true count in [0, ``max_rows``] can reach the bounds)."""
    params = mechanism.parameters
    delta = float(params.sensitivity)
    lam, grid = float(params.scale) * delta, float(params.grid) * delta
    values = np.array([r.value for r in result.rows], dtype=np.float64)
    key = (mechanism.epsilon, mechanism.sensitivity, mechanism.lower, mechanism.upper)
    a, b = noise_envelope(params)
    reach = (b * 745 + a) * (1 + 1e-9)  # |ln U*| <= 1074·ln 2 < 745
    unclamped = params.lower <= -reach and params.upper >= max_rows + reach
    return Member(
        columns,
        values,
        2 * lam * lam + grid * grid / 12,
        (a, b),
        functools.partial(_accuracy, key),
        bool(unclamped),
        noise_kind(params) if unclamped else None,
    )


@functools.lru_cache(maxsize=1024)
def _accuracy(key: tuple[Any, Any, Any, Any], alpha: float) -> float:
    """The ± of a mechanism with these public parameters at ``alpha`` (cached: a release asks
    for a few α per count, and seeded tests release the same parameters many times)."""
    return SnappingMechanism(*key).accuracy(alpha)
