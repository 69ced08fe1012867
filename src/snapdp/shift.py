"""The per-shift certificate of a snapping mechanism, computed with the exact verifier.

For a mechanism built with (ε_m, Δ_m, [lower, upper]) and a claim (ε, Δ) with ε/Δ = ε_m/Δ_m (or
any claim, for tests), :func:`shift_certificate` checks exactly that the mechanism loses at most
ε·d/Δ (plus a tiny additive slack) for each shift d <= Δ of its input. Two users:

* the L1 calibration of grouped releases (:mod:`snapdp.data.statistics.calibration`, docs/data.md,
  "Calibrated to the whole table (L1)"): every cell gets noise for Δ₁;
* the rescaling that removes the power-of-two penalty (:mod:`snapdp.rescaling`,
  docs/mechanism.md, "No power-of-two penalty"): a mechanism built for Δ_m = r·Δ is used for
  shifts up to Δ.

Below :mod:`snapdp.mechanism` (it reads the exact distribution of :mod:`snapdp.distribution`,
a function of the parameters). Deterministic, data-free, cached per exact parameter set.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

from snapdp import _exact
from snapdp._exact import mpfr, mpq
from snapdp._validation import check_epsilon, check_finite, check_positive_finite
from snapdp.distribution import ExactDistribution, exact_distribution_for
from snapdp.errors import ParameterError
from snapdp.parameters import SnappingParameters, compute_parameters

__all__ = [
    "EXHAUSTIVE_INPUTS",
    "SLACK_BOUND",
    "SMALL_SENSITIVITY",
    "ShiftCertificate",
    "ShiftLoss",
    "shift_certificate",
]

SLACK_BOUND = Fraction(1, 1 << 49)
"""The analytic per-cell slack, ≈ 1.8e-15 (docs/data.md, "Calibrated to the whole table (L1)").

