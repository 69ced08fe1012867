"""Legacy names kept only for the legacy engines (``data/engine.py``), removed with them.

The statistics are now :class:`snapdp.data.query.Query` objects over a declared
:class:`snapdp.data.schema.Schema`; see CHANGELOG.md for the old → new mapping.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["NULL_POLICIES", "NullPolicy"]

NullPolicy = Literal["error", "drop", "lower", "upper"]
NULL_POLICIES: tuple[str, ...] = ("error", "drop", "lower", "upper")
