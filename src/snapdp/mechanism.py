"""Mechanisms: the snapping mechanism (exact path) and the textbook Laplace baseline.

``SnappingMechanism`` implements DESIGN §2 exactly; see :mod:`snapdp.snapping` for the arithmetic
and :mod:`snapdp.randomness` for the draw. ``LaplaceMechanism`` is the unsafe textbook mechanism,
kept as the baseline for comparisons and attack demonstrations.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from snapdp import _exact
from snapdp import accuracy as _accuracy
from snapdp._rational import format_rational, shown_number
from snapdp._validation import (
    Number,
    check_epsilon,
    check_finite,
    check_positive_finite,
    check_value,
)
from snapdp.errors import ParameterError
from snapdp.fast import default_threads, release_chunks, release_one
from snapdp.fast_plan import FastPlan, plan_for
from snapdp.guarantee import PrivacyGuarantee
from snapdp.parameters import SnappingParameters, compute_parameters
from snapdp.randomness import BitSource, bit_source_from, draw_uniform, is_private
from snapdp.rescaling import Rescaling, rescaling_for
from snapdp.snapping import normalize, snapped_output

__all__ = ["LaplaceMechanism", "SnappingMechanism", "as_value_array"]


def as_value_array(name: str, values: object) -> npt.NDArray[Any]:
    """``values`` as a numeric numpy array, checked: no NaN, no bools, nothing rounded unseen.

    Integer arrays are kept as integers so that their values are used exactly. A Python sequence
    that numpy would turn into float64 with a loss (an int beyond 2**53 next to a float, a
    ``Fraction``, a numpy longdouble) becomes an **object** array of the exact values instead,
    which :meth:`SnappingMechanism.release_many` releases one by one on the exact path
    (docs/mechanism.md, "Exact inputs").
    """
    if not isinstance(values, np.ndarray):
        exact = _exact_objects(name, values)
        if exact is not None:
            return exact
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"`{name}` must be an array of real numbers: {exc}") from None
    if arr.ndim == 0:
        raise ParameterError(f"`{name}` must be a sequence or array, not a scalar; use release()")
    if arr.dtype.kind not in "iuf":
        raise ParameterError(
            f"`{name}` must hold ints or floats, not dtype {arr.dtype} "
            "(convert explicitly; nothing is coerced silently)"
        )
    if arr.dtype.kind == "f":
        if arr.dtype.itemsize > 8:
            raise ParameterError(f"`{name}` must be float64 or narrower, not {arr.dtype}")
        nan = np.isnan(arr)
        if nan.any():
            first = tuple(int(i) for i in np.unravel_index(int(np.argmax(nan)), arr.shape))
            where = first[0] if len(first) == 1 else first
            raise ParameterError(f"`{name}` must not contain NaN (first at index {where})")
    return arr


def _exact_objects(name: str, values: object) -> npt.NDArray[Any] | None:
    """An object array of checked exact values if the flat sequence ``values`` holds a number that
    float64 would round (an int past 2**53 among floats, a Fraction, a longdouble); else None."""
    if not isinstance(values, (list, tuple)) or any(
        isinstance(v, (list, tuple, np.ndarray)) for v in values
    ):
        return None
    kinds = {type(v) for v in values}
    lossy = any(
        isinstance(v, Fraction)
        or (isinstance(v, np.floating) and v.dtype.itemsize > 8)
        or (isinstance(v, int) and not isinstance(v, bool) and float(v) != v)
        for v in values
    )
    if not lossy or kinds <= {int}:  # all-int lists stay integer arrays (exact)
        return None
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        out[i] = check_value(f"{name}[{i}]", v)
    return out


def _fraction(x: Number) -> Fraction:
    """The exact value of a checked number as a Fraction of Python ints."""
    q = _exact.exact_rational(x)
    return Fraction(int(q.numerator), int(q.denominator))


def _check_threads(threads: object) -> int:
    """``threads`` for release_many: None (all cores) or an int >= 1."""
    if threads is None:
        return default_threads()
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
        raise ParameterError(
            f"`threads` must be None (all cores) or an integer >= 1, not {threads!r}"
        )
    return int(threads)


@functools.lru_cache(maxsize=1024)
def _parameters(
    epsilon: Fraction, sensitivity: Fraction, lower: Fraction, upper: Fraction, rescale: bool
) -> tuple[Rescaling, SnappingParameters]:
    """A mechanism's rescaling and DESIGN §2 parameters for its exact public inputs: a pure
    function of them (every step converts its inputs exactly), kept per process, because one
    release builds mechanisms for the same few parameter sets many times (planning, refusals,
    noise, the printed usefulness). A refused (ε, Δ) raises every time (nothing is kept)."""
    try:
        direct = compute_parameters(epsilon, sensitivity, lower, upper)
    except ValueError as exc:  # DESIGN §2 refuses (ε, Δ): say so, rescaled or not
        raise ParameterError(str(exc)) from None
    if not rescale:
        return Rescaling(
            epsilon, sensitivity, Fraction(1), epsilon, sensitivity, Fraction(0),
            False, False, "rescale=False",
        ), direct  # fmt: skip
    rescaling = rescaling_for(epsilon, sensitivity, lower, upper)
    run_on = (rescaling.mechanism_epsilon, rescaling.mechanism_sensitivity)
    if run_on == (epsilon, sensitivity):  # not rescaled: DESIGN §2 on (ε, Δ) itself
        return rescaling, direct
    return rescaling, compute_parameters(*run_on, lower, upper)


class SnappingMechanism:
    """Mironov's snapping mechanism, exactly as DESIGN §2 specifies.

    Releases f(D) for a query with ``sensitivity`` Δ (|f(D) − f(D′)| <= Δ for neighbours), with
    outputs in [``lower``, ``upper``] on the grid c + Δ·Λ·ℤ (c the midpoint). Inputs outside the
    bounds, ±inf included, are clamped first. Parameters are public.

    ``rng``: None (default) draws from a DRBG (AES-256-CTR keyed from the OS, with fast key
    erasure; :class:`~snapdp.randomness.DRBGSource`); ``rng=OSRandomSource()`` reads the OS CSPRNG
    directly (docs/mechanism.md, "Randomness"). A ``numpy.random.Generator`` makes releases
    reproducible — and **not private**: use it for tests and verification only.

    ``rescale`` (default True): remove the power-of-two penalty of DESIGN §2's grid by running §2
    with a public, certified rescaling (ε_r, Δ_r) = (r·(ε − 2**-49), r·Δ), r >= 1 a multiple of
    1/16 (:mod:`snapdp.rescaling`, docs/mechanism.md, "No power-of-two penalty"): the grid is
    then within 1/16 of λ = Δ/ε instead of up to 2λ, and the guarantee is unchanged (ε-DP, with
    the stated δ, for |f(D) − f(D′)| <= Δ), certified by the exact verifier. ``rescaling``
    reports r, Δ_r, ε_r and, when the rescaling was not applied, why. ``rescale=False`` gives
    DESIGN §2 on (ε, Δ) itself, the mechanism of snapdp 0.x before this option.

    Exact attributes are in ``parameters`` (:class:`~snapdp.parameters.SnappingParameters`, for
    (ε_r, Δ_r) when rescaled); the float attributes below are their roundings to the nearest
    double, for display.
    """

    def __init__(
        self,
        epsilon: Number,
        sensitivity: Number,
        lower: Number,
        upper: Number,
        *,
        rng: np.random.Generator | BitSource | None = None,
        rescale: bool = True,
    ) -> None:
        if not isinstance(rescale, bool):
            raise ParameterError(f"`rescale` must be True or False, not {rescale!r}")
        self.epsilon: Fraction = check_epsilon("epsilon", epsilon)
        self.sensitivity = check_positive_finite("sensitivity", sensitivity)
        self.lower = check_finite("lower", lower)
        self.upper = check_finite("upper", upper)
        if not self.lower < self.upper:
            raise ParameterError(
                f"`lower` must be < `upper`, not lower = {shown_number(self.lower)}, "
                f"upper = {shown_number(self.upper)}"
            )
        exact = (_fraction(v) for v in (self.sensitivity, self.lower, self.upper))
        self.rescaling: Rescaling
        self.parameters: SnappingParameters
        self.rescaling, self.parameters = _parameters(self.epsilon, *exact, rescale)
        self._source: BitSource = bit_source_from(rng)
        self._private = is_private(self._source)
        self._plan: FastPlan | None = plan_for(self.parameters)

    @property
    def bit_source(self) -> BitSource:
        """The source this mechanism draws from (shared by a query's other mechanisms, such as
        the exact exponential mechanism of quantiles, docs/exponential.md)."""
        return self._source

    # -- parameters, as doubles -------------------------------------------------------------
    @property
    def precision(self) -> int:
        """p: the MPFR precision in bits (DESIGN §2.2)."""
        return self.parameters.precision

    @property
    def eta(self) -> float:
        """η = 2**-p (0.0 if p > 1074; the exact value is ``parameters.eta``)."""
        return math.ldexp(1.0, -self.precision)

    @property
    def epsilon_prime(self) -> float:
        """ε′, the privacy parameter of the embedded Laplace noise, rounded to nearest."""
        return float(self.parameters.epsilon_prime)

    @property
    def scale(self) -> float:
        """λ′ = 1/ε′ (rounded up at p bits), in units of the mechanism's sensitivity Δ_r (= Δ
        when not rescaled), rounded to nearest double."""
        return float(self.parameters.scale)

    @property
    def Lambda(self) -> float:
        """Λ, the smallest power of two >= λ′ (exact: a power of two), in units of Δ_r."""
        return math.ldexp(1.0, self.parameters.lambda_exponent)

    @property
    def mechanism_sensitivity(self) -> float:
        """Δ_r = r·Δ, the sensitivity DESIGN §2 runs with (= Δ when not rescaled), rounded."""
        return _exact.rational_to_float(self.parameters.sensitivity)

    @property
    def bound(self) -> float:
        """B̃ = (upper − lower)/(2·Δ_r), rounded to nearest (inf past the double range)."""
        return _exact.rational_to_float(self.parameters.bound)

    @property
    def grid_spacing(self) -> float:
        """Λ·Δ_r: the spacing of the output grid in the units of the data (rounded to nearest)."""
        return _exact.rational_to_float(self.parameters.grid * self.parameters.sensitivity)

    @property
    def privacy(self) -> PrivacyGuarantee:
        """The guarantee: (ε, δ)-DP for |f(D) − f(D′)| <= sensitivity (DESIGN §2.8), per value.

        δ is the verifier's bound on the mass of one-sided outputs (``parameters.delta``) plus,
        when the vectorised path applies, ``timing_delta`` = (1 + e^ε)·q, q the probability that
        a chunk of :data:`snapdp.fast_plan.CHUNK` values needs more exact evaluations than its fixed
        number F, which makes the running time of ``release_many`` depend on the data (at most
        2**-80; docs/fast-path.md, "Constant work per chunk"). Counting it once per value is
        conservative: a chunk holds many values. A single ``release`` is not padded; its time
        reveals whether its one sample fell back (probability <= ``fallback_probability``).
        """
        delta = float(_exact.round_up(self.parameters.delta, 53))
        if self._plan is not None and self._plan.timing_delta > 0:  # release_many's constant work
            delta = min(1.0, math.nextafter(delta + self._plan.timing_delta, math.inf))
        return PrivacyGuarantee(
            epsilon=float(self.epsilon),
            delta=delta,
            epsilon_exact=self.epsilon,
            relation=f"|f(D) − f(D′)| <= {self.sensitivity!r}"
            + ("" if self._private else " — NOT PRIVATE: seeded rng"),
        )

    # -- releases ---------------------------------------------------------------------------
    def release(self, value: Number) -> float:
        """Release one value: DESIGN §2 exactly, one final rounding to a double.

        Computed in doubles with a proven error bound and recomputed exactly when the bound does not
        decide the output (:func:`snapdp.fast.release_one`); the result is the exact path's, bit
        for bit.
        """
        plan = self._plan
        if plan is not None and ((type(value) is float and value == value) or type(value) is int):
            return release_one(self.parameters, plan, value, self._source)  # checked: not NaN
        v = check_value("value", value)
        if plan is not None and not isinstance(v, Fraction):
            return release_one(self.parameters, plan, v, self._source)
        return self._release_exact(v)

    def _release_exact(self, value: Number) -> float:
        """The exact path for one checked value: draw (S, U*), then ``snapped_output``."""
        draw = draw_uniform(self._source)
        return snapped_output(self.parameters, normalize(self.parameters, value), draw.sign, draw.u)

    def release_many(
        self, values: object, *, threads: int | None = None
    ) -> npt.NDArray[np.float64]:
        """Release each value independently; a float64 array of the same shape.

        Vectorised (DESIGN §7, :mod:`snapdp.fast`, docs/fast-path.md), bit for bit the exact
        path's doubles. Up to :data:`snapdp.fast_plan.CHUNK` values read the mechanism's bit source
        in order, exactly as :meth:`release` on each value in turn. Larger arrays are cut into
        chunks of ``CHUNK`` values, chunk i reading its own substream of the source (DRBG:
        children keyed from its output; seeded: ``SeedSequence`` children), run on ``threads``
        threads (default: all cores, ``os.cpu_count()``); the output does not depend on
        ``threads``. Each chunk does a fixed number of exact evaluations (constant work; the
        rare excess is in ``privacy.delta``). Parameters outside the vectorised path's range (see
        :func:`snapdp.fast_plan.plan_for`) use the exact path, on one thread.
        """
        n_threads = _check_threads(threads)
        arr = as_value_array("values", values)
        if arr.dtype == object:  # exact values that float64 would round: one by one, exactly
            return np.array([self.release(v) for v in arr], dtype=np.float64)
        out = np.empty(arr.shape, dtype=np.float64)
        flat_in = arr.reshape(-1)
        flat_out = out.reshape(-1)
        if self._plan is not None:
            release_chunks(self.parameters, self._plan, flat_in, self._source, flat_out, n_threads)
            return out
        as_int = arr.dtype.kind in "iu"
        for i in range(flat_in.size):
            flat_out[i] = self._release_exact(int(flat_in[i]) if as_int else float(flat_in[i]))
        return out

    # -- accuracy (DESIGN §4), independent of the data -------------------------------------
    def accuracy(self, alpha: float) -> float:
        """a such that P(|output − x| > a) <= alpha for every x in [lower, upper] (DESIGN §4)."""
        return _accuracy.accuracy_bound(self.parameters, alpha)

    def failure_probability(self, accuracy: float) -> float:
        """α such that P(|output − x| > accuracy) <= α for every x in [lower, upper] (DESIGN §4)."""
        return _accuracy.failure_probability_bound(self.parameters, accuracy)

    def __repr__(self) -> str:
        rng = "" if self._private else ", rng=<seeded: NOT PRIVATE>"
        if self.rescaling.note == "rescale=False":
            rng += ", rescale=False"
        return (
            f"SnappingMechanism(epsilon={format_rational(self.epsilon)!r}, "
            f"sensitivity={self.sensitivity!r}, "
            f"lower={self.lower!r}, upper={self.upper!r}{rng})"
        )

    def __str__(self) -> str:
        return (
            f"{self!r}\n  guarantee: {self.privacy}\n"
            f"  output grid: multiples of Λ·Δ = {self.grid_spacing:g} around the midpoint, "
            f"clamped to [{self.lower!r}, {self.upper!r}]\n"
            f"  95% accuracy: ±{self.accuracy(0.05):.6g}"
        )


class LaplaceMechanism:
    """The textbook floating-point Laplace mechanism. **UNSAFE — DO NOT USE FOR PRIVATE DATA.**

    Computes ``value + λ·S·ln(U)`` in doubles, with λ = sensitivity/epsilon, S a random sign and U
    uniform on the grid {k·2**-53 : k = 1, …, 2**53}. Which doubles it can output depends on the
    input, so one output can rule an input out (Mironov, CCS 2012; DESIGN §1). It is here only as
    the baseline for utility comparisons and attack demonstrations.

    One 64-bit word per sample: bit 63 is the sign, bits 0..52 give k − 1.
    """

    def __init__(
        self, epsilon: Number, sensitivity: Number, *, rng: np.random.Generator | None = None
    ) -> None:
        self.epsilon = float(check_epsilon("epsilon", epsilon))  # a float mechanism: ε as a double
        self.sensitivity = check_positive_finite("sensitivity", sensitivity)
        self.scale = float(self.sensitivity) / self.epsilon
        self._source = bit_source_from(rng)

    def release(self, value: Number) -> float:
        """value + λ·S·ln(U) in doubles. UNSAFE: see the class docstring."""
        v = check_value("value", value)
        return float(self._noisy(np.array([float(v)]))[0])

    def release_many(self, values: object) -> npt.NDArray[np.float64]:
        """Elementwise :meth:`release`, consuming one word per value in order. UNSAFE."""
        arr = np.asarray(as_value_array("values", values), dtype=np.float64)
        return self._noisy(arr.reshape(-1)).reshape(arr.shape)

    def _noisy(self, values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        words = self._source.words(values.size)
        return laplace_textbook(values, words, self.scale)

    def __repr__(self) -> str:
        return (
            f"LaplaceMechanism(epsilon={self.epsilon!r}, sensitivity={self.sensitivity!r})"
            "  # UNSAFE"
        )


def laplace_textbook(
    values: npt.NDArray[np.float64], words: npt.NDArray[np.uint64], scale: float
) -> npt.NDArray[np.float64]:
    """The textbook computation, as a pure function of the values and the random words."""
    sign = np.where((words >> np.uint64(63)) == 1, -1.0, 1.0)
    k = (words & np.uint64((1 << 53) - 1)).astype(np.float64) + 1.0  # exact: k <= 2**53
    u = k * 2.0**-53
    out: npt.NDArray[np.float64] = values + scale * (sign * np.log(u))
    return out
