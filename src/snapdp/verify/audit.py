"""A black-box privacy audit: an empirical lower bound on ε (in the spirit of StatDP, DP-Sniper).

Release ``n`` times on each of two inputs x and x′ and count, for each chosen output event E, how
often it occurs. With Clopper–Pearson intervals [p_lo, p_hi] for P(E|x) and [p′_lo, p′_hi] for
P(E|x′), every ε-DP mechanism has P(E|x) <= e^ε·P(E|x′), hence, with the stated confidence,

    ε >= ln(p_lo / p′_hi)   (and symmetrically ln(p′_lo / p_hi)).

The audit reports the largest such bound over the events (a Bonferroni correction splits the
confidence over events and directions, so the whole statement holds at ``confidence``). It is a
*lower* bound: it can expose a mechanism that breaks its claim, never certify one (that is what
:func:`snapdp.verify.privacy_loss` does). Deterministic when the mechanisms use seeded generators.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt
from msgspec import Struct

from snapdp._validation import check_probability
from snapdp.errors import ParameterError

__all__ = ["AuditResult", "EventResult", "audit", "clopper_pearson", "threshold_events"]

Event = Callable[[npt.NDArray[np.float64]], npt.NDArray[np.bool_]]


@runtime_checkable
class Releaser(Protocol):
    """Anything with ``release_many(values) -> array`` (both mechanisms of snapdp)."""

    def release_many(self, values: object) -> npt.NDArray[np.float64]: ...


def clopper_pearson(successes: int, trials: int, confidence: float) -> tuple[float, float]:
    """The two-sided Clopper–Pearson interval for a binomial proportion (scipy.stats.beta)."""
    from scipy.stats import beta

    if trials <= 0 or not 0 <= successes <= trials:
        raise ParameterError(
            f"`successes` and `trials` must satisfy 0 <= successes <= trials, trials > 0, "
            f"not {successes}/{trials}"
        )
    a = 1 - confidence
    low = 0.0 if successes == 0 else float(beta.ppf(a / 2, successes, trials - successes + 1))
    high = (
        1.0
        if successes == trials
        else float(beta.ppf(1 - a / 2, successes + 1, trials - successes))
    )
    return low, high


def threshold_events(thresholds: npt.ArrayLike) -> dict[str, Event]:
    """Events "output >= t" for each t (the events StatDP starts with for additive noise)."""
    events: dict[str, Event] = {}
    for t in np.asarray(thresholds, dtype=np.float64).reshape(-1):
        events[f"output >= {float(t):g}"] = _AtLeast(float(t))
    return events


class _AtLeast:
    """The event "output >= threshold"."""

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold

    def __call__(self, outputs: npt.NDArray[np.float64]) -> npt.NDArray[np.bool_]:
        return np.asarray(outputs >= self.threshold)


class EventResult(Struct, frozen=True):
    """Counts and the ε lower bound for one event."""

    name: str
    count: int
    count_neighbour: int
    epsilon_lower_bound: float


class AuditResult(Struct, frozen=True):
    """The audit: the largest ε lower bound over the events, with the per-event details."""

    samples: int
    confidence: float
    events: list[EventResult]

    @property
    def epsilon_lower_bound(self) -> float:
        return max((e.epsilon_lower_bound for e in self.events), default=0.0)

    @property
    def worst_event(self) -> str | None:
        if not self.events:
            return None
        return max(self.events, key=lambda e: e.epsilon_lower_bound).name


def _log_ratio(low: float, high: float) -> float:
    if low <= 0:
        return 0.0
    return max(0.0, math.log(low / high))


def audit(
    mechanism: Releaser | Callable[[], Releaser],
    value: float,
    neighbour: float,
    n: int,
    events: Mapping[str, Event],
    confidence: float = 0.999,
) -> AuditResult:
    """Empirical lower bound on the ε of ``mechanism`` between ``value`` and ``neighbour``.

    ``mechanism`` is a mechanism, or a factory called once per input (e.g. to give each input its
    own seeded generator). ``events`` maps names to vectorised predicates on the outputs.
    """
    confidence = check_probability("confidence", confidence)
    if not isinstance(n, int) or n <= 0:
        raise ParameterError(f"`n` must be a positive int, not {n!r}")
    if not events:
        raise ParameterError("`events` must name at least one output event")

    def draw(x: float) -> npt.NDArray[np.float64]:
        mech = mechanism if isinstance(mechanism, Releaser) else mechanism()
        return np.asarray(mech.release_many(np.full(n, float(x))), dtype=np.float64)

    first, second = draw(value), draw(neighbour)
    per_test = 1 - (1 - confidence) / (2 * len(events))  # Bonferroni over events and directions
    results = []
    for name, event in events.items():
        c1, c2 = int(np.count_nonzero(event(first))), int(np.count_nonzero(event(second)))
        lo1, hi1 = clopper_pearson(c1, n, per_test)
        lo2, hi2 = clopper_pearson(c2, n, per_test)
        bound = max(_log_ratio(lo1, hi2), _log_ratio(lo2, hi1))
        results.append(EventResult(name, c1, c2, bound))
    return AuditResult(n, confidence, results)
