"""Front ends: each turns what a user writes (SQL text, TOML, CLI flags, the page's JSON) into one
:class:`~snapdp.data.model.workload.Workload` and nothing else (docs/sql.md, "One workload")."""
