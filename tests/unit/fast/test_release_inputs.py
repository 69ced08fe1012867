"""release() keeps its input checks on the fast dispatch, and numpy scalars agree with floats."""

from __future__ import annotations

import math

import numpy as np
import pytest

from snapdp import SnappingMechanism
from snapdp.errors import ParameterError


@pytest.mark.parametrize("bad", [math.nan, np.float64("nan"), True, "3", None])
def test_bad_values_are_rejected(bad: object) -> None:
    mech = SnappingMechanism(1.0, 1, 0, 100, rng=np.random.default_rng(0))
    with pytest.raises(ParameterError, match="`value`"):
        mech.release(bad)  # type: ignore[arg-type]


def test_numpy_scalars_and_python_numbers_give_the_same_output() -> None:
    values = [42.0, np.float64(42.0), np.float32(42.0), 42, np.int64(42), np.uint8(42)]
    outs = []
    for v in values:
        mech = SnappingMechanism(0.3, 1, 0, 100, rng=np.random.default_rng(7))
        outs.append([mech.release(v) for _ in range(200)])  # type: ignore[arg-type]
    assert all(o == outs[0] for o in outs)
