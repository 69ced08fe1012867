"""The exact output distribution of a mechanism (DESIGN §6): :func:`exact_distribution`.

The computation itself is :mod:`snapdp.distribution` (a function of the exact parameters, so that
the mechanism's own per-shift certificate can use it); this module re-exports it and adds the
entry point that takes a :class:`~snapdp.SnappingMechanism` and a raw value.
"""

from __future__ import annotations

from collections.abc import Callable

from snapdp._validation import Number, check_value
from snapdp.distribution import (
    FIRST_PATTERN,
    LAST_PATTERN,
    REDRAW_NORMALISER,
    ExactDistribution,
    OutputLabel,
    _SignSweep,
    class_bounds,
    exact_distribution_for,
    output_label,
    pattern_value,
    value_pattern,
)
from snapdp.mechanism import SnappingMechanism
from snapdp.snapping import normalize

__all__ = [
    "FIRST_PATTERN",
    "LAST_PATTERN",
    "REDRAW_NORMALISER",
    "ExactDistribution",
    "OutputLabel",
    "_SignSweep",
    "class_bounds",
    "exact_distribution",
    "exact_distribution_for",
    "output_label",
    "pattern_value",
    "value_pattern",
]


def exact_distribution(
    mechanism: SnappingMechanism,
    value: Number,
    progress: Callable[[int], None] | None = None,
) -> ExactDistribution:
    """Every possible output of ``mechanism.release(value)`` with its exact probability (§6).

    ``mechanism.parameters`` are the parameters the mechanism runs with (rescaled when it rescales;
    docs/mechanism.md, "No power-of-two penalty"), so this is the distribution of what it releases.
    """
    v = check_value("value", value)
    return exact_distribution_for(
        mechanism.parameters, normalize(mechanism.parameters, v), progress
    )
