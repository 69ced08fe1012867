"""Differentially private releases over tables: statistics, privacy units, engines, the budget
ledger (DESIGN §8). See ``docs/data.md``."""

from __future__ import annotations

from snapdp.data.ledger import DatasetBudget, Ledger, LedgerEntry, LedgerReport, read_ledger
from snapdp.data.release import AccuracyPreview, PrivateTable, StatisticResult
from snapdp.data.spec import Count, Mean, Sum, parse_bound_spec, parse_keys_spec

__all__ = [
    "AccuracyPreview",
    "Count",
    "DatasetBudget",
    "Ledger",
    "LedgerEntry",
    "LedgerReport",
    "Mean",
    "PrivateTable",
    "StatisticResult",
    "Sum",
    "parse_bound_spec",
    "parse_keys_spec",
    "read_ledger",
]