For a shift t = d/Δ (scaled units) the ideal snapped Laplace mechanism loses at most ε′·t on every
output; the implementation's output masses are within a relative 2.6·2**-52 of the ideal ones on
the outputs of the ε argument (docs/mechanism.md, "the granularity of U*"), which adds at most
5.2·2**-52 to a log-ratio, and the p-bit arithmetic adds 2η + 12·B̃·η·ε′·t. With
ε′ <= ε − 2η − 2**-48 the total is <= ε·t + 5.2·2**-52 + 2η < ε·t + 2**-49."""

SMALL_SENSITIVITY = 16
"""Integer sensitivities up to this are checked at every integer shift 1..Δ."""

EXHAUSTIVE_INPUTS = 256
"""Integer bounds with upper − lower up to this are checked at every integer input in [L, U]."""

_LOG_PRECISION = 256
_DYADIC_SHIFTS = 3  # Δ, Δ/2, Δ/4 for large Δ
_SMALL_SHIFTS = (1, 2)  # in input units, for large integer Δ (counts and quanta are integers)


@dataclass(frozen=True)
class ShiftLoss:
    """The largest exact loss found for one shift d (input units), over the positions checked.

    ``loss`` is rounded up (a float just above the exact value); ``linear`` = ε·d/Δ exactly;
    ``excess`` = loss − linear (rounded up, may be negative); ``position`` is the input x of the
    worst pair (x, x + d).
    """

    shift: Fraction
    loss: float
    linear: Fraction
    excess: float
    position: Fraction


@dataclass(frozen=True)
class ShiftCertificate:
    """The per-shift certificate of one snapping mechanism (see :func:`shift_certificate`).

    Attributes:
        epsilon, sensitivity, lower, upper: the claim ε·d/Δ is certified against (exact).
        mechanism_sensitivity: the Δ the checked mechanism was built with (= ``sensitivity``
            for the L1 calibration, r·Δ for a rescaled mechanism; docs/mechanism.md).
        shifts: one :class:`ShiftLoss` per shift checked, in increasing order.
        pairs: how many (x, x + d) pairs were compared exactly.
        exhaustive: every integer input in [lower, upper] and every integer shift 1..Δ was
            checked (so ``slack`` is exact for integer data, not just a measurement).
        slack: max(0, max over pairs of loss − ε·d/Δ), rounded up to a dyadic rational.
        slack_bound: what a calibration must subtract per cell: ``slack`` when exhaustive, else
            max(``slack``, :data:`SLACK_BOUND`) (the analytic bound covers unchecked positions).
        delta: the δ of each cell's claim: the library's bound (``parameters.delta``), exactly;
            the loss is measured on the outputs outside a set of mass <= delta (0: pure ε).
        certified: every pair was finite and ``slack`` <= :data:`SLACK_BOUND`.
        note: why not certified (None when certified).
        mechanism_epsilon: the ε the checked mechanism was built with (= ``epsilon`` for the L1
            calibration, r·ε for a rescaled mechanism).
    """

    epsilon: Fraction
    sensitivity: Fraction
    lower: Fraction
    upper: Fraction
    mechanism_sensitivity: Fraction
    shifts: tuple[ShiftLoss, ...]
    pairs: int
    exhaustive: bool
    slack: Fraction
    slack_bound: Fraction
    delta: Fraction
    certified: bool
    note: str | None
    mechanism_epsilon: Fraction


def shift_certificate(
    epsilon: object,
    sensitivity: object,
    lower: object,
    upper: object,
    shifts: Iterable[object] | None = None,
    *,
    mechanism_sensitivity: object | None = None,
    mechanism_epsilon: object | None = None,
) -> ShiftCertificate:
    """Certify, exactly, that the mechanism loses at most ε·d/Δ + slack for each shift d <= Δ.

    The mechanism is the one DESIGN §2 defines for (``mechanism_epsilon`` or ``epsilon``,
    ``mechanism_sensitivity`` or ``sensitivity``, lower, upper), as implemented (never rescaled:
    the rescaling of :mod:`snapdp.rescaling` passes its (r·ε, r·Δ) here). For each shift d
    and each checked position x the exact output distributions of x and x + d
    (:mod:`snapdp.distribution`: bisection over U*, exact rational masses) give the loss: the
    smallest a such that the outputs whose probability ratio (either way) exceeds e^a carry
    mass <= δ (the library's δ for these parameters; 0 in the usual case, where this is the
    plain max log-ratio).

    Shifts (input units): every integer 1..Δ when Δ is an integer <= :data:`SMALL_SENSITIVITY`;
    otherwise 1, 2 (the smallest shifts of integer data, where the additive error weighs most
    against ε·d/Δ) and the dyadic points Δ, Δ/2, Δ/4, each at most upper − lower (a larger
    shift of clamped inputs is a shift of at most the span), or the given ``shifts``.

    Positions: when lower, upper and Δ are integers, upper − lower <= :data:`EXHAUSTIVE_INPUTS`
    and every integer shift is checked, *every* integer pair (x, x + d) in [lower, upper] is
    compared (exhaustive: exact for counts and sums in quanta; inputs outside the bounds are
    clamped first, which maps a pair at shift d to one at a shift <= d). Otherwise the pairs start
    at the lower bound, end at the upper bound (the clamped outputs) and start at two points of
    one grid period from the centre (offsets 0 and ΛΔ/3, rounded down to an integer for integer
    data). Why this suffices, with the
    analytic :data:`SLACK_BOUND` for what is not enumerated: grid_index is exactly
    translation-equivariant (x̃ → x̃ + jΛ maps output k to k + j, the noise does not depend on x̃),
    so the interior outputs' ratios repeat with period Λ·Δ in x; a clamped output's mass is a
    sum of unclamped masses, and a ratio of sums is at most the largest ratio of its terms. The
    outputs' masses, hence the loss, depend on (ε, B̃, x̃, d/Δ) only (docs/data.md). Every
    shift is checked from the centre; from the other three starts only the smallest, middle and
    largest shift (each shift costs one exact distribution per start).

    Deterministic and data-free; cached on the exact parameters. Raises ParameterError for
    invalid parameters; parameters the mechanism refuses (ε too small) give ``certified=False``.
    """
    eps = check_epsilon("epsilon", epsilon)
    delta_1 = Fraction(check_positive_finite("sensitivity", sensitivity))
    lo = Fraction(check_finite("lower", lower))
    hi = Fraction(check_finite("upper", upper))
    if not lo < hi:
        raise ParameterError(
            f"`lower` must be < `upper`, not {float(lo)!r} >= {float(hi)!r}", parameter="lower"
        )
    mech_sens = delta_1
    if mechanism_sensitivity is not None:
        mech_sens = Fraction(check_positive_finite("mechanism_sensitivity", mechanism_sensitivity))
    mech_eps = eps
    if mechanism_epsilon is not None:
        mech_eps = check_epsilon("mechanism_epsilon", mechanism_epsilon)
    chosen: tuple[Fraction, ...] | None = None
    if shifts is not None:
        chosen = tuple(sorted({_check_shift(s, delta_1) for s in shifts}))
        if not chosen:
            raise ParameterError("`shifts` must not be empty", parameter="shifts")
    return _shift_certificate(eps, delta_1, lo, hi, mech_sens, chosen, mech_eps)


# --------------------------------------------------------------------------------------------
# implementation


def _check_shift(s: object, delta_1: Fraction) -> Fraction:
    d = Fraction(check_positive_finite("shifts", s))
    if d > delta_1:
        raise ParameterError(
            f"`shifts` must lie in (0, sensitivity = {float(delta_1)!r}], not {float(d)!r}",
            parameter="shifts",
        )
    return d


def _is_int(q: Fraction) -> bool:
    return q.denominator == 1


def _default_shifts(delta_1: Fraction, span: Fraction) -> tuple[Fraction, ...]:
    if _is_int(delta_1) and delta_1 <= SMALL_SENSITIVITY:
        return tuple(Fraction(d) for d in range(1, int(delta_1) + 1))
    # A dyadic point beyond the bounds' span checks the span instead: clamping maps a pair at
    # shift d > span to one at a shift <= span, and the claim at the span (ε·span/Δ) is the
    # strictest such a pair must meet. Without this, Δ > span left no pair to compare, and a
    # certificate was "certified" with no shift checked.
    grid = {min(delta_1 / (1 << j), span) for j in range(_DYADIC_SHIFTS)}
    grid.update(Fraction(s) for s in _SMALL_SHIFTS if s < delta_1)
    return tuple(sorted(grid))


def _pairs(
    params: SnappingParameters,
    lo: Fraction,
    hi: Fraction,
    mech_sens: Fraction,
    shifts: Sequence[Fraction],
    delta_1: Fraction,
    allow_exhaustive: bool = True,
) -> tuple[list[tuple[Fraction, Fraction]], bool]:
    """The (x, d) pairs to compare, and whether they are exhaustive over integer data."""
    floor_delta = delta_1.numerator // delta_1.denominator
    integral = _is_int(lo) and _is_int(hi)
    # every integer shift 1..⌊Δ₁⌋ is present (shifts are distinct, so a count suffices)
    all_int_shifts = all(_is_int(d) for d in shifts) and len(shifts) == max(shifts) == floor_delta
    if allow_exhaustive and integral and hi - lo <= EXHAUSTIVE_INPUTS and all_int_shifts:
        span = int(hi - lo)
        pairs = [(lo + x, d) for x in range(span + 1) for d in shifts if lo + x + d <= hi]
        return pairs, True
    period = Fraction(params.grid.numerator, params.grid.denominator) * mech_sens
    centre = (lo + hi) / 2
    offsets = [Fraction(0), period / 3]
    if integral and _is_int(centre):
        offsets = [Fraction(int(o)) for o in offsets]  # stay on the integer lattice
    # every shift from the centre; from the other starts the smallest, middle and largest
    # (each extra shift costs one exact distribution per start)
    few = sorted({shifts[0], shifts[len(shifts) // 2], shifts[-1]})
    pairs = [(centre + offsets[0], d) for d in shifts if centre + offsets[0] + d <= hi]
    pairs += [(x, d) for x in (lo, centre + offsets[1]) for d in few if x + d <= hi]
    pairs += [(hi - d, d) for d in few if hi - d >= lo]
    return sorted(set(pairs)), False


@functools.lru_cache(maxsize=256)
def _shift_certificate(
    eps: Fraction,
    delta_1: Fraction,
    lo: Fraction,
    hi: Fraction,
    mech_sens: Fraction,
    chosen: tuple[Fraction, ...] | None,
    mech_eps: Fraction | None = None,
    allow_exhaustive: bool = True,
) -> ShiftCertificate:
    """The certificate of the §2 mechanism (``mech_eps`` or ``eps``, ``mech_sens``, lo, hi)
    against the claim ε·d/Δ₁ (``eps``, ``delta_1``); see :func:`shift_certificate`.
    ``allow_exhaustive=False`` checks the few positions of the non-exhaustive case even for
    narrow integer bounds (its slack bound is then at least :data:`SLACK_BOUND`)."""
    shifts = chosen if chosen is not None else _default_shifts(delta_1, hi - lo)
    m_eps = eps if mech_eps is None else mech_eps

    def fail(note: str, delta: Fraction = Fraction(0)) -> ShiftCertificate:
        return ShiftCertificate(
            eps, delta_1, lo, hi, mech_sens, (), 0, False, Fraction(0), SLACK_BOUND, delta, False,
            note, m_eps,
        )  # fmt: skip

    try:
        params = compute_parameters(m_eps, mech_sens, lo, hi)
    except ValueError as exc:
        return fail(f"the mechanism refuses these parameters ({exc})")
    delta_cell = mpq(params.delta)
    pairs, exhaustive = _pairs(params, lo, hi, mech_sens, shifts, delta_1, allow_exhaustive)
    cache: dict[Fraction, ExactDistribution] = {}

    def dist(x: Fraction) -> ExactDistribution:
        got = cache.get(x)
        if got is None:
            x_tilde = (_exact.exact_rational(x) - params.center) / params.sensitivity
            x_tilde = max(-params.bound, min(params.bound, x_tilde))
            got = exact_distribution_for(params, x_tilde)
            cache[x] = got
        return got

    worst: dict[Fraction, tuple[mpfr, Fraction]] = {}
    for x, d in pairs:
        loss = _pair_loss(dist(x), dist(x + d), delta_cell)
        if d not in worst or loss > worst[d][0]:
            worst[d] = (loss, x)
    up = _exact.directed_context(_LOG_PRECISION, up=True)
    rows: list[ShiftLoss] = []
    slack = mpfr(0)
    infinite = False
    for d in sorted(worst):
        loss, x = worst[d]
        linear = eps * d / delta_1
        if not loss.is_finite():
            infinite = True
            rows.append(ShiftLoss(d, float("inf"), linear, float("inf"), x))
            continue
        excess = up.sub(loss, _exact.round_down(_exact.exact_rational(linear), _LOG_PRECISION))
        slack = max(slack, excess)
        rows.append(
            ShiftLoss(
                d, float(_exact.round_up(loss, 53)), linear, float(_exact.round_up(excess, 53)), x
            )
        )
    delta = Fraction(int(delta_cell.numerator), int(delta_cell.denominator))
    if infinite:
        return ShiftCertificate(
            eps, delta_1, lo, hi, mech_sens, tuple(rows), len(pairs), exhaustive, Fraction(0),
            SLACK_BOUND, delta, False,
            "an output is possible under one input and not under its neighbour beyond the δ "
            "the library states", m_eps,
        )  # fmt: skip
    slack_q = _exact.round_up(slack, 64) if slack > 0 else mpfr(0)
    slack_f = Fraction(*mpq(slack_q).as_integer_ratio()) if slack_q > 0 else Fraction(0)
    certified = slack_f <= SLACK_BOUND
    note = None
    if not certified:
        note = (
            f"the exact loss exceeds ε·d/Δ by {float(slack_f):.3g} for some shift, more than the "
            f"slack {float(SLACK_BOUND):.3g} the calibration allows"
        )
    bound = slack_f if exhaustive else max(slack_f, SLACK_BOUND)
    return ShiftCertificate(
        eps, delta_1, lo, hi, mech_sens, tuple(rows), len(pairs), exhaustive, slack_f, bound,
        delta, certified, note, m_eps,
    )  # fmt: skip


def _pair_loss(first: ExactDistribution, second: ExactDistribution, delta: mpq) -> mpfr:
    """The smallest a = ln(ratio) such that the outputs with a larger ratio carry mass <= delta.

    Both directions; an output possible under one input only has ratio +inf. With delta = 0 this
    is the plain max log-ratio (+inf if the supports differ). Rounded up at 256 bits.
    """
    up = _exact.directed_context(_LOG_PRECISION, up=True)
    worst = mpfr(0)
    for p_dist, q_dist in ((first.masses, second.masses), (second.masses, first.masses)):
        entries: list[tuple[mpq | None, mpq]] = []  # (ratio or None for +inf, numerator mass)
        for label, p in p_dist.items():
            if p == 0:
                continue
            q = q_dist.get(label, mpq(0))
            entries.append((None if q == 0 else p / q, p))
        entries.sort(
            key=lambda e: (e[0] is None, e[0] if e[0] is not None else mpq(0)), reverse=True
        )
        removed = mpq(0)
        for ratio, mass in entries:
            if removed + mass <= delta:
                removed += mass
                continue
            if ratio is None:
                return mpfr("inf")
            if ratio > 1:
                worst = max(worst, up.log(_exact.round_up(ratio, _LOG_PRECISION)))
            break
    return worst
