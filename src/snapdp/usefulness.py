"""Is a release worth its budget? Flags and a plain summary from public parameters only.

A small, stable API for every place that shows a release or a plan (``snapdp compare``, the
output of ``snapdp release``, ``snapdp plan``); docs/utility.md ("Flags" and "Plain summary")
explains each number. Nothing here reads data: every quantity is a function of ε, Δ and the
bounds, so it may be printed before, beside or after a release (DESIGN §8.1).

Flags (:func:`flags`), each raised when its measure is **at or above** its threshold:

``almost_pure_noise``
    noise ratio = 2·a(α) / (upper − lower) >= 1, where a(α) is the stated accuracy of
    :func:`snapdp.accuracy.accuracy_bound` (with probability >= 1 − α the release is within ±a(α)
    of the truth). The interval release ± a(α) is then at least as wide as the whole range
    [lower, upper]: the release says little that the bounds did not already say.
``larger_epsilon_helps``
    saving = 1 − a′(α)/a(α) >= 0.25, where a′ is the stated ± of the same mechanism at
    ε·17/16 (1/16 more budget). A ± falls like 1/ε, so 1/16 more ε normally saves about 6%; a
    saving of 25% or more means a step in the grid sits just above this ε (the power-of-two grid
    of ``rescale=False``, or a mechanism whose rescaling could not be certified) and the message
    names the ε that avoids it. With the default rescaling (docs/mechanism.md, "No power-of-two
    penalty") the grid is within 1/16 of λ = Δ/ε and this flag is not raised.
``narrower_bounds_help``
    saving = 1 − a₀(α)/a(α) >= 0.25, where a₀ is the ± without the final rounding of the output
    to a double: when the bounds are so wide that the spacing of doubles near them (one ulp) is a
    large part of the ±, bounds nearer zero would remove that part. The message says how much.

A change of confidence is not flagged: a lower confidence always gives a smaller ± (that is a
trade-off the user chose, not a waste), and the ± at each confidence is shown where it is chosen.
``tail_delta``
    δ >= 1e-9, where δ is the mechanism's stated upper bound on the probability of outputs outside
    the ε argument (:attr:`snapdp.parameters.SnappingParameters.delta`, rounded up). It is tiny
    unless ε/Δ is large: with B̃ of a few units or more the flag is raised from ε/Δ ≈ 686 on, and
    the bound reaches 1 near ε/Δ = 707 (docs/utility.md) — the noise's deep tail, where U* is
    subnormal, then reaches the bounds.

The thresholds are the module constants ``NOISE_THRESHOLD``, ``SAVING_THRESHOLD`` and
``DELTA_THRESHOLD``; each :class:`Flag` repeats its threshold and the measured value.
(``grid_dominates``, raised until 0.x whenever the ± was 25% wider than Laplace noise alone, is
gone: it fired on every ε = 1 release, where nothing the user could change helped much.)
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from msgspec import Struct

from snapdp import _exact
from snapdp._exact import mpq
from snapdp._records import as_dict
from snapdp._validation import Number, check_probability, check_real
from snapdp.accuracy import accuracy_bound
from snapdp.errors import ParameterError
from snapdp.mechanism import SnappingMechanism
from snapdp.parameters import SnappingParameters, compute_parameters
from snapdp.rescaling import mechanism_parameters

__all__ = [
    "DELTA_THRESHOLD",
    "EPSILON_STEP",
    "NOISE_THRESHOLD",
    "SAVING_THRESHOLD",
    "Flag",
    "Measures",
    "flags",
    "flags_for",
    "measures",
    "plain_summary",
    "summary",
]

NOISE_THRESHOLD = 1.0  # 2·a(α)/(upper − lower)
SAVING_THRESHOLD = 0.25  # 1 − (the ± after a change the user can make)/(the ±)
EPSILON_STEP = Fraction(17, 16)  # the larger ε tried: 1/16 more budget
DELTA_THRESHOLD = 1e-9  # δ


class Flag(Struct, frozen=True):
    """A warning about a release's usefulness.

    ``code``: a stable identifier (``almost_pure_noise``, ``larger_epsilon_helps``,
    ``narrower_bounds_help``, ``tail_delta``);
    ``message``: one plain sentence; ``threshold``: the threshold of the measure; ``value``: the
    measure for these parameters (>= ``threshold``, since the flag is raised).
    """

    code: str
    message: str
    threshold: float
    value: float

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return as_dict(self)


class Measures(Struct, frozen=True):
    """The public quantities the flags test (see the module docstring).

    ``accuracy``: a(α); ``range``: upper − lower (rounded to nearest); ``noise_ratio``:
    2·a(α)/(upper − lower); ``grid``: the grid width Λ·Δ; ``laplace_accuracy``: λ·ln(1/α);
    ``grid_cost``: a(α)/(λ·ln(1/α)) − 1 (shown, no longer flagged); ``delta``: the stated δ
    bound, rounded up; ``output_ulp``: the spacing of doubles at the larger bound (outputs are
    rounded to doubles); ``larger_epsilon``: ε·17/16; ``larger_epsilon_accuracy``: the ± there;
    ``epsilon_saving``: 1 − that/a(α); ``unrounded_accuracy``: the ± without the rounding of the
    output to a double; ``bounds_saving``: 1 − that/a(α).
    """

    alpha: float
    epsilon: float
    lower: float
    upper: float
    accuracy: float
    range: float
    noise_ratio: float
    grid: float
    laplace_accuracy: float
    grid_cost: float
    delta: float
    output_ulp: float
    larger_epsilon: float = 0.0
    larger_epsilon_accuracy: float = 0.0
    epsilon_saving: float = 0.0
    unrounded_accuracy: float = 0.0
    bounds_saving: float = 0.0


def _parameters(obj: object) -> SnappingParameters:
    params = obj.parameters if isinstance(obj, SnappingMechanism) else obj
    if not isinstance(params, SnappingParameters):
        raise ParameterError(
            "`mechanism_or_parameters` must be a SnappingMechanism or SnappingParameters, "
            f"not {type(obj).__name__}"
        )
    return params


def measures(mechanism_or_parameters: object, alpha: float = 0.05) -> Measures:
    """The measures behind :func:`flags` for a mechanism (or its exact parameters).

    For a mechanism the larger ε is tried on the mechanism it would build (rescaled or not, as
    it is); for bare parameters, on DESIGN's mechanism for (ε·17/16, Δ, bounds)."""
    params = _parameters(mechanism_or_parameters)
    a_prob = check_probability("alpha", alpha)
    acc = accuracy_bound(params, a_prob)
    # the probe presumes the rescaling's certificate (cheap); only a saving that would be shown
    # is recomputed with the certified parameters, so a message never rests on a presumption
    larger, larger_params = _larger_epsilon(mechanism_or_parameters, params, presume=True)
    larger_acc = accuracy_bound(larger_params, a_prob) if larger_params is not None else acc
    if _saving(larger_acc, acc) >= SAVING_THRESHOLD:
        larger, larger_params = _larger_epsilon(mechanism_or_parameters, params, presume=False)
        larger_acc = accuracy_bound(larger_params, a_prob) if larger_params is not None else acc
    unrounded = accuracy_bound(params, a_prob, rounding=False)
    width = params.upper - params.lower
    eps, sens = _claim(mechanism_or_parameters, params)
    lam = sens / eps  # textbook Laplace scale λ = Δ/ε, exact
    acc_q = _exact.exact_rational(acc)
    log_term = -math.log(a_prob)
    return Measures(
        alpha=a_prob,
        epsilon=_exact.rational_to_float(eps),
        lower=_exact.rational_to_float(params.lower),
        upper=_exact.rational_to_float(params.upper),
        accuracy=acc,
        range=_exact.rational_to_float(width),
        noise_ratio=_exact.rational_to_float(2 * acc_q / width),
        grid=_exact.rational_to_float(params.grid * params.sensitivity),
        laplace_accuracy=_exact.rational_to_float(lam) * log_term,
        grid_cost=_exact.rational_to_float(acc_q / lam) / log_term - 1.0,
        delta=float(_exact.round_up(params.delta, 53)),
        output_ulp=math.ulp(_exact.rational_to_float(max(abs(params.lower), abs(params.upper)))),
        larger_epsilon=float(larger),
        larger_epsilon_accuracy=larger_acc,
        epsilon_saving=_saving(larger_acc, acc),
        unrounded_accuracy=unrounded,
        bounds_saving=_saving(unrounded, acc),
    )


