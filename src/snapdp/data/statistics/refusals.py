"""Refusals decidable from the declaration and the parameters alone (DESIGN §8.7; docs/plans.md,
"Refused before the data is read").

Everything here is a function of a compiled query and its calibrated noise, which are functions
of the public declaration, the query and ε: so validation, ``--dry-run``, ``snapdp plan`` and
``snapdp release`` refuse the same parameters with the same message, before the data is opened.

* **Exact sums.** The engines sum quanta of a value column as exact integers and need
  |bound|·10^decimals (plus rounding room) below 2^64; wider bounds are refused here, naming the
  column's ``upper`` (or ``lower``) bound.
* **Very large ε.** At a per-mechanism ε past about 680 the snapping mechanism's noise falls below
  the spacing of doubles near its bounds and its δ (the probability that an output is not
  ε-indistinguishable) grows from below 1e-12 to 1 within a few units of ε. A release whose
  mechanisms together have δ above :data:`DELTA_LIMIT` is refused: it would not be the ε-DP
  release it claims to be (it would be close to publishing the exact values).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from fractions import Fraction

from snapdp._rational import shown_rational
from snapdp.data.statistics import Compiled, Noise
from snapdp.errors import ParameterError
from snapdp.mechanism import SnappingMechanism
from snapdp.rescaling import rescaling_for

__all__ = ["DELTA_LIMIT", "check_release"]

#: The largest total δ a release may have; above it the release is refused (see the module
#: docstring). At ordinary ε the snapping mechanism's δ is below 1e-20.
DELTA_LIMIT = 1e-9
#: Quanta magnitudes the engines can sum exactly (plus the rounding room they keep).
_SUM_LIMIT = 1 << 64


def check_release(
    compiled: Compiled, noises: Sequence[Noise], epsilon_name: str = "epsilon"
) -> None:
    """Refuse, with a ParameterError naming the parameter, what the data cannot change: value
    bounds too wide to sum exactly, and an ε so large that the release's δ exceeds
    :data:`DELTA_LIMIT`. ``epsilon_name``: how the caller's user wrote ε (``--epsilon``,
    ``query[2].epsilon``)."""
    value = compiled.value
    if value is not None:
        scale = 10**value.decimals
        if max(abs(value.lower_q), abs(value.upper_q)) + 2 * scale + 2 >= _SUM_LIMIT:
            col = value.column
            side = "upper" if abs(value.upper_q) >= abs(value.lower_q) else "lower"
            raise ParameterError(
                f"column {col.name!r}: bounds [{_short(col.lower)}, {_short(col.upper)}] are too "
                f"wide to sum exactly: |bound|·10^{value.decimals} must stay below 2^64 (about "
                f"{float(_SUM_LIMIT) / scale:.3g} at this column's precision); narrow `{side}` "
                "(docs/data.md, 'Sensitivities')",
                parameter=side,
            )
    if _delta_surely_within(noises):
        return
    delta = 0.0
    for n in noises:
        if n.part.source == "exponential":  # exact, pure ε: no δ (docs/exponential.md)
            continue
        mech = SnappingMechanism(n.epsilon, n.sensitivity, n.part.lower, n.part.upper)
        delta += n.cells * mech.privacy.delta
    if delta > DELTA_LIMIT:
        raise ParameterError(
            f"`{epsilon_name}` = {_short(compiled.epsilon)} is too large for "
            f"{compiled.query.label}: its mechanisms' δ would be {min(delta, 1.0):.3g} (above "
            f"{DELTA_LIMIT:g}): at a per-mechanism ε this large the noise is finer than the "
            "doubles it is added to, and the release would not be ε-DP. Use a smaller "
            f"`{epsilon_name}` (docs/plans.md, 'Refused before the data is read')",
            parameter="epsilon",
        )


def _delta_surely_within(noises: Sequence[Noise]) -> bool:
    """Whether the release's δ is at most :data:`DELTA_LIMIT` whatever the mechanisms' per-shift
    certificates say, decided without running them (they take seconds per new parameter set).

    A mechanism runs either on its presumed rescaling (ε_r, Δ_r) (the certificate holds) or on
    (ε, Δ) itself (it does not, or the rescaling is not applied): :mod:`snapdp.rescaling` takes
    every other decision before the certificate. Its δ is that of one of those two parameter
    sets, so the larger of the two bounds it. False (then the caller computes the exact δ) when
    the bound passes the limit or either set cannot be built."""
    delta = 0.0
    try:
        for n in noises:
            resc = rescaling_for(
                n.epsilon, n.sensitivity, n.part.lower, n.part.upper, presume_certified=True
            )
            today = _delta_of(n.epsilon, n.sensitivity, n.part.lower, n.part.upper)
            rescaled = today
            if resc.applied:
                rescaled = _delta_of(
                    resc.mechanism_epsilon, resc.mechanism_sensitivity, n.part.lower, n.part.upper
                )
            delta += n.cells * max(today, rescaled)
    except (ParameterError, ValueError):
        return False
    return delta <= DELTA_LIMIT


@functools.lru_cache(maxsize=4096)
def _delta_of(epsilon: Fraction, sensitivity: int | Fraction, lower: int, upper: int) -> float:
    """The δ a mechanism states when it runs DESIGN §2 on exactly these parameters (its
    ``privacy.delta`` with the rescaling off: the same parameters, so the same δ)."""
    mech = SnappingMechanism(epsilon, sensitivity, lower, upper, rescale=False)
    return mech.privacy.delta


def _short(x: Fraction | None) -> str:
    if x is None:
        return "?"
    return shown_rational(x)  # as typed, exactly (capped in length)
