"""The DuckDB engine: sources (:mod:`.sources`), the plan as one query (:mod:`.query`) and
the engine (:mod:`.engine`); docs/data.md."""
