"""Differentially private releases over declared tables: the declaration, queries, statistics,
engines, the budget ledger (DESIGN §8). See ``docs/data.md``.

This package's namespace is the API layer above the front ends (docs/architecture.md, "Layers"):
``Plan`` (with ``Plan.load``) and ``PrivateTable`` (with ``PrivateTable.sql``) come from
:mod:`snapdp.data.api`."""

from __future__ import annotations

from snapdp.data.api import Plan, PrivateTable, load_plan
from snapdp.data.budget.ledger import DatasetBudget, Ledger, LedgerEntry, LedgerReport, read_ledger
from snapdp.data.model.query import Query
from snapdp.data.model.schema import Column, ContributionBounds, CsvOptions, NullRule, Schema
from snapdp.data.model.workload import Declaration, PlannedQuery, Workload
from snapdp.data.output.results import QueryResult, ResultRow
from snapdp.data.statistics import AccuracyStatement

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
    "Plan",
    "PlannedQuery",
    "PrivateTable",
    "Query",
    "QueryResult",
    "ResultRow",
    "Schema",
    "Workload",
    "load_plan",
    "read_ledger",
]