def _claim(obj: object, params: SnappingParameters) -> tuple[mpq, mpq]:
    """(ε, Δ) of the claim: a mechanism's requested ones (not its rescaled ε_r, Δ_r)."""
    if isinstance(obj, SnappingMechanism):
        resc = obj.rescaling
        return mpq(resc.epsilon), mpq(resc.sensitivity)
    return params.epsilon, params.sensitivity


def _saving(better: float, acc: float) -> float:
    """1 − better/acc, rounded down (a saving is never overstated); 0 when acc is 0 or inf."""
    if not (math.isfinite(acc) and acc > 0):
        return 0.0
    saving = 1.0 - better / acc
    return max(0.0, math.nextafter(saving, -math.inf))


def _larger_epsilon(
    obj: object, params: SnappingParameters, presume: bool
) -> tuple[Fraction, SnappingParameters | None]:
    """(ε·17/16, the parameters the same kind of mechanism has there; None if refused)."""
    if isinstance(obj, SnappingMechanism):
        eps = obj.epsilon * EPSILON_STEP
        resc = obj.rescaling
        try:
            return eps, mechanism_parameters(
                eps, resc.sensitivity, Fraction(params.lower), Fraction(params.upper),
                rescale=resc.note != "rescale=False", presume_certified=presume,
            )  # fmt: skip
        except ValueError:
            return eps, None
    eps = Fraction(params.epsilon) * EPSILON_STEP
    try:
        return eps, compute_parameters(eps, params.sensitivity, params.lower, params.upper)
    except ValueError:
        return eps, None


