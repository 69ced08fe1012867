"""Engines: exact aggregates of a declared table, in DuckDB (in process) or Spark (a cluster).

The contract is :mod:`snapdp.data.engines.base`; see docs/data.md.
"""
