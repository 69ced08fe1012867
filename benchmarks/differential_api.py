"""Differential testing of the page's API, long version: N random cases of D against D'.

The long run of ``tests/unit/ui/test_differential_api.py`` (docs/ui.md, "What the page sends"):
each case draws a seed (D: 60 random rows of ``tests/differential.py``), an awkward kind of
``tests/awkward_rows.py`` (cycled, plus "remove": D' is D less one row) and a source (CSV with a
header, without one, Parquet), starts one server per side (its own ledger, with the owner's
budget given at start, and output folder), and compares what ``/api/header``,
``/api/preview`` and ``/api/run`` (noise seeded) answer, the run's noisy values masked. Prints
each case that differs, with the first difference, and a summary; exits 1 if any differs.

    PYTHONPATH=src python3 benchmarks/differential_api.py --examples 200 [--seed 1]
        [--kind "invalid utf-8 key"] [--source csv]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
from tests.differential import SOURCES, _first_difference
from tests.unit.ui import test_differential_api as api_cases
from tests.unit.ui._helpers import Client

from snapdp.data import api as plan_module
from snapdp.ui.server import UiConfig, UiServer

KINDS = [*sorted(api_cases.AWKWARD), "remove"]


@contextmanager
def servers() -> Iterator[Callable[..., Client]]:
    """``start(**UiConfig fields)`` → a client of a running server; all stopped at the end."""
    running: list[tuple[UiServer, threading.Thread]] = []

    def start(**config: Any) -> Client:
        server = UiServer(UiConfig(**config))
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        running.append((server, thread))
        return Client(server)

    try:
        yield start
    finally:
        for server, thread in running:
            server.shutdown()
            thread.join(timeout=10)


@contextmanager
def seeded_runs(seed: int) -> Iterator[None]:
    """The page's run with seeded noise (it draws fresh randomness otherwise)."""
    real = plan_module.Plan.run

    def run(self: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("rng", np.random.default_rng(seed))
        return real(self, **kwargs)

    plan_module.Plan.run = run  # type: ignore[method-assign]
    try:
        yield
    finally:
        plan_module.Plan.run = real  # type: ignore[method-assign]


def run_case(kind: str, source_name: str, seed: int) -> str | None:
    """The first difference between D's and D''s answers, or None when they match."""
    source = SOURCES[source_name]
    rows, extra = api_cases._neighbours(kind, seed)
    if extra is None:
        drop = random.Random(seed).randrange(len(rows))
        sides = {"d": (rows, None), "d2": ([*rows[:drop], *rows[drop + 1 :]], None)}
    else:
        sides = {"d": (rows, None), "d2": (rows, extra)}
    answers = {}
    with tempfile.TemporaryDirectory(prefix="snapdp-diff-api-") as tmp, servers() as start:
        shared = Path(tmp) / "source"  # one path for D and D' (the digest names the source)
        shared.mkdir()
        for name, (side_rows, side_extra) in sides.items():
            folder = Path(tmp) / name
            folder.mkdir()
            data = source.write(side_rows, side_extra, shared)
            with seeded_runs(seed):
                answers[name] = api_cases._answers(start, folder, source, data, seed)
    d, d2 = answers["d"], answers["d2"]
    for call in ("header", "preview", "run"):
        if d[call][0] != 200:
            return f"{call}: status {d[call][0]} on D"
        if d[call] != d2[call]:
            return str(_first_difference(d[call], d2[call], call))
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--kind", action="append", help="only these awkward kinds")
    parser.add_argument("--source", action="append", help="only these sources")
    args = parser.parse_args(argv)
    kinds = args.kind or KINDS
    sources = args.source or list(api_cases.ROTATION)
    unknown = (set(kinds) - set(KINDS)) | (set(sources) - set(api_cases.ROTATION))
    if unknown:
        parser.error(f"unknown kinds or sources {sorted(unknown)}")
    rng = random.Random(args.seed)
    failed = 0
    start = time.perf_counter()
    for i in range(args.examples):
        kind = kinds[i % len(kinds)]
        source_name = rng.choice(sources)
        seed = rng.randrange(1 << 30)
        found = run_case(kind, source_name, seed)
        if found is not None:
            failed += 1
            print(f"DIFFERS: kind={kind!r} source={source_name!r} seed={seed}: {found}")
    took = time.perf_counter() - start
    print(f"{args.examples} cases, {failed} differ ({took:.0f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