def flags_for(m: Measures) -> list[Flag]:
    """The flags raised by the measures ``m``: each when its measure is >= its threshold."""
    out: list[Flag] = []
    if m.noise_ratio >= NOISE_THRESHOLD:
        out.append(
            Flag(
                "almost_pure_noise",
                f"Almost pure noise: {_pct(m.alpha)} of releases are only known to within "
                f"±{_up(m.accuracy)}, which is as wide as the whole range "
                f"[{_plain(m.lower)}, {_plain(m.upper)}]; a larger ε or narrower bounds "
                "would make the release informative.",
                NOISE_THRESHOLD,
                m.noise_ratio,
            )
        )
    if m.epsilon_saving >= SAVING_THRESHOLD:
        out.append(
            Flag(
                "larger_epsilon_helps",
                f"ε = {_up(m.larger_epsilon, 4)} (1/16 more) would make the ± "
                f"{math.floor(100 * m.epsilon_saving)}% smaller: ±{_up(m.larger_epsilon_accuracy)}"
                f" instead of ±{_up(m.accuracy)}, because a step of the output grid (width "
                f"{_plain(m.grid)}) lies just above this ε (see docs/utility.md).",
                SAVING_THRESHOLD,
                m.epsilon_saving,
            )
        )
    if m.bounds_saving >= SAVING_THRESHOLD:
        out.append(
            Flag(
                "narrower_bounds_help",
                f"Narrower bounds would make the ± {math.floor(100 * m.bounds_saving)}% smaller"
                f" (±{_up(m.unrounded_accuracy)} instead of ±{_up(m.accuracy)}): at bounds this "
                f"wide, outputs are doubles spaced {m.output_ulp:.3g} apart (see "
                "docs/utility.md).",
                SAVING_THRESHOLD,
                m.bounds_saving,
            )
        )
    if m.delta >= DELTA_THRESHOLD:
        out.append(
            Flag(
                "tail_delta",
                f"At ε = {_plain(m.epsilon)} the guarantee needs δ <= {_up(m.delta)}: the noise's "
                "deep tail reaches the bounds, so the privacy is not pure ε (see "
                "docs/mechanism.md); a smaller ε or narrower bounds remove it.",
                DELTA_THRESHOLD,
                m.delta,
            )
        )
    return out


def flags(mechanism_or_parameters: object, alpha: float = 0.05) -> list[Flag]:
    """Warnings about a release's usefulness, from public parameters only (module docstring).

    ``mechanism_or_parameters``: a :class:`~snapdp.SnappingMechanism` or its
    :class:`~snapdp.parameters.SnappingParameters`; ``alpha``: the failure probability of the
    stated ± (default 0.05: the 95% accuracy). Returns the raised flags, in the order
    almost_pure_noise, larger_epsilon_helps, narrower_bounds_help, tail_delta (empty when none
    is raised).
    """
    return flags_for(measures(mechanism_or_parameters, alpha))


# -- plain words ----------------------------------------------------------------------------------


def _plain(x: float) -> str:
    """A parameter as the user would write it: 100 not 100.0, 0.001, 1e+300."""
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return repr(float(x))


