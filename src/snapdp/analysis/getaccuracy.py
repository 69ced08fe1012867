"""Seed 002's data-dependent GetAccuracy, corrected. USES THE TRUE VALUE: analysis only.

**Never print this next to a release**: it depends on f(D), so publishing it leaks (seed 002
§6.2, DESIGN §4). The accuracy to show before or beside a release is
:func:`snapdp.accuracy.accuracy_bound`, which does not depend on the data.

Seed 002 §6.2 bounds the error N = |output − x| using where x lies between the bounds. Its
derivation needs three corrections:

1. The appendix's Case 2 reads "ε′a + 1 = ln(α − P_L⁺)"; it should read "−ε′a + 1 = …" (DESIGN §3;
   the returned a is right).
2. It calls P_U⁻ = 1 − F(B − f − λ′) a *lower* bound on P_U, the probability that the output is
   clamped to the near bound B; but since Λ/2 < λ′, P_U⁻ >= 1 − F(B − f − Λ/2) >= P_U: it is an
   upper bound. Case 4 ("α − P_L⁺ + P_U⁻") therefore spends probability it does not have and can
   return an a that is exceeded with probability above α.
3. Λ is known exactly, so the seed's replacement of Λ/2 by λ′ (to bound the CDF of |Y| + Λ/2) is
   unnecessary and loses up to λ′/2.

The corrected argument, in sensitivity units with d_near / d_far the distances from x̃ to the
nearer / farther bound (d_near <= d_far):

- the data-independent bound a(α) of :func:`snapdp.accuracy.accuracy_bound` (the worst case over
  the position of x̃, never above DESIGN §4's Λ/2 + λ′·ln(1/α)) holds for every x̃;
- N <= d_far always, so a = d_far is valid for every α;
- for a >= d_near an error above a can only point away from the near bound (toward it the error is
  at most d_near), and it then needs the noise to point the same way beyond a − Λ/2: by the
  symmetry of S, P(N > a) <= ½·P(|Y| > a − Λ/2). So a = max(d_near, t(2α)) is valid, with
  t(β) = Λ/2 + λ′·ln(1/β) the noise-tail bound of DESIGN §4
  (:func:`snapdp.accuracy.noise_tail_accuracy`); for α >= ½, a = max(d_near, Λ/2).

The result is the smallest of the three. The seed's four cases map onto this: Case 1 (the far bound
binds with probability >= α) is d_far, Case 2 is a(α), Cases 3 and 4 are max(d_near, t(2α)). The
roundings of the implementation are covered because a(·) is computed by
:func:`snapdp.accuracy.accuracy_bound` (shared with the mechanism, with its own rigorous slack).
For x outside [lower, upper], the clamping distance |x − clamp(x)| is added.
"""

from __future__ import annotations

import math

from snapdp import _exact
from snapdp._exact import mpq
from snapdp._validation import Number, check_finite, check_probability
from snapdp.accuracy import accuracy_bound, noise_tail_accuracy
from snapdp.parameters import SnappingParameters

__all__ = ["data_dependent_accuracy"]


def _output_ulp(params: SnappingParameters) -> mpq:
    largest = max(abs(params.lower), abs(params.upper))
    return _exact.exact_rational(math.ulp(_exact.rational_to_float(largest)))


def data_dependent_accuracy(params: SnappingParameters, value: Number, alpha: float) -> float:
    """a with P(|output − value| > a) <= alpha, using the TRUE ``value`` (seed 002, corrected).

    ANALYSIS ONLY: depends on the data; never publish it beside a release (module docstring).
    Rounded up to a double; never larger than :func:`snapdp.accuracy.accuracy_bound` plus the
    clamping distance of ``value``.
    """
    level = check_probability("alpha", alpha)
    x = _exact.exact_rational(check_finite("value", value))
    clamped = min(max(x, params.lower), params.upper)
    bias = abs(x - clamped)
    d_near = min(clamped - params.lower, params.upper - clamped)
    d_far = max(clamped - params.lower, params.upper - clamped)
    candidates = [_exact.exact_rational(accuracy_bound(params, level)), d_far]
    ulp = _output_ulp(params)
    if 2 * level < 1:
        one_sided = _exact.exact_rational(noise_tail_accuracy(params, 2 * level))
    else:
        one_sided = params.grid * params.sensitivity / 2 + ulp
    candidates.append(max(d_near + ulp, one_sided))
    return float(_exact.round_up(min(candidates) + bias, 53))
