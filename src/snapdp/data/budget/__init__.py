"""The privacy budget: the ledger file and its spends (docs/architecture.md, "Layers")."""
