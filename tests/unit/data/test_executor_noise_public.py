"""Where the noise is drawn is decided from public facts only (docs/data.md, "Keys nobody
declared"): a plan whose keys came from the data has as many cells as the data hold distinct
keys, so an engine that switches to executor noise at a number of cells would show that number
(found by the review of 2026-11-27: 9,999 vs 10,000 keys changed the Spark jobs and the error
type). Such a plan never draws on the executors; a declared plan still does when it wants to."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from snapdp.data.engines.base import AggregatePlan, ExecutorNoiseEngine, NoiseRequest
from snapdp.data.model.schema import Column
from snapdp.data.release.core import _executor_noise


class _WantsAlways:
    """An engine that would draw every plan's noise itself, whatever its size."""

    def column_names(self) -> list[str]:
        return ["city", "year"]

    def describe(self) -> str:
        return "a stand-in engine"

    def aggregate(self, plan: AggregatePlan) -> Any:
        raise AssertionError("not read")

    def wants_executor_noise(self, n_cells: int) -> bool:
        return n_cells >= 1

    def noisy_aggregate(
        self, plan: AggregatePlan, requests: Sequence[NoiseRequest]
    ) -> dict[str, npt.NDArray[np.float64]]:
        raise AssertionError("not drawn")


def _plans() -> tuple[AggregatePlan, AggregatePlan, AggregatePlan]:
    city = Column("city", "text", keys=("Lyon", "Oslo", "Rome"))
    year = Column("year", "integer", keys=(2020, 2021))
    declared = AggregatePlan(groupings=(city,))
    by_value = AggregatePlan(groupings=(city,), by_value=("city",))
    joint = AggregatePlan(groupings=(city, year), joint=(("Lyon", 2020), ("Rome", 2021)))
    return declared, by_value, joint


def test_keys_from_the_data_never_switch_to_executor_noise() -> None:
    engine = _WantsAlways()
    assert isinstance(engine, ExecutorNoiseEngine)
    declared, by_value, joint = _plans()
    assert _executor_noise(engine, None, declared, [])  # type: ignore[arg-type]
    assert not _executor_noise(engine, None, by_value, [])  # type: ignore[arg-type]
    assert not _executor_noise(engine, None, joint, [])  # type: ignore[arg-type]
