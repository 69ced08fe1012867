"""The declaration and the one workload IR: schema, row filter, query, workload, their JSON form
and the user-facing names of every parameter (docs/architecture.md, "Layers").

The lowest layer of :mod:`snapdp.data`: nothing here imports anything else of it."""