def _up(x: float, digits: int = 3) -> str:
    """``x`` rounded *up* to ``digits`` significant digits (a stated ± stays true), without
    trailing zeros, and without an exponent for magnitudes in [1e-15, 1e15): 3.9078 → 3.91,
    2.9957 → 3, 3 → 3, 1.4870169e284 → 1.49e+284."""
    if not math.isfinite(x):
        return repr(x)
    if x == 0:
        return "0"
    exponent = math.floor(math.log10(abs(x)))
    shift = digits - 1 - exponent
    scale = mpq(10) ** shift if shift >= 0 else mpq(1, 10 ** (-shift))
    q = _exact.exact_rational(x) * scale
    n = -((-int(q.numerator)) // int(q.denominator))  # ⌈q⌉, an integer of `digits` digits
    if abs(n) >= 10**digits:  # 9.999 → 10.0: one more digit before the point
        n //= 10
        exponent += 1
        shift -= 1
    if abs(exponent) < 15:
        value = mpq(n) / mpq(10) ** shift if shift >= 0 else mpq(n) * mpq(10) ** (-shift)
        text = f"{float(value):.{max(shift, 0)}f}"
    else:
        mantissa = str(abs(n))
        text = ("-" if n < 0 else "") + mantissa[0] + "." + mantissa[1:]
        text = text.rstrip("0").rstrip(".") + f"e{exponent:+d}"
        return text
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _pct(alpha: float) -> str:
    return f"{_up(100 * (1 - alpha), 4)}%"


def plain_summary(
    epsilon: Number | str,
    lower: Number,
    upper: Number,
    accuracy95: float,
    discrete_accuracy95: float | None = None,
    laplace_accuracy95: float | None = None,
    grid: float | None = None,
) -> str:
    """One or two sentences a non-specialist understands, e.g.

    "With ε = 1 and values in [0, 100], 95% of releases are within ±3.91 of the truth; discrete
    Laplace would be within ±3 and the textbook mechanism within ±3 but it leaks; the difference is
    the cost of the grid of width 2."

    ``accuracy95``: the snapping mechanism's 95% accuracy a(0.05); ``discrete_accuracy95`` and
    ``laplace_accuracy95``: the discrete Laplace and textbook mechanisms' at the same ε and bounds
    (optional); ``grid``: the grid width Λ·Δ (optional). Every ± is rounded *up* to three
    significant digits, so each statement stays true. When the ± is at least half the range, a
    second sentence says the release is almost pure noise.
    """
    eps_text = (
        epsilon.strip()
        if isinstance(epsilon, str)
        else _plain(float(check_real("epsilon", epsilon)))
    )
    lo = float(check_real("lower", lower))
    hi = float(check_real("upper", upper))
    acc = float(check_real("accuracy95", accuracy95))
    text = (
        f"With ε = {eps_text} and values in [{_plain(lo)}, {_plain(hi)}], 95% of releases are "
        f"within ±{_up(acc)} of the truth"
    )
    others = []
    if discrete_accuracy95 is not None:
        others.append(f"discrete Laplace would be within ±{_up(float(discrete_accuracy95))}")
    if laplace_accuracy95 is not None:
        verb = (
            "and the textbook mechanism within"
            if others
            else "the textbook mechanism would be within"
        )
        others.append(f"{verb} ±{_up(float(laplace_accuracy95))} but it leaks")
    if others:
        text += "; " + " ".join(others)
        best = min(float(v) for v in (discrete_accuracy95, laplace_accuracy95) if v is not None)
        if grid is not None and acc > best:
            text += f"; the difference is the cost of the grid of width {_plain(float(grid))}"
        elif acc <= best:
            text += "; snapping is as accurate here"
    text += "."
    if math.isfinite(acc) and 2 * acc >= hi - lo:
        text += (
            " That is as wide as the range itself: the release is almost pure noise; a larger ε "
            "or narrower bounds would make it informative."
        )
    return text


def summary(mechanism_or_parameters: object) -> str:
    """:func:`plain_summary` for a mechanism from its public parameters alone: its 95% ±, the
    textbook Laplace mechanism's at the same ε (λ·ln 20, capped at the range) and the grid width.

    For the one-line statement beside a release or a plan; ``snapdp compare`` adds discrete
    Laplace (docs/utility.md).
    """
    m = measures(mechanism_or_parameters, 0.05)
    params = _parameters(mechanism_or_parameters)
    width = params.upper - params.lower
    laplace = min(_exact.exact_rational(m.laplace_accuracy), width)
    return plain_summary(
        m.epsilon,
        m.lower,
        m.upper,
        m.accuracy,
        laplace_accuracy95=_exact.rational_to_float(laplace),
        grid=m.grid,
    )
