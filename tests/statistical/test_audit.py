"""The black-box audit: snapping stays at or below its ε, textbook Laplace exceeds it (issue 4)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from snapdp import LaplaceMechanism, ParameterError, SnappingMechanism
from snapdp.verify import audit, clopper_pearson, exact_distribution, threshold_events
from snapdp.verify.attacks import could_be_zero_snapping, could_be_zero_textbook


def _seeded(factory: type, *args: float) -> object:
    seeds: Iterator[int] = iter((101, 202))
    return lambda: factory(*args, rng=np.random.default_rng(next(seeds)))


def test_audit_of_snapping_stays_below_epsilon() -> None:
    mech = SnappingMechanism(1.0, 1.0, -8.0, 8.0)
    dist0 = exact_distribution(mech, 0.0)
    events = threshold_events([-3.0, -1.0, 1.0, 3.0, 5.0])
    events["could be 0"] = lambda o: could_be_zero_snapping(dist0, o)
    result = audit(_seeded(SnappingMechanism, 1.0, 1.0, -8.0, 8.0), 0.0, 1.0, 1_000_000, events)
    assert 0.9 < result.epsilon_lower_bound <= 1.0  # the audit sees most of ε, never more
    assert next(e for e in result.events if e.name == "could be 0").epsilon_lower_bound == 0


def test_audit_of_textbook_exceeds_epsilon_on_mironov_example() -> None:
    events = {"could be 0": lambda o: could_be_zero_textbook(o, 3.0)}
    events.update(threshold_events([0.0, 1.0, 3.0]))
    result = audit(_seeded(LaplaceMechanism, 1 / 3, 1.0), 0.0, 1.0, 100_000, events)
    assert result.epsilon_lower_bound > 1 / 3
    assert result.worst_event == "could be 0"


def test_clopper_pearson_against_known_values() -> None:
    """Exact binomial tail identities at the interval ends (independent of scipy's beta)."""
    from scipy.stats import binom

    low, high = clopper_pearson(30, 100, 0.99)
    assert binom.sf(29, 100, low) == pytest.approx(0.005, rel=1e-6)
    assert binom.cdf(30, 100, high) == pytest.approx(0.005, rel=1e-6)
    assert clopper_pearson(0, 10, 0.9)[0] == 0.0
    assert clopper_pearson(10, 10, 0.9)[1] == 1.0


def test_bad_audit_arguments() -> None:
    mech = LaplaceMechanism(1.0, 1.0)
    with pytest.raises(ParameterError, match="`confidence`"):
        audit(mech, 0.0, 1.0, 10, threshold_events([0.0]), confidence=1.5)
    with pytest.raises(ParameterError, match="`n`"):
        audit(mech, 0.0, 1.0, 0, threshold_events([0.0]))
    with pytest.raises(ParameterError, match="`events`"):
        audit(mech, 0.0, 1.0, 10, {})
