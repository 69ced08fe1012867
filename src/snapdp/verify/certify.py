"""Certificates: the exact privacy loss over a grid of parameters, ready to print (DESIGN §6).

A certificate for (ε, Δ, lower, upper, x, x′) states the exact loss of the implementation between
x and x′, the mass δ of outputs reachable from one input only, the hockey-stick δ(ε), the
library's own analytic bound on δ, and whether the claim holds. The library claims (ε, δ)-DP with
δ = ``parameters.delta``; the certificate *passes* when the exact hockey-stick δ(ε) of the pair
(the smallest δ for which the pair satisfies (ε, δ)-DP at the claimed ε) is at most that δ. When
the library's δ is 0 this means the exact loss is <= ε on every output (pure ε-DP, proven).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

from msgspec import Struct

from snapdp import _exact
from snapdp._exact import mpfr, mpq
from snapdp._validation import check_value
from snapdp.errors import ParameterError
from snapdp.mechanism import SnappingMechanism
from snapdp.verify.loss import PrivacyLoss, privacy_loss

__all__ = ["DEFAULT_GRID", "Certificate", "GridPoint", "certify", "default_grid", "format_small"]


class GridPoint(Struct, frozen=True):
    """One set of parameters and one pair of inputs to certify."""

    epsilon: float
    lower: float
    upper: float
    value: float
    neighbour: float
    sensitivity: float = 1.0
    rescale: bool = True  # the mechanism as it runs by default (docs/mechanism.md)


def default_grid() -> Iterator[GridPoint]:
    """ε in {0.1, 0.5, 1, 2} × bounds ±10 and [0, 100] × four neighbouring pairs each.

    The pairs: both ends (the clamp boundaries), the centre, and a pair differing by 2**-60 (the
    precision attack's input).
    """
    for epsilon in (0.1, 0.5, 1.0, 2.0):
        for lower, upper in ((-10.0, 10.0), (0.0, 100.0)):
            centre = (lower + upper) / 2
            pairs = (
                (lower, lower + 1),
                (centre, centre + 1),
                (upper, upper - 1),
                (0.0, 2.0**-60),
            )
            for value, neighbour in pairs:
                yield GridPoint(epsilon, lower, upper, value, neighbour)


DEFAULT_GRID = tuple(default_grid())


class Certificate(Struct, frozen=True):
    """The exact loss of one grid point, and the verdict."""

    point: GridPoint
    loss: PrivacyLoss

    @property
    def pure(self) -> bool:
        """Every output's loss is <= ε, proven exactly (pure ε-DP for this pair)."""
        return self.loss.certified

    @property
    def passed(self) -> bool:
        """The exact hockey-stick δ(ε) is <= the library's stated δ (exactly 0 when it states 0)."""
        return bool(mpq(self.loss.hockey_stick) <= mpq(self.loss.parameters.delta))

    def as_dict(self) -> dict[str, object]:
        d = self.loss.summary()
        d["delta"] = format_small(self.loss.delta)
        d["hockey_stick_delta"] = format_small(self.loss.hockey_stick)
        d["delta_bound_library"] = format_small(self.loss.parameters.delta)
        d["pure_epsilon"] = self.pure
        d["passed"] = self.passed
        return d


def format_small(x: mpq | mpfr) -> str:
    """A non-negative number rounded *up* to 4 significant digits, never shown as 0 unless it is.

    Works below the double range (δ can be ~1e-320 or smaller).
    """
    if x == 0:
        return "0"
    up = _exact.round_up(x, 64)
    text: str = f"{up:.4e}"
    return text


def certify(point: GridPoint, progress: Callable[[int], None] | None = None) -> Certificate:
    """Compute the certificate of one grid point."""
    mechanism = SnappingMechanism(
        point.epsilon, point.sensitivity, point.lower, point.upper, rescale=point.rescale
    )
    value = check_value("value", point.value)
    neighbour = check_value("neighbour", point.neighbour)
    if not math.isinf(value) and not math.isinf(neighbour):
        gap = abs(_exact.exact_rational(value) - _exact.exact_rational(neighbour))
        if gap > _exact.exact_rational(mechanism.sensitivity):
            raise ParameterError(
                f"`neighbour` must be within `sensitivity` = {point.sensitivity!r} of `value` "
                f"for the ε claim to apply, not |{value!r} − {neighbour!r}| = {float(gap)!r} "
                "(compare a farther pair with snapdp.verify.privacy_loss)"
            )
    return Certificate(point, privacy_loss(mechanism, point.value, point.neighbour, progress))
