"""docs/verification.md: its Python example runs, and its transcript's numbers are the library's."""

from __future__ import annotations

import re
from pathlib import Path

from snapdp import SnappingMechanism
from snapdp.verify import privacy_loss

DOC = Path(__file__).resolve().parents[3] / "docs" / "verification.md"


def test_python_example_runs() -> None:
    (block,) = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    namespace: dict[str, object] = {}
    exec(compile(block, str(DOC), "exec"), namespace)
    assert namespace["dist"].total() == 1  # type: ignore[attr-defined]


def test_transcript_numbers_are_current() -> None:
    text = DOC.read_text(encoding="utf-8")
    stated = re.search(r"ε achieved \(exact loss\)\s+│ ([0-9.]+)", text)
    assert stated is not None
    loss = privacy_loss(SnappingMechanism(1.0, 1.0, -8.0, 8.0), 0.0, 1.0)
    assert f"{loss.loss:.30f}" == stated.group(1)
