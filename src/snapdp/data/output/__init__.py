"""What a release hands back: results, their post-processing, the writers and the data report
(docs/architecture.md, "Layers")."""
