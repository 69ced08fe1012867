"""Exact sums of squares from 31-bit limbs, and the noise drawn on Spark's executors.

Executor noise (:class:`~snapdp.data.engines.base.ExecutorNoiseEngine`): for many cells the exact
aggregates stay on the executors; ``mapInPandas`` builds one ``SnappingMechanism`` per request on
each executor's default CSPRNG and returns only the noisy value per cell (docs/data.md, "Running
on a cluster").
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any

import numpy as np

from snapdp.errors import ParameterError

__all__ = ["LIMB", "executor_noise", "source_columns", "squares_from_limbs"]

LIMB = 31


def squares_from_limbs(hh: int, hl: int, ll: int) -> int:
    """Σt² from Σhi², Σhi·lo, Σlo² with |t| = hi·2^31 + lo."""
    return (hh << (2 * LIMB)) + (hl << (LIMB + 1)) + ll


# -- executor noise ------------------------------------------------------------------------
def source_columns(source: str, limbs: tuple[str, ...]) -> tuple[str, ...]:
    """The aggregate columns holding a NoiseRequest's exact source."""
    if source == "rows":
        return ("_rows",)
    for prefix, col in (("sum", "_sum"), ("count", "_cnt")):
        if source.startswith(prefix) and source[len(prefix) :].isdigit():
            return (col + source[len(prefix) :],)
    if source.startswith("squares") and source[7:].isdigit():
        return tuple(f"_sq{source[7:]}_{n}" for n in limbs)
    raise ParameterError(f"unknown aggregate {source!r}", parameter="source")


def executor_noise(
    specs: list[tuple[str, tuple[str, ...], tuple[object, object, object, object]]],
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The ``mapInPandas`` function: per partition, one mechanism per request on the default CSPRNG.

    The exact value (a Python int, recombined from its columns) is clamped to
    [⌊lower⌋, ⌈upper⌉] first — the mechanism clamps to [lower, upper] anyway, so this changes
    nothing but keeps the value in int64 for the vectorised path when the bounds allow."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pandas as pd

        from snapdp.mechanism import SnappingMechanism

        # Executors may be shared by jobs that run as one operating-system user: a certificate
        # read from that user's disk cache could have been planted by another job, so executors
        # use only the certificates shipped with the package or computed here (docs/mechanism.md).
        os.environ["SNAPDP_CACHE_DIR"] = "off"
        built = []
        for name, cols, (eps, sens, lower, upper) in specs:
            mech = SnappingMechanism(eps, sens, lower, upper)  # type: ignore[arg-type]
            lo = math.floor(Fraction(lower))  # type: ignore[call-overload]
            hi = math.ceil(Fraction(upper))  # type: ignore[call-overload]
            built.append((name, cols, mech, lo, hi))
        for batch in batches:
            out = pd.DataFrame({"_cell": batch["_cell"].to_numpy(np.int64)})
            for name, cols, mech, lo, hi in built:
                parts = [[int(x) for x in batch[c]] for c in cols]
                exact = (
                    parts[0]
                    if len(parts) == 1
                    else [squares_from_limbs(*p) for p in zip(*parts, strict=True)]
                )
                clamped = [min(max(x, lo), hi) for x in exact]
                if lo >= -(1 << 63) and hi < (1 << 63):
                    out[name] = mech.release_many(np.array(clamped, dtype=np.int64))
                else:
                    out[name] = np.array([mech.release(x) for x in clamped], dtype=np.float64)
            yield out

    return run
