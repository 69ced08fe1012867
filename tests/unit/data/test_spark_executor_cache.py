"""Spark executors never trust the disk cache of certificates (docs/mechanism.md, "Spark executors
do not read the disk cache"): the noise function turns it off before building any mechanism, so
an entry planted in a folder the executor's user owns is not even opened. Runs the function the
executors run, without a Spark session."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest

from snapdp import _certcache, rescaling
from snapdp.data.engines.spark.executor import executor_noise as _executor_noise


def test_executor_noise_reads_and_writes_no_disk_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SNAPDP_CACHE_DIR", str(tmp_path))
    opened: list[Path] = []
    monkeypatch.setattr(_certcache, "_read", lambda path, args: opened.append(path))
    monkeypatch.setattr(_certcache, "_shipped", lambda: {})  # force the cache's turn
    rescaling._rescaling.cache_clear()
    # ε = 3/7 is not a shipped parameter set: the certificate must come from somewhere.
    specs = [("n", ("_rows",), (Fraction(3, 7), Fraction(1), Fraction(0), Fraction(1 << 20)))]
    batch = pd.DataFrame({"_cell": [0, 1], "_rows": [5, 9]})
    try:
        (out,) = list(_executor_noise(specs)(iter([batch])))
    finally:
        rescaling._rescaling.cache_clear()
    assert list(out.columns) == ["_cell", "n"]
    assert opened == []
    assert list(tmp_path.iterdir()) == []
