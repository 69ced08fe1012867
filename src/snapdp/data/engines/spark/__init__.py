"""The Spark engine: reading (:mod:`.reading`), the plan rendered from the shared tree
(:mod:`.engine`, one ``spark.sql`` per plan), executor noise (:mod:`.executor`); docs/data.md."""
