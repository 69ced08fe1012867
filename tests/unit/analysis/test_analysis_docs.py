"""docs/utility.md: every figure it shows exists, and every analysis module it names exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "utility.md"


def test_figures_exist_and_are_pngs():
    text = DOC.read_text(encoding="utf-8")
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert len(images) >= 5
    for rel in images:
        path = DOC.parent / rel
        assert path.read_bytes().startswith(b"\x89PNG"), rel


def test_named_modules_exist():
    text = DOC.read_text(encoding="utf-8")
    for rel in re.findall(r"`((?:analysis|cli)/\w+\.py)`", text):
        assert (ROOT / "src" / "snapdp" / rel).is_file(), rel


def test_usefulness_examples_run():
    import doctest

    text = DOC.read_text(encoding="utf-8")
    parser = doctest.DocTestParser()
    test = parser.get_doctest(text, {}, "utility.md", str(DOC), 0)
    assert test.examples, "docs/utility.md has no >>> examples"
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.tries == len(test.examples) >= 4
    assert runner.failures == 0
