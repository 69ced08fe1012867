"""Attacks on floating-point Laplace, as code: the snapping mechanism must defeat them (DESIGN §1).

* **Mironov's distinguisher** (CCS 2012): from one output o, decide whether input 0 could have
  produced it. Against textbook Laplace the set of possible outputs depends on the input, so the
  test flags every output of 0 and only a fraction of the outputs of 1. Against snapping both
  inputs have the same support (grid points), so the rates are equal.
* **The precision attack** (Haney et al. 2022): features of the bits of the output — whether it is
  a multiple of 2**-j, how many trailing zero bits its significand has. Under snapping the output is
  c + Δ·kΛ, so these features are functions of the grid index k: they carry no information beyond k
  (post-processing), and their exact distributions follow from :func:`exact_distribution`.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from snapdp._exact import mpq
from snapdp.verify.distribution import ExactDistribution, OutputLabel
from snapdp.verify.laplace import can_produce, laplace_mechanism_branches, numpy_laplace_branches

__all__ = [
    "could_be_zero_numpy",
    "could_be_zero_snapping",
    "could_be_zero_textbook",
    "exact_feature_distribution",
    "multiple_of_power_of_two",
    "sample_exact",
    "trailing_zero_bits",
]

FloatArray = npt.NDArray[np.float64]


def could_be_zero_textbook(outputs: npt.ArrayLike, scale: float) -> npt.NDArray[np.bool_]:
    """Mironov's test against :class:`snapdp.LaplaceMechanism`: can input 0 give each output?"""
    return can_produce(laplace_mechanism_branches(0.0, scale), outputs)


def could_be_zero_numpy(outputs: npt.ArrayLike, scale: float) -> npt.NDArray[np.bool_]:
    """Mironov's test against ``numpy.random.Generator.laplace(0, scale)``."""
    return can_produce(numpy_laplace_branches(0.0, scale), outputs)


def could_be_zero_snapping(
    distribution_of_zero: ExactDistribution, outputs: npt.ArrayLike
) -> npt.NDArray[np.bool_]:
    """Mironov's test against snapping: is each output in the exact support of input 0?"""
    support = [distribution_of_zero.outputs[lab] for lab in distribution_of_zero.support()]
    return np.isin(np.asarray(outputs, dtype=np.float64), np.array(support, dtype=np.float64))


def sample_exact(dist: ExactDistribution, n: int, rng: np.random.Generator) -> FloatArray:
    """n independent outputs drawn from the exact distribution (inverse CDF, float weights).

    The weights are the exact masses rounded to doubles: good to ~1e-16 relative, plenty for the
    statistical tests this feeds; the exact masses are in ``dist.masses``.
    """
    labels = dist.sorted_labels()
    weights = np.array([float(dist.masses[lab]) for lab in labels])
    values = np.array([dist.outputs[lab] for lab in labels])
    idx = rng.choice(len(labels), size=n, p=weights / weights.sum())
    out: FloatArray = values[idx]
    return out


def trailing_zero_bits(outputs: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """The number of trailing zero bits of each output's 52-bit stored significand (52 for 0.0
    and for powers of two)."""
    bits = np.asarray(outputs, dtype=np.float64).view(np.uint64) & np.uint64((1 << 52) - 1)
    lowest = bits & (~bits + np.uint64(1))  # the lowest set bit (0 when bits == 0)
    # log2 of a power of two below 2**52 is exact in float64
    count = np.where(bits == 0, 52, np.log2(np.maximum(lowest, np.uint64(1)).astype(np.float64)))
    return count.astype(np.int64)


def multiple_of_power_of_two(outputs: npt.ArrayLike, j: int) -> npt.NDArray[np.bool_]:
    """Whether each output is an integer multiple of 2**-j (exact: ldexp and floor are exact)."""
    scaled = np.ldexp(np.asarray(outputs, dtype=np.float64), j)
    return np.asarray(np.floor(scaled) == scaled)


def exact_feature_distribution(
    dist: ExactDistribution, feature: dict[OutputLabel, int]
) -> dict[int, mpq]:
    """The exact distribution of a feature of the output (given per label), from ``dist``."""
    result: dict[int, mpq] = {}
    for label, mass in dist.masses.items():
        result[feature[label]] = result.get(feature[label], mpq(0)) + mass
    return result
