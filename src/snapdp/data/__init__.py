"""Differentially private releases over declared tables: the declaration, queries, statistics,
engines, the budget ledger (DESIGN §8). See ``docs/data.md``."""

from __future__ import annotations

from snapdp.data.ledger import DatasetBudget, Ledger, LedgerEntry, LedgerReport, read_ledger
from snapdp.data.query import Query
from snapdp.data.release import PrivateTable
from snapdp.data.results import QueryResult, ResultRow
from snapdp.data.schema import Column, ContributionBounds, CsvOptions, NullRule, Schema
from snapdp.data.statistics import AccuracyStatement
from snapdp.data.workload import Declaration, Workload

__all__ = [
    "AccuracyStatement",
    "Column",
    "ContributionBounds",
    "CsvOptions",
    "DatasetBudget",
    "Declaration",
    "Ledger",
    "LedgerEntry",
    "LedgerReport",
    "NullRule",
    "PrivateTable",
    "Query",
    "QueryResult",
    "ResultRow",
    "Schema",
    "Workload",
    "read_ledger",
]
