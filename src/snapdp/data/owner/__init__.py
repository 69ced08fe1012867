"""Tools for the data owner that read the data WITHOUT privacy: ``snapdp check``
(docs/architecture.md, "Layers")."""
