"""Regenerate src/snapdp/certificates.json: the rescaling's certificates for common parameters.

    PYTHONPATH=src python3 tools/make_certificates.py

Certificates are pure functions of public parameters and of the certifying code
(docs/mechanism.md, "Certificates on disk"); shipping the common ones saves a first release
0.2–4 s per parameter set. Run it again after any change to the modules that
``snapdp._certcache.CODE_VERSION`` hashes: entries of another code version are ignored (and
recomputed at run time), never trusted. The set:

* counts (Δ = 1, 2) and sums in quanta (Δ = 10⁶, what a mean or sum of a declared column uses)
  with the library's default bounds [0, 2⁴⁰] (times Δ for sums), at the ε people type and the
  equal splits of 1 over 2–5 queries;
* every certificate the example plan (docs/examples/plan.toml) plans and runs with, including
  phase two of its two-phase queries at every value of the public ε grid
  (:data:`snapdp.data.planner.two_phase.GRID`) from its cap's remainder down to 1/100 of it.

Entries already shipped for this code version are kept as they are (not recomputed).
"""

from __future__ import annotations

import json
import os
import tempfile
from fractions import Fraction
from pathlib import Path

EPSILONS = [Fraction(x) for x in ("0.01", "0.05", "0.1", "0.2", "0.25", "0.5", "1", "2", "4")]
EPSILONS += [Fraction(1, n) for n in (3, 5, 6, 8, 10, 12)]
N = 1 << 40
SETTINGS = [(1, 0, N), (2, 0, N), (10**6, 0, N * 10**6)]
ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "src" / "snapdp" / "certificates.json"
PLANS = [ROOT / "docs" / "examples" / "plan.toml"]
#: Phase two's grid is shipped down to this fraction of the cap's remainder.
GRID_REACH = Fraction(1, 100)


def main() -> None:
    folder = Path(tempfile.mkdtemp(prefix="snapdp-certs-"))
    os.environ["SNAPDP_CACHE_DIR"] = str(folder)
    from snapdp import _certcache
    from snapdp.rescaling import rescaling_for

    for eps in sorted(set(EPSILONS)):
        for sens, lo, hi in SETTINGS:
            rescaling_for(eps, sens, lo, hi)
    for plan in PLANS:
        _plan_certificates(plan)
    entries = {tuple(e["args"]): e for e in _kept(_certcache.CODE_VERSION)}
    for path in sorted((folder / "certificates").glob("*.json")):
        body = json.loads(path.read_text(encoding="utf-8"))["body"]
        if body["certificate"]["certified"]:
            entries[tuple(body["args"])] = {k: body[k] for k in ("version", "args", "certificate")}
    ordered = [entries[k] for k in sorted(entries)]
    OUT.write_text(json.dumps({"entries": ordered}, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{len(ordered)} certificates → {OUT}")


def _kept(version: str | None) -> list[dict[str, object]]:
    """The shipped entries of this code version."""
    try:
        old = json.loads(OUT.read_text(encoding="utf-8"))["entries"]
    except (OSError, ValueError, KeyError):
        return []
    return [e for e in old if e.get("version") == version]


def _plan_certificates(path: Path) -> None:
    """Certify what ``snapdp run`` of the plan file certifies, phase two over the grid."""
    from snapdp.data import Plan, statistics
    from snapdp.data.planner.two_phase import grid_values, split_noises

    plan = Plan.load(path)
    preview = plan.preview()
    for a in preview.allocations:
        compiled = statistics.compile_query(a.planned.query, plan.schema, a.epsilon)
        if a.two_phase is None:
            statistics.calibrate(compiled)
            continue
        eps1 = a.two_phase.phase1
        left = a.epsilon - eps1
        for eps2 in [*grid_values(left * GRID_REACH, left), left]:
            split_noises(compiled, eps1, eps2)
        print(f"{path.name}: {a.planned.query.label}: phase two from {left * GRID_REACH} to {left}")


if __name__ == "__main__":
    main()
