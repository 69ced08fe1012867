"""The walk of one plan run through the code (docs/architecture.md, "The walk").

Runs ``snapdp run PLAN`` in-process on a small generated table and plan (a count by sex, a
mean, a sample variance; the results written as files) twice — the first run fills the
per-process caches (the mechanisms' certificates), the second is traced under
``sys.setprofile`` — and follows the innermost snapdp module on the stack after every call and
return of a snapdp function. The *data-level* walk counts only the modules of the data flow
(the layers from cli/page down to the declaration); time spent in the mechanism's machinery
below them stays in the data module that called it.

* a *stay* is a maximal run of events in one module; the *walk* is the sequence of stays;
* a *room* is a distinct module of the walk;
* a *climb* is a call from a module into a module of a higher layer (the layer map of
  tests/unit/test_layers.py), which only an import that climbs back up makes possible;
  a return to the caller is not a climb.

Also printed: the distinct module-to-module call edges, and the walk once repeats of the same
pair of rooms are folded (a loop over cells or queries is one back-and-forth).

    PYTHONPATH=src python3 benchmarks/walk.py [--show]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.unit.test_layers import LAYERS, layer_of  # noqa: E402

PLAN = """[data]
source = "t.csv"
total_epsilon = 10

[columns]
sex = {{ type = "integer", keys = [0, 1] }}
income = {{ type = "integer", lower = 0, upper = 1000 }}

[[query]]
statistic = "count"
by = ["sex"]
epsilon = 1

[[query]]
statistic = "mean"
column = "income"
epsilon = 1

[[query]]
statistic = "{spread}"
column = "income"
epsilon = 1
"""


_DATA_LEVEL = [name for name, _ in LAYERS].index("model")


def _module(frame: FrameType | None, data_level: bool = False) -> str | None:
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if isinstance(name, str) and (name == "snapdp" or name.startswith("snapdp.")):
            layer = layer_of(name)
            if not data_level or (layer is not None and layer <= _DATA_LEVEL):
                return name
        frame = frame.f_back
    return None


class Walk:
    """A walk (its stays), its call edges and its climbs."""

    def __init__(self) -> None:
        self.stays: list[str] = []
        self.edges: Counter[tuple[str, str]] = Counter()
        self.climbs: Counter[tuple[str, str]] = Counter()

    def step(self, here: str | None, caller: str | None, call: bool) -> None:
        if call and caller is not None and here is not None and caller != here:
            self.edges[(caller, here)] += 1
            a, b = layer_of(caller), layer_of(here)
            if a is not None and b is not None and b < a:
                self.climbs[(caller, here)] += 1
        if here is not None and (not self.stays or self.stays[-1] != here):
            self.stays.append(here)

    def report(self, title: str, show: bool) -> None:
        fold = folded(self.stays)
        rooms = len(set(self.stays))
        print(f"{title}: {len(self.stays):,} stays in {rooms} rooms; {len(fold):,} once folded")
        print(f"  call edges between modules: {len(self.edges)} distinct, "
              f"{sum(self.edges.values()):,} calls")  # fmt: skip
        print(f"  climbs (calls into a higher layer): {sum(self.climbs.values())} calls on "
              f"{len(self.climbs)} edges")  # fmt: skip
        for (a, b), n in sorted(self.climbs.items()):
            la, lb = layer_of(a), layer_of(b)
            assert la is not None and lb is not None
            print(f"    {a} ({LAYERS[la][0]}) -> {b} ({LAYERS[lb][0]}): {n}")
        if show:
            print("  " + " → ".join(m.removeprefix("snapdp.") for m in fold))


def trace(plan_dir: Path) -> tuple[Walk, Walk]:
    """(the full walk, the data-level walk) of the second of two runs."""
    from click.testing import CliRunner

    from snapdp.cli import main

    full, data = Walk(), Walk()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event not in ("call", "return"):
            return
        call = event == "call"
        top = frame if call else frame.f_back
        full.step(_module(top), _module(frame.f_back) if call else None, call)
        data.step(_module(top, True), _module(frame.f_back, True) if call else None, call)

    for run in (1, 2):
        args = ["run", str(plan_dir / "plan.toml"), "--ledger", str(plan_dir / f"l{run}.sqlite"),
                "--output", str(plan_dir / f"out{run}"), "--total-epsilon", "10"]  # fmt: skip
        if run == 2:
            sys.setprofile(profile)
        try:
            result = CliRunner().invoke(main, args)
        finally:
            sys.setprofile(None)
        if result.exit_code != 0:
            raise SystemExit(result.output)
    return full, data


def folded(walk: list[str]) -> list[str]:
    """The walk with every immediate repeat of a back-and-forth (a b a b → a b) folded."""
    out: list[str] = []
    for m in walk:
        out.append(m)
        while len(out) >= 4 and out[-4:-2] == out[-2:]:
            del out[-2:]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--show", action="store_true", help="print the folded walk")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "t.csv").write_text(
            "sex,income\n" + "".join(f"{i % 2},{(i * 37) % 1000}\n" for i in range(200))
        )
        (d / "plan.toml").write_text(PLAN.format(spread="variance"))
        try:  # the sample variance where this code has it
            from snapdp.data.model.query import STATISTICS

            if "var_samp" in STATISTICS:
                (d / "plan.toml").write_text(PLAN.format(spread="var_samp"))
        except ImportError:
            pass
        full, data = trace(d)
    full.report("every module", False)
    data.report("data level", args.show)


if __name__ == "__main__":
    main()
