"""The Spark engine: reading (:mod:`.reading`), the plan rendered from the shared tree
(:mod:`.engine`), bounding (:mod:`.bounding`), executor noise (:mod:`.executor`); docs/data.md."""
