"""Regenerate src/snapdp/certificates.json: the rescaling's certificates for common parameters.

    PYTHONPATH=src python3 tools/make_certificates.py

Certificates are pure functions of public parameters and of the certifying code
(docs/mechanism.md, "Certificates on disk"); shipping the common ones saves a first release
0.2–1 s per parameter set. Run it again after any change to the modules that
``snapdp._certcache.CODE_VERSION`` hashes: entries of another code version are ignored (and
recomputed at run time), never trusted. The set: counts (Δ = 1, 2) and sums in quanta
(Δ = 10⁶, what a mean or sum of a declared column uses) with the library's default bounds
[0, 2⁴⁰] (times Δ for sums), at the ε people type and the equal splits of 1 over 2–5 queries.
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
OUT = Path(__file__).resolve().parent.parent / "src" / "snapdp" / "certificates.json"


def main() -> None:
    os.environ["SNAPDP_CACHE_DIR"] = tempfile.mkdtemp(prefix="snapdp-certs-")
    from snapdp import _certcache
    from snapdp.rescaling import rescaling_for

    entries = []
    for eps in sorted(set(EPSILONS)):
        for sens, lo, hi in SETTINGS:
            r = rescaling_for(eps, sens, lo, hi)
            if r.certificate is None:
                continue
            c = r.certificate
            args = [str(x) for x in (c.epsilon, c.sensitivity, c.lower, c.upper)]
            args += [str(c.mechanism_sensitivity), str(c.mechanism_epsilon)]
            entries.append(_certcache.entry(args, c))
            print(f"ε = {eps}, Δ = {sens}: certified = {c.certified}")
    OUT.write_text(json.dumps({"entries": entries}, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{len(entries)} certificates → {OUT}")


if __name__ == "__main__":
    main()
