"""The planner (docs/plans.md): a workload's ε and ± before anything is spent — the plan
(:mod:`.plan`), the ε search (:mod:`.epsilons`, :mod:`.search`), the preview it returns
(:mod:`.preview`), two-phase targets (:mod:`.two_phase`) and a consistent release's ±
(:mod:`.consistent_accuracy`). It reads no data and spends nothing; the release
(:mod:`snapdp.data.release`) sits above it."""
