import numpy as np

from snapdp import SnappingMechanism


def test_release_is_on_grid_and_in_bounds() -> None:
    mech = SnappingMechanism(1.0, 1, 0, 100, rng=np.random.default_rng(0))
    out = mech.release_many(np.full(200, 42.0))
    assert np.all((out >= 0) & (out <= 100))
    assert np.all(((out - 50) / 2) == np.round((out - 50) / 2))
